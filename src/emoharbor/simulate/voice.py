"""The seeker's own chat, where a simulated user writes its messages: its voice prompt as the system message
(the persona and how people write in such a chat), the supporter's messages as the other side's turns and its
own earlier messages as its turns, so a chat model writes the next message as itself, in free text (a message
written as JSON inside a transcript about the person read like a report on it: thanks, relief and the
supporter's own phrases). The chain's Expresser adds one private note after the supporter's last message (how
it feels, what it may tell: its words are the prompt file ``NOTE_WORDS``); the simple user writes with none.

The profile sets the length (``words_target``: its verbosity) and the call's ``max_tokens`` follows from it
(``message_tokens``); a message cut by the limit loses its unfinished sentence (``trim``).
"""

from __future__ import annotations

import re
from functools import cache

from ..models.base import ChatModel, Message
from ..profiles.schema import Profile
from ..prompts import Prompt, load_prompt
from .conversation import Turn
from .text_checks import character_slip, clean_message, repeats

WORDS = {"terse": 8, "moderate": 15, "expansive": 30}  # about real ESConv seekers' median of 16 words a message
OTHER_SIDE = re.compile(r"\n\s*(?:\*\*)?(?:supporter|listener|helper|therapist|assistant|you|them|user|me)\s*:",
                        re.IGNORECASE)  # fmt: skip
SENTENCE_END = re.compile(r"[.!?…)](?=\s|$)")


NUDGES = ("user_nudge_repeat", "user_nudge_voice", "user_nudge_narrates")  # the re-ask's prompts
NOTE_WORDS = "user_voice_words"  # the note's words: how the reply landed, how the person feels and trusts
FRAMES = "user_voice_frames"  # how the chat shows a supporter's message, by ``framing`` (``chat``: as it is)


def words_target(profile: Profile) -> int:
    return WORDS[profile.communication_style.verbosity]


def message_tokens(profile: Profile, setting: int) -> int:
    """The ``max_tokens`` of a message call: ``setting``, or (0) room for about twice the words target."""
    return setting or int(words_target(profile) * 2.5) + 12


def system(prompt: Prompt, profile: Profile, ending: str = "") -> Message:
    text = prompt.render(persona=profile.persona_card(), words=words_target(profile), ending=ending).strip()
    return {"role": "system", "content": text}


def recent(turns: list[Turn], window: int) -> list[Turn]:
    """The talk from the ``window``-th last supporter turn on (0: all of it): what a seeker's chat shows."""
    if window <= 0:
        return turns
    starts = [i for i, t in enumerate(turns) if t.speaker == "supporter"]
    return turns[starts[-window] :] if len(starts) > window else turns


def shown(turn: Turn, framing: str) -> Message:
    """A turn as the seeker's chat shows it: its own as ``assistant``; the supporter's as ``user``, its words as
    they are (``chat``) or in the frame ``framing`` names (``quoted``: marked as the listener's words)."""
    if turn.speaker == "user":
        return {"role": "assistant", "content": turn.text}
    text = turn.text if framing == "chat" else load_prompt(FRAMES).entries()[framing].render(text=turn.text)
    return {"role": "user", "content": text}


def chat(head: Message, turns: list[Turn], note: str | None = None, window: int = 0,
         framing: str = "chat") -> list[Message]:  # fmt: skip
    """The seeker's chat: its system message, the turns from its side (``shown``: the last ``window`` supporter
    turns and the seeker's messages between them, or all with 0), and the private ``note`` (when there is one)
    just before the supporter's last message, so that the message the model answers is the supporter's (a note
    after it made the 1.5B model answer the note: the supporter's phrases, thanks and relief)."""
    msgs = [shown(t, framing) for t in recent(turns, window)]
    at = len(msgs) - 1 if msgs and msgs[-1]["role"] == "user" else len(msgs)
    if note:
        msgs.insert(at, {"role": "system", "content": note.strip()})
    return [head, *msgs]


