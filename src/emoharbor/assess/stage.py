"""The assessment stage shared by EmoHarbor and validate runs: judges made from cards, each conversation
rated by each judge as one unit of the run store (table ``assessment``, key ``conversation|judge``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, EmoharborError
from ..models.base import ChatModel, ModelCallError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..profiles.schema import Profile
from ..simulate.conversation import Conversation
from ..store.keys import Key
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, finished, in_workers, run_stage, unit
from .cards import CardEntry, JudgeCard, card_of, judge_model
from .judge import check_logprobs, judge_conversation
from .judge_forms import ELSEWHERE, ConversationForm, Rates


@dataclass(frozen=True)
class Judge:
    """A judge card as a run uses it: the card, the model it runs on, its name in the records."""

    card: JudgeCard
    model: ModelSpec
    name: str
    role: str = "judge"  # "user" for a card of the form user on the user's own model: its calls count as the user's


def check_scoring(card: JudgeCard, spec: ModelSpec) -> None:
    """A card set to ``scoring: expected`` on a backend that never gives log-probabilities is refused now."""
    if card.scoring == "expected" and spec.backend in ("scripted", "hf"):
        raise ConfigError(
            f"judge card {card.name} has scoring: expected, but the {spec.backend} backend ({spec.model}) gives "
            "no token log-probabilities: use an OpenAI-compatible or local: model, or scoring: argmax"
        )


def distinct(judges: list[Judge]) -> list[Judge]:
    """``judges``, refused when two have the same name."""
    names = [j.name for j in judges]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"two judges have the same name {dup}: give the cards different names")
    return judges


RATES = {"conversation": "whole conversations", "reply": "one reply", "pair": "two replies side by side"}


def make_judges(refs: Sequence[CardEntry], model: ModelSpec, user: ModelSpec | None = None, *,
                rates: tuple[Rates, ...] = ("conversation",), wanted: str = "", scoring: str | None = None,
                sees: str | None = None, option: str = "") -> list[Judge]:  # fmt: skip
    """The judges of a run from card references, the one way every run makes them: each card on ``model``
    unless it names its own; ``scoring`` / ``sees``: the command line's, over every card's. A card of a form
    shown the user's inner record (``user``) runs on the simulated user's model (``user``) unless it names
    its own. A card of a form that does not rate what ``rates`` names (whole conversations, one reply, two
    replies side by side) is refused, saying what is ``wanted`` (by default, where such a card belongs);
    ``option``: the command-line option that gave the cards, which an error then names (``--judge``)."""
    try:
        return distinct([_judge(card_of(ref).with_options(scoring=scoring, sees=sees), model, user, rates, wanted)
                         for ref in refs])  # fmt: skip
    except EmoharborError as e:
        if not option:
            raise
        raise ConfigError(f"{option}: {e}") from None


def _judge(card: JudgeCard, model: ModelSpec, user: ModelSpec | None, rates: tuple[Rates, ...], wanted: str) -> Judge:
    form = card.judge_form()
    if form.rates not in rates:
        why = f" ({card.kind}) rates {RATES[form.rates]}; {wanted}" if wanted else f": {ELSEWHERE[form.rates]}"
        raise ConfigError(f"judge card {card.name}{why}")
    lived = user is not None and isinstance(form, ConversationForm) and form.lived
    spec = judge_model(card, user if lived and user is not None else model)
    check_scoring(card, spec)
    role = "user" if lived and spec == user else "judge"
    return Judge(card, spec, card.judge_id(spec.model, user.model if user is not None else None), role)


def judges_record(judges: list[Judge]) -> dict[str, Any]:
    return {j.name: j.card.record(j.model) for j in judges}


def check_judges(store: RunStore, judges: list[Judge]) -> None:
    """Record more judges in a run (``judges`` in its meta), refusing a name used before with another card."""
    have: dict[str, Any] = json.loads(store.meta().get("judges", "{}"))
    for j in judges:
        old = have.get(j.name)
        new = j.card.record(j.model)
        if old is not None and old["version"] != new["version"]:
            raise ConfigError(
                f"{store.folder}: judge {j.name} was used with card {old['version']}, not {new['version']}: "
                "give the changed card another name"
            )
        have[j.name] = new
    store.set_meta("judges", json.dumps(have, sort_keys=True))


async def judge_models(pool: ModelPool, judges: list[Judge]) -> dict[str, ChatModel]:
    """Each judge's model, after checking that the cards set to ``scoring: expected`` get log-probabilities."""
    models: dict[str, ChatModel] = {}
    for j in judges:
        models[j.name] = await pool.get(j.model, j.role)
        await check_logprobs(j.card, models[j.name])
    return models


