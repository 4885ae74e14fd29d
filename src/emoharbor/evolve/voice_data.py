"""Training examples of the simulated user's voice (``sft.role: user``): each ESConv seeker message that answers
a supporter's, given the talk so far as the seeker's own chat shows it when it writes (``simulate.voice``: the
voice prompt with the persona of the record's draft profile as the system message, the supporter's messages as
the other side's turns, the seeker's own as its turns). A model trained on them writes the user's messages in
place of the user's model (``user_agent.voice_model``); the private note of the Expresser, which no real seeker
had, is not in them.
"""

from __future__ import annotations

from ..data.esconv import EsconvDialog
from ..profiles.esconv_import import draft_profile
from ..prompts import load_prompt
from ..simulate import voice
from ..simulate.conversation import Turn
from .data import ChatExample, esconv_examples
from .guard import EvalGuard


def dialog_messages(d: EsconvDialog) -> list[ChatExample]:
    """One example per seeker message that follows a supporter's."""
    head = voice.system(load_prompt("user_voice"), draft_profile(d))
    turns = [Turn(speaker="user" if t.speaker == "seeker" else "supporter", text=t.text) for t in d.merged_turns()]
    out: list[ChatExample] = []
    for i, t in enumerate(turns):
        if t.speaker == "user" and i and turns[i - 1].speaker == "supporter":
            out.append(ChatExample(f"{d.id}#{i}", voice.chat(head, turns[:i]), t.text))
    return out


def seeker_examples(paths: list[str], guard: EvalGuard | None = None) -> tuple[list[ChatExample], int]:
    """All seeker examples of the files, and how many dialogues the guard kept out."""
    return esconv_examples(paths, "", guard, examples=dialog_messages)
