"""Pairwise judging: a judge sees the history and two blinded replies under neutral ids and, for every
dimension and overall, names a winner (no ties) with a strength 1-5 and a rationale. A form that chooses
(``PairForm.chooses``: the seeker's choice) names only the reply it prefers overall, by its place (1 or 2),
and with ``scoring: expected`` the probability it gave the first is kept (``p_first``).

Each reply keeps its id in both orders, so a preference for a position is not a preference for an id.
A reply that does not name one of the two ids (after the retries) is unscored: counted, never a number.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ...assess.cards import JudgeCard
from ...assess.judge_forms import Pair, PairForm, card_form
from ...models.base import ChatModel, Message, ModelCallError
from ...models.expected import expected_scores
from ...models.structured import Structured, ask_json
from ...simulate.conversation import words
from ..dimensions import OVERALL, describe
from ..histories import History
from .candidates import Events, context_line, transcript

ID_POOL = ("K", "M", "P", "R", "T", "V", "X", "Z")
STRENGTHS = [1, 2, 3, 4, 5]


@dataclass(frozen=True)
class Shown:
    """One reply as the judge sees it."""

    name: str  # the competitor (never shown)
    id: str  # the neutral id
    text: str


def neutral_ids(history_id: str, a: str, b: str) -> tuple[str, str]:
    """Two distinct ids for the replies of ``a`` and ``b`` on this history, the same in both orders."""
    h = hashlib.sha256(f"{history_id}|{a}|{b}".encode()).digest()
    i = h[0] % len(ID_POOL)
    j = (i + 1 + h[1] % (len(ID_POOL) - 1)) % len(ID_POOL)
    return ID_POOL[i], ID_POOL[j]


def verdict_keys(dimensions: list[str]) -> list[str]:
    return [*dimensions, OVERALL]


def judge_schema(dimensions: list[str], ids: tuple[str, str]) -> dict[str, Any]:
    verdict = {
        "type": "object",
        "properties": {
            "rationale": {"type": "string"},
            "winner": {"type": "string", "enum": list(ids)},
            "strength": {"type": "integer", "enum": STRENGTHS},
        },
        "required": ["rationale", "winner", "strength"],
    }
    keys = verdict_keys(dimensions)
    return {"type": "object", "properties": {k: verdict for k in keys}, "required": keys}


CHOICES = [1, 2]  # a form that chooses (``PairForm.chooses``): 1 the reply shown first, 2 the second


def choice_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {OVERALL: {"type": "integer", "enum": CHOICES}}, "required": [OVERALL]}


def judge_messages(
    history: History, first: Shown, second: Shown, dimensions: list[str], show_situation: bool, card: JudgeCard
) -> tuple[list[Message], str]:
    """The messages of ``card``'s form (one that compares a pair) about the two replies on ``history``."""
    form = card_form(card, PairForm)
    pair = Pair(context=context_line(history, show_situation), transcript=transcript(history),
                first=(first.id, first.text), second=(second.id, second.text), dimensions=describe(dimensions),
                keys=[OVERALL] if form.chooses else verdict_keys(dimensions), situation=history.situation,
                emotion=history.emotion_type)  # fmt: skip
    return form.messages(card, pair)


def read_choice(data: dict[str, Any], first: Shown, second: Shown) -> dict[str, dict[str, Any]]:
    """A choice as a verdict on overall: the reply it named wins (a choice has no strength: 1; no rationale)."""
    winner = first.name if data[OVERALL] == CHOICES[0] else second.name
    return {OVERALL: {"winner": winner, "strength": 1, "rationale": ""}}


def read_verdicts(data: dict[str, Any], keys: list[str], by_id: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Map the judge's ids back to competitor names (the schema has already been checked)."""
    return {
        k: {
            "winner": by_id[data[k]["winner"]],
            "strength": int(data[k]["strength"]),
            "rationale": str(data[k]["rationale"]).strip(),
        }
        for k in keys
    }


async def judge_pair(
    model: ChatModel,
    judge: str,
    history: History,
    first: Shown,
    second: Shown,
    *,
    a: str,
    order: str,
    dimensions: list[str],
    retries: int,
    seed: int,
    show_situation: bool,
    card: JudgeCard,
) -> tuple[dict[str, Any], Events]:
    """One judgement of ``first`` against ``second``; ``a`` is the pair's first competitor, ``order``
    "ab" when it is shown first, "ba" otherwise. With a card set to ``scoring: expected`` each verdict
    also gets ``strength_expected``, the probability-weighted strength (None where it cannot be read)."""
    rec: dict[str, Any] = {"history_id": history.id, "subset": history.subset, "a": a,
                           "b": second.name if first.name == a else first.name, "judge": judge, "order": order,
                           "first": first.name, "ids": {first.name: first.id, second.name: second.id},
                           "words": {first.name: words(first.text), second.name: words(second.text)},
                           "card": card.version}  # fmt: skip
    messages, version = judge_messages(history, first, second, dimensions, show_situation, card)
    chooses = card_form(card, PairForm).chooses
    schema = choice_schema() if chooses else judge_schema(dimensions, (first.id, second.id))
    expected = card.scoring == "expected"
    try:
        got = await ask_json(model, messages, schema, retries=retries, seed=seed, prompt_version=version,
                             max_tokens=card.max_tokens, top_logprobs=card.top_logprobs if expected else 0)  # fmt: skip
    except ModelCallError as e:
        return {**rec, "status": "error", "error": str(e)[:500]}, [("judge_error", str(e)[:200])]
    events: Events = [("judge_retried", judge)] if got.attempts > 1 else []
    if got.data is None:
        events.append(("judge_unscored", f"{judge}: {got.error[:160]}"))
        return {
            **rec,
            "status": "unscored",
            "error": got.error,
            "attempts": got.attempts,
            "raw": got.raw[-1][:1000] if got.raw else "",
        }, events
    verdicts, unread = read_answer(got, first, second, dimensions, chooses=chooses, expected=expected)
    if unread:
        events.append(("expected_unscored", f"{judge}: {unread[:160]}"))
    return {**rec, "status": "ok", "verdicts": verdicts, "attempts": got.attempts}, events


def read_answer(got: Structured, first: Shown, second: Shown, dimensions: list[str], *, chooses: bool,
                expected: bool) -> tuple[dict[str, dict[str, Any]], str]:  # fmt: skip
    """The verdicts of a parsed answer, by competitor name (``read_choice`` or ``read_verdicts``); with
    ``expected``, the choice's ``p_first`` or each verdict's ``strength_expected``, and why some could not be
    read ("" when all could)."""
    assert got.data is not None
    if chooses:
        verdicts = read_choice(got.data, first, second)
        if not expected:
            return verdicts, ""
        ex = expected_scores(got.raw[-1], got.logprobs, [OVERALL], CHOICES)
        mean = ex.expected[OVERALL]
        verdicts[OVERALL]["p_first"] = None if mean is None else CHOICES[1] - mean  # P(the first one)
        return verdicts, ex.error
    keys = verdict_keys(dimensions)
    verdicts = read_verdicts(got.data, keys, {first.id: first.name, second.id: second.name})
    if not expected:
        return verdicts, ""
    ex = expected_scores(got.raw[-1], got.logprobs, keys, STRENGTHS, field="strength")
    for k in keys:
        verdicts[k]["strength_expected"] = ex.expected[k]
    return verdicts, ex.error
