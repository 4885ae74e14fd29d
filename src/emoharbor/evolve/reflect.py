"""Phase 2, one context: the model's plain reply (rejected), its reflection on the seeker
(personality, emotional state, situation, needs, what the first reply missed; JSON), and the reply it
writes from that reflection (chosen). Pairs that cannot teach anything are dropped with a reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .. import userfiles
from ..assess.cards import JudgeCard
from ..errors import ConfigError
from ..heart.dimensions import OVERALL
from ..heart.histories import SEEKER, SUPPORTER, History, Turn
from ..heart.stages.judging import Shown, judge_pair, neutral_ids
from ..models.base import ChatModel, Message, ModelCallError
from ..models.structured import ask_json
from ..prompts import Prompt, load_prompt
from .config import RefineSettings
from .data import ChatExample
from .guard import fingerprint

FIELDS = ("personality", "emotional_state", "situation", "needs", "critique")
REFLECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {k: {"type": "string", "minLength": 2} for k in FIELDS},
    "required": list(FIELDS),
}
LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:improved|refined|new|final)?\s*(?:reply|response|supporter|answer)\s*:(?:\*\*)?\s*", re.IGNORECASE
)
WORD = re.compile(r"(?<![#@\w])[^\W\d_]+")  # a word: letters, not a hashtag or a handle
META = re.compile(  # the reflection's fields, or a reply that speaks of the replies ("here's a more concise version")
    r"\{\s*\"|\b(?:personality|emotional[_ ]state|critique)\s*:"
    r"|\b(?:your|my|the) (?:first|previous|original|earlier) (?:reply|response)\b"
    r"|\bhere(?:'s|’s| is) (?:a|an|the|my) [\w ,-]{0,40}?(?:version|reply|response)\b",
    re.IGNORECASE,
)
Events = list[tuple[str, str]]
CHOSEN, REJECTED = "chosen", "rejected"  # the pair's replies, as the judge check names them
PERSON_PROMPT = "evolve_reflect_person"  # the reflector told who a context's person is (a profile's card)


def load_principles(path: str | None) -> Prompt:
    """The principles as a bullet list; a YAML file with a ``principles`` list, or plain text."""
    if path is None:
        text = resources.files("emoharbor.evolve").joinpath("principles.yaml").read_text(encoding="utf-8")
        name, is_yaml = "principles", True
    else:
        p = Path(path)
        text, name = userfiles.read_text(p, "principles file"), f"principles:{p.name}"
        is_yaml = p.suffix.lower() in (".yaml", ".yml")
    if is_yaml:
        raw = userfiles.parse(path or name, text)
        items = raw.get("principles") if isinstance(raw, dict) else None
        if not isinstance(items, list) or not items or not all(isinstance(x, str) and x.strip() for x in items):
            raise ConfigError(f"{path}: field 'principles' must be a non-empty list of sentences")
        text = "\n".join(f"- {x.strip()}" for x in items)
    return Prompt(name, text.strip())


def transcript(messages: list[Message]) -> str:
    who = {"user": "Seeker", "assistant": "You"}
    return "\n".join(f"{who[m['role']]}: {m['content']}" for m in messages if m["role"] in who)


def reflector_view(ex: ChatExample) -> str:
    """The talk as the reflector is shown it: followed by the person's profile where the context has one (a
    context drawn from a profile: ``ChatExample.person``, ``prompts/evolve_reflect_person.txt``)."""
    talk = transcript(ex.messages)
    return load_prompt(PERSON_PROMPT).render(transcript=talk, card=ex.person).strip() if ex.person else talk


def clean_reply(text: str) -> str:
    out = LABEL.sub("", text.strip()).strip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'":
        out = out[1:-1].strip()
    return " ".join(out.split())


def copied_fields(reflection: dict[str, str], instructions: str) -> list[str]:
    """Fields whose value is text of the instructions (a small model copies the key descriptions or
    a principle instead of thinking about the person)."""
    text = fingerprint(instructions)
    return [k for k, v in reflection.items() if len(fingerprint(v)) >= 12 and fingerprint(v) in text]


STOP = frozenset(
    "a an the to of and or in on at for with your you their they them it is are be this that".split()  # noqa: SIM905
)


def _words(text: str) -> list[str]:
    return [w.lower().removesuffix("s") for w in WORD.findall(text)]


def leaked_phrase(reply: str, instructions: str, n: int = 5) -> str:
    """Text of the instructions in a reply ("" when there is none): ``n`` words in a row that the instructions
    hold, or a label before a colon most of whose words come from them ("One to Three Sentence Answer to
    Their Last Message:" for "one to three sentences ... their last message")."""
    said, known = _words(reply), _words(instructions)
    shingles = {tuple(known[i : i + n]) for i in range(len(known) - n + 1)}
    for i in range(len(said) - n + 1):
        if tuple(said[i : i + n]) in shingles:
            return " ".join(said[i : i + n])
    head, colon, _ = reply.partition(":")
    label = [w for w in _words(head) if w not in STOP]
    if colon and 3 <= len(label) <= 10 and sum(w in set(known) for w in label) >= 0.6 * len(label):
        return head.strip()
    return ""


def too_short(reply: str, s: RefineSettings) -> bool:
    """Fewer than ``min_chars`` characters or ``min_words`` words (a number, a hashtag, a label)."""
    return len(reply) < s.min_chars or len(WORD.findall(reply)) < s.min_words


def check_pair(plain: str, refined: str, s: RefineSettings) -> str | None:
    """Why a (plain, refined) pair is dropped; None when it is kept."""
    if too_short(plain, s):
        return "plain_too_short"
    if too_short(refined, s):
        return "refined_too_short"
    if fingerprint(plain) == fingerprint(refined):
        return "identical"
    if len(refined) > s.max_length_ratio * len(plain) + s.length_slack_chars:
        return "length_blowup"
    if META.search(refined):
        return "reflection_leaked"
    return None


async def refine_context(model: ChatModel, ex: ChatExample, principles: Prompt, s: RefineSettings, *, seed: int,
                         system_version: str = "", judge: PairJudge | None = None,
                         reflector: ChatModel | None = None) -> tuple[dict[str, Any], Events]:  # fmt: skip
    """One context's record: ``status`` "ok" (a pair kept), "unscored" (dropped, ``reason`` says why) or
    "error" (a model call failed for good: redone by the next run); events for the store. ``reflector``: a
    teacher that writes the reflection (None: ``model`` reflects on its own reply)."""
    rec: dict[str, Any] = {"id": ex.id, "prompt": ex.messages, "status": "unscored", "reason": "",
                           "principles": principles.version}  # fmt: skip

    def drop(reason: str, detail: str = "") -> tuple[dict[str, Any], Events]:
        rec["reason"] = reason
        if reason == "model_error":
            rec["status"] = "error"
        return rec, [(f"dropped_{reason}", detail[:200] or ex.id)]

    try:
        first = await model.chat(ex.messages, max_tokens=s.max_new_tokens, seed=seed, prompt_version=system_version)
        plain = clean_reply(first.text)
        rec["rejected"], rec["rejected_finish"] = plain, first.finish_reason
        if too_short(plain, s):
            return drop("plain_too_short")
        history = transcript(ex.messages)
        dropped = await _reflect(reflector or model, reflector_view(ex), plain, principles, s, seed=seed, rec=rec)
        if dropped:
            return drop(*dropped)
        fp = load_prompt("evolve_refine")
        msg = fp.render(transcript=history, first_reply=plain, principles=principles.text, **rec["reflection"])
        second = await model.chat([{"role": "user", "content": msg}], max_tokens=s.max_new_tokens, seed=seed,
                                   prompt_version=f"{fp.version}+{principles.version}")  # fmt: skip
    except ModelCallError as e:
        return drop("model_error", str(e))
    refined = clean_reply(second.text)
    rec["chosen"], rec["chosen_finish"] = refined, second.finish_reason
    if second.finish_reason == "length" and s.drop_truncated:
        return drop("refined_truncated")
    reason = check_pair(plain, refined, s)
    if reason:
        return drop(reason)
    leak = leaked_phrase(refined, instructions(principles))
    if leak:
        return drop("prompt_leaked", f"{ex.id}: {leak[:120]}")
    events: Events = []
    if judge is not None:
        try:
            verdict, events = await judge.verdict(ex, refined, plain, retries=s.json_retries, seed=seed)
        except ModelCallError as e:
            return drop("model_error", str(e))
        rec["judge"] = {"card": judge.card.version, "verdict": verdict or "prefers_chosen"}
        if verdict:
            rec["status"], rec["reason"] = "unscored", verdict
            return rec, [*events, (f"dropped_{verdict}", ex.id)]
    rec["status"] = "ok"
    return rec, events


async def _reflect(model: ChatModel, history: str, plain: str, principles: Prompt, s: RefineSettings, *, seed: int,
                   rec: dict[str, Any]) -> tuple[str, str] | None:  # fmt: skip
    """Ask for the reflection on the seeker, into ``rec`` (``reflection``, its attempts, or its error and raw
    reply); why the context is dropped (a reason and its detail) where it does not parse or copies the
    instructions, else None."""
    rp = load_prompt("evolve_reflect")
    ask: list[Message] = [{"role": "user", "content": rp.render(transcript=history, first_reply=plain,
                                                                 principles=principles.text)}]  # fmt: skip
    got = await ask_json(model, ask, REFLECTION_SCHEMA, retries=s.json_retries, seed=seed,
                         prompt_version=f"{rp.version}+{principles.version}",
                         max_tokens=s.reflection_max_tokens)  # fmt: skip
    rec["reflection_attempts"] = got.attempts
    if got.data is None:
        rec["reflection_error"], rec["reflection_raw"] = got.error, (got.raw[-1] if got.raw else "")[:1000]
        return "reflection_unparseable", got.error
    rec["reflection"] = {k: str(got.data[k]).strip() for k in FIELDS}
    copied = copied_fields(rec["reflection"], rp.render(transcript="", first_reply="", principles=principles.text))
    if copied:
        return "reflection_copied", f"{rec['id']}: {', '.join(copied)} copied from the instructions"
    return None


def instructions(principles: Prompt) -> str:
    """The text of the refine and reflect prompts and the principles, without the conversation: what a chosen
    reply must not repeat."""
    empty = dict.fromkeys(("transcript", "first_reply", *FIELDS), "")
    return "\n".join(
        [
            load_prompt("evolve_refine").render(principles=principles.text, **empty),
            load_prompt("evolve_reflect").render(transcript="", first_reply="", principles=principles.text),
        ]
    )


@dataclass(frozen=True)
class PairJudge:
    """The judge check of refined pairs: a pairwise judge (a HEART pairwise card on any ChatModel) sees the context
    and both replies under neutral ids, in both orders; the pair is kept only if it prefers the chosen (refined)
    reply both times. A judge that cannot be read, or that flips with the order, keeps nothing."""

    model: ChatModel
    card: JudgeCard

    async def verdict(self, ex: ChatExample, chosen: str, rejected: str, *, retries: int, seed: int) -> tuple[
            str, Events]:  # fmt: skip
        """ "" when the judge prefers ``chosen`` in both orders; else why the pair is dropped: ``judge_unscored``
        (an order it did not answer in the schema), ``judge_flipped`` (its winner changed with the order) or
        ``judge_prefers_rejected``. A model call that fails for good raises (the unit is redone)."""
        turns = [Turn(SEEKER if m["role"] == "user" else SUPPORTER, m["content"]) for m in ex.messages
                 if m["role"] in ("user", "assistant")]  # fmt: skip
        history = History(ex.id, "evolve", "refine", turns)
        id_c, id_r = neutral_ids(ex.id, CHOSEN, REJECTED)
        c, r = Shown(CHOSEN, id_c, chosen), Shown(REJECTED, id_r, rejected)
        winners: list[str] = []
        events: Events = []
        for order, (first, second) in (("ab", (c, r)), ("ba", (r, c))):
            rec, evs = await judge_pair(self.model, self.card.name, history, first, second, a=CHOSEN, order=order,
                                        dimensions=[], retries=retries, seed=seed, show_situation=False,
                                        card=self.card)  # fmt: skip
            events += evs
            if rec["status"] != "ok":
                if rec["status"] == "error":
                    raise ModelCallError(rec["error"])  # the unit ends in error and is redone by the next run
                return "judge_unscored", events
            winners.append(rec["verdicts"][OVERALL]["winner"])
        if winners == [CHOSEN, CHOSEN]:
            return "", events
        return ("judge_flipped" if len(set(winners)) > 1 else "judge_prefers_rejected"), events
