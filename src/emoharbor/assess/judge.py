"""Rating a conversation with a judge card: 10 dimension scores (or the card's rubric) with evidence.

What a judge is shown, and so its messages, is its form's (``judge_forms.py``; the built-in ones in
``conversation_judges.py``); here they are asked for the card's rubric and the answer is recorded. An
output that never parses is unscored: every score None, counted. With ``scoring: expected`` the
probability-weighted scores are stored beside the written integers (``expected``, ``probs``); a dimension
whose probabilities cannot be read is None there and counted in ``expected_error``.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigError
from ..models.base import ChatModel, Message, ModelCallError
from ..models.expected import expected_scores
from ..models.structured import Structured, ask_json
from ..profiles.schema import Profile
from ..simulate.conversation import Conversation
from .cards import JudgeCard
from .judge_forms import ConversationForm, card_form


def answer_text(card: JudgeCard) -> str:
    keys = card.rubric_file().keys()
    example = json.dumps(dict.fromkeys(keys, 3))
    return card.answer_prompt().render(keys=", ".join(keys), example=example).strip()


def assessment_record(card: JudgeCard, judge: str, got: Structured) -> dict[str, Any]:
    rubric = card.rubric_file()
    keys, data = rubric.keys(), got.data

    def score(k: str) -> int | None:
        if data is None:
            return None
        v = data[k]
        return int(v["score"] if isinstance(v, dict) else v)

    rec: dict[str, Any] = {
        "judge": judge,
        "card": card.version,
        "scores": {k: score(k) for k in keys},
        "evidence": {k: (str(data[k].get("evidence", "")) if data and isinstance(data[k], dict) else "") for k in keys},
        "status": "unscored" if data is None else "ok",
        "error": got.error,
        "attempts": got.attempts,
    }
    if card.scoring == "expected":
        if data is None:
            rec.update(expected=dict.fromkeys(keys), probs={}, expected_error="unscored")
        else:
            ex = expected_scores(got.raw[-1], got.logprobs, keys, rubric.values())
            rec.update(expected=ex.expected, probs=ex.probs, expected_error=ex.error)
    return rec


async def judge_conversation(
    card: JudgeCard, model: ChatModel, judge: str, conv: Conversation, profile: Profile | None, seed: int = 0
) -> dict[str, Any]:
    """One assessment of ``conv`` by ``card`` on ``model``, recorded under the name ``judge``."""
    form = card_form(card, ConversationForm)
    if form.profile and profile is None:
        raise ValueError(f"judge card {card.name} ({card.kind}) needs the user's profile")
    messages, version = form.messages(card, conv, profile)
    return await ask_card(card, model, judge, messages, version, seed)


async def ask_card(card: JudgeCard, model: ChatModel, judge: str, messages: list[Message], version: str,
                   seed: int) -> dict[str, Any]:  # fmt: skip
    """``messages`` (a card's prompt about a conversation or a reply) asked for the card's rubric, as an
    assessment record."""
    top_logprobs = card.top_logprobs if card.scoring == "expected" else 0
    got = await ask_json(model, messages, card.rubric_file().schema(card.evidence), seed=seed, prompt_version=version,
                         max_tokens=card.max_tokens, top_logprobs=top_logprobs)  # fmt: skip
    return assessment_record(card, judge, got)


async def check_logprobs(card: JudgeCard, model: ChatModel) -> None:
    """Before a run: a card set to ``scoring: expected`` needs a backend that returns log-probabilities.
    One short call finds out (cached like any other); a backend that gives none is a configuration error,
    never a silent fall-back to the written integers."""
    if card.scoring != "expected":
        return
    schema = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["score"]}
    probe: list[Message] = [{"role": "user", "content": 'Reply with only {"score": 2}.'}]
    try:
        r = await model.chat(probe, json_schema=schema, max_tokens=12, seed=0, top_logprobs=card.top_logprobs)
    except ModelCallError as e:
        raise ConfigError(f"judge card {card.name}: the log-probability check on {model.name} failed: {e}") from None
    if not r.logprobs:
        raise ConfigError(
            f"judge card {card.name} has scoring: expected, but {model.name} returned no token log-probabilities; "
            "use a backend that returns them (OpenAI, vLLM, SGLang, llama.cpp) or scoring: argmax"
        )