def trim(text: str, cut: bool) -> str:
    """A written message as sent: the label and quotes gone, anything after the model starts writing another
    speaker's line cut, and (``cut``: it ran into ``max_tokens``) its unfinished last sentence dropped."""
    t = OTHER_SIDE.split(clean_message(text), maxsplit=1)[0].strip()
    if cut:
        ends = [m.end() for m in SENTENCE_END.finditer(t)]
        if ends:
            t = t[: ends[-1]]
    return " ".join(t.split())


@cache
def note_words() -> dict[str, Prompt]:
    """The note's words by key, read once (``load_prompt`` caches the file, this its parsed entries)."""
    return load_prompt(NOTE_WORDS).entries()


def on_scale(scale: str, value: int) -> str:
    """The words of ``value`` on ``scale`` (``feeling``, ``trust``): its first ``under N`` words whose bound is
    above the value, else its words ``otherwise``."""
    said = note_words()
    for key, text in said.items():
        name, _, bound = key.partition(" under ")
        if name == scale and bound and value < int(bound):
            return text.render()
    return said[f"{scale} otherwise"].render()


def landed(fit: str | None) -> str:
    """How the supporter's last message landed (the Appraiser's fit), as the note tells it: a fit invites the
    person to go on, a miss to say so or hold back (the Feeler's thought is not shown: a small model turns it
    into thanks and relief whatever the supporter said)."""
    said = note_words().get(f"fit {fit}")
    return said.render() if said else ""


def feeling(intensity: int, emotion: str) -> str:
    level = on_scale("feeling", intensity)
    if not emotion or emotion == "unspecified":
        return level
    return note_words()["feeling and emotion"].render(level=level, emotion=emotion)


def trusting(trust: int) -> str:
    return on_scale("trust", trust)


async def write(model: ChatModel, msgs: list[Message], *, seed: int, version: str, max_tokens: int) -> str:
    r = await model.chat(msgs, seed=seed, prompt_version=version, max_tokens=max_tokens)
    return trim(r.text, r.finish_reason == "length")


def flaw(text: str, earlier: list[str]) -> tuple[str, str] | None:
    """(the event, the nudge) for a message that repeats one of the ``earlier`` or slips out of the seeker's
    voice; None for one that does neither."""
    slip = character_slip(text)
    if text and repeats(text, earlier):
        return "user_repetition_retried", load_prompt("user_nudge_repeat").render()
    if slip is not None:
        return "user_broke_character_retried", load_prompt(f"user_nudge_{slip}").render()
    return None


async def checked(model: ChatModel, msgs: list[Message], *, seed: int, version: str, max_tokens: int,
                  earlier: list[str], events: list[tuple[str, str]], reasks: int = 1) -> str:  # fmt: skip
    """A message ("" when the model wrote none), asked for again (up to ``reasks`` times) while it repeats one
    of the ``earlier`` messages, speaks as the supporter ("glad you're feeling better", "let me know if you need
    anything") or reports on "the supporter": a short nudge after the chat (which does not quote the slip: a
    small model copies what it is shown), each event in ``events`` keeping both texts. A new answer replaces the
    last unless it is empty; the one kept is marked by the message's own checks if it is no better. Measured on
    60 ESConv cuts with one re-ask (docs/realism.md): the first answer slipped at 10, the kept one at 1."""
    text = await write(model, msgs, seed=seed, version=version, max_tokens=max_tokens)
    for n in range(1, reasks + 1):
        found = flaw(text, earlier)
        if found is None:
            break
        event, nudge = found
        asked = [*msgs, {"role": "system", "content": nudge.strip()}]
        again = await write(model, asked, seed=seed + 100 * n, version=version, max_tokens=max_tokens)
        events.append((event, f"{text[:240]} => {again[:240] or '(empty: the first stands)'}"))
        text = again or text
    return text