def assessment_key(conversation: Key, judge: str) -> Key:
    """An assessment's key: its conversation's key (of a conversation or a replay), then the judge."""
    return (*conversation, judge)


def unassessed(store: RunStore, judges: list[Judge], table: str) -> Callable[[Key], bool]:
    """``more`` for the stage runner: whether a stored conversation (in ``table``) that can be judged (it ended
    ``ok``) still lacks a finished assessment by one of ``judges``. Read once, from the records' statuses and
    terminations (no record is decoded): it answers for the records stored when it was made."""
    done = finished(store, "assessment")
    status, termination = store.field(table, "status"), store.field(table, "termination")

    def more(key: Key) -> bool:
        judgeable = status.get(key) == "ok" and termination.get(key) != "error"
        return judgeable and any(assessment_key(key, j.name) not in done for j in judges)

    return more


async def assess_unit(store: RunStore, key: Key, conv: Conversation, judge: Judge, model: ChatModel,
                      profile: Profile | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Score ``conv`` (stored under ``key``) with ``judge`` (``profile``: the user's, for the forms that are shown
    it); ``extra`` goes into the record (a validate run says there what the judge saw)."""
    name = judge.name

    async def work() -> tuple[dict[str, Any], Events]:
        events: Events
        try:
            rec = await judge_conversation(judge.card, model, name, conv, profile, seed=conv.seed)
        except ModelCallError as e:
            rec = {"judge": name, "scores": {}, "evidence": {}, "status": "error", "error": str(e), "attempts": 0}
            events = [("model_error", str(e)[:200])]
        else:
            events = [("unscored", f"{name}: {rec['error'][:160]}")] if rec["status"] != "ok" else []
            if rec.get("expected_error") and rec["status"] == "ok":
                events.append(("expected_unscored", f"{name}: {rec['expected_error'][:160]}"))
        return {**rec, "conversation": conv.id, **(extra or {})}, events

    return await unit(store, "assessment", assessment_key(key, name), work)


async def assess_all(store: RunStore, key: Key, conv: Conversation, judges: list[Judge], models: dict[str, ChatModel],
                     profile: Profile | None, extra: Any = None) -> None:  # fmt: skip
    """Every judge on one conversation (stored under ``key``), all at once (a server with several slots answers
    them together); ``extra(judge)``: (the conversation as that judge sees it, what the record says of that)."""

    async def one(j: Judge) -> None:
        seen, more = extra(j) if extra is not None else (conv, None)
        await assess_unit(store, key, seen, j, models[j.name], profile, extra=more)

    await in_workers(judges, one, len(judges))  # a failure stops the others, their units unfinished


async def rate_stored(store: RunStore, judges: list[Judge], profiles: dict[str, Profile], *, workers: int,
                      progress: bool = True) -> int:  # fmt: skip
    """Rate every finished conversation of ``store`` (of a run whose units are conversations: an EmoHarbor run, a
    ladder) with the ``judges`` it lacks (``emoharbor assess``); how many ratings were made now. The judges must
    be recorded in the run first (``check_judges``)."""
    talks = [k for k, status in store.field("conversation", "status").items() if status == "ok"]
    before = len(store.keys("assessment"))
    async with ModelPool(sink=call_sink(store)) as pool:
        models = await judge_models(pool, judges)

        async def assess(key: Key, record: dict[str, Any]) -> None:
            conv = Conversation.model_validate(record)
            await assess_all(store, key, conv, judges, models, profiles.get(conv.profile_id))

        async def stored() -> tuple[dict[str, Any], Events]:  # every unit is stored: only ``then`` runs
            raise RuntimeError("rating makes no conversations")

        await run_stage(store, "conversation", [(k, stored) for k in talks], workers=workers, progress=progress,
                        label="assessments", then=assess, more=unassessed(store, judges, "conversation"))  # fmt: skip
    return len(store.keys("assessment")) - before
