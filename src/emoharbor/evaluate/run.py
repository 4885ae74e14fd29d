"""The EmoHarbor evaluation: profiles x supporters x repeats as concurrent conversations, each rated by the
run's judges (the simulated user as User-as-a-Judge, a third-party judge...), resumable through the run store.

Store tables: ``conversation`` (key ``profile|supporter|repeat``), ``assessment``
(key ``profile|supporter|repeat|judge``) and ``profile`` (key: its id; the run's profiles as resolved when it
started, read back by the report and export).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..assess.stage import Judge, assess_all, check_judges, judge_models, make_judges, rate_stored, unassessed
from ..config import RunConfig
from ..errors import EmoharborError
from ..kinds import Summary
from ..models.pool import ModelPool, conversations_at_once
from ..models.spec import ModelSpec
from ..simulate.agents import make_user
from ..simulate.conversation import Conversation
from ..simulate.loop import converse, talk_seed
from ..simulate.supporter import make_supporter
from ..simulate.voice_model import user_chat_model
from ..store.keys import Key
from ..store.record import config_part, open_record
from ..store.records import PROFILE, stored_profiles
from ..store.run_store import DB_NAME, RunStore, call_sink
from ..store.units import Events, Work, ended_in_error, finished, run_stage, stage_todo
from .plan import Plan

KIND = "emoharbor"
UNIT = "conversation"  # what its summary counts


def config_of(store: RunStore) -> RunConfig:
    data = config_part(store.config())
    own = {k: v for k, v in data.items() if not k.endswith("_version") and k != "judge_cards"}
    return RunConfig.model_validate(own)


def conversation_key(profile_id: str, supporter: str, repeat: int) -> Key:
    return (profile_id, supporter, str(repeat))


def conversation_id(key: Key) -> str:
    """A conversation's name in transcripts and records ("profile|supporter|repeat"): shown, never taken apart
    (the store's key holds the parts)."""
    return "|".join(key)


def refuse_old_spelling(run_dir: Path) -> None:
    """A run started before the simulated user's settings moved into ``user_agent:`` was hashed with them at
    the top level: it is read back (report, export, assess) but not resumed, and says why."""
    if not (run_dir / DB_NAME).is_file():
        return
    store = RunStore.open_existing(run_dir)
    try:
        old = isinstance(store.config().get("user_agent"), str)
    finally:
        store.close()
    if old:
        raise EmoharborError(
            f"{run_dir} was started before the simulated user's settings moved into the user_agent: block "
            "(user_agent: {agent: chain, intensity_step: ...}); its results still read (report, export, "
            "assess), but it cannot be resumed: give a new run folder"
        )


async def run_evaluation(
    plan: Plan | RunConfig, run_dir: Path, *, progress: bool = True, cache_path: Path | bool | None = True
) -> Summary:
    """Execute ``plan`` in ``run_dir`` (a config is planned here first: the library's callers)."""
    plan = plan if isinstance(plan, Plan) else Plan.of(plan)
    cfg, profiles, judges = plan.cfg, plan.profiles, plan.judges
    refuse_old_spelling(run_dir)
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, judges)
        for p in profiles:  # kept with the run: the report and export read them here, not from the user's files
            if not store.has(PROFILE, (p.id,)):
                store.put(PROFILE, (p.id,), p.model_dump(mode="json"))
        jobs = [(i, p, s, r) for r in range(cfg.repeats) for i, p in enumerate(profiles) for s in cfg.roles.supporter]
        by_key = {conversation_key(p.id, s.name, r): (i, p, s, r) for i, p, s, r in jobs}
        more = unassessed(store, judges, "conversation")
        had = len(finished(store, "conversation") & set(by_key))  # conversations stored before this run
        if not stage_todo(store, "conversation", list(by_key), more):  # nothing to do: no server started
            store.set_meta("status", "complete")
            return Summary(UNIT, len(jobs), 0, ended_in_error(store, "conversation", by_key))
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            user_model = await user_chat_model(pool, cfg.roles.user, cfg.user_agent)
            models = await judge_models(pool, judges)
            sup_models = {s.name: await pool.get(s, "supporter") for s in cfg.roles.supporter}
            profile_of = {p.id: p for p in profiles}
            made: dict[Key, Conversation] = {}  # the conversations made now, handed to their assessments as made

            def talk(key: Key) -> Work:
                i, profile, spec, repeat = by_key[key]

                async def work() -> tuple[dict[str, Any], Events]:
                    conv = Conversation(id=conversation_id(key), profile_id=profile.id, supporter=spec.name,
                                        repeat=repeat, seed=talk_seed(cfg.seed, i, repeat))  # fmt: skip
                    user = make_user(user_model, profile, cfg.user_agent)
                    supporter = make_supporter(sup_models[spec.name], spec)
                    await converse(conv, user, supporter, max_turns=cfg.max_turns, seed=conv.seed)
                    made[key] = conv
                    return conv.model_dump(mode="json"), [*conv.events, ("termination", conv.termination)]

                return work

            async def assess(key: Key, record: dict[str, Any]) -> None:
                conv = made.pop(key, None)
                if conv is None:  # stored before this run: decoded here, once
                    conv = Conversation.model_validate(record)
                if conv.status == "ok":
                    await assess_all(store, key, conv, judges, models, profile_of[conv.profile_id])

            units = [(k, talk(k)) for k in by_key]
            workers = conversations_at_once([*cfg.roles.supporter, cfg.roles.user], cfg.concurrency)
            await run_stage(store, "conversation", units, workers=workers, progress=progress,
                            label="conversations", then=assess, more=more)  # fmt: skip
        store.set_meta("status", "complete")
        return Summary(UNIT, len(jobs), len(jobs) - had, ended_in_error(store, "conversation", by_key))
    finally:
        store.close()


async def rejudge(run_dir: Path, cards: list[str], judge: ModelSpec | None, *, scoring: str | None = None,
                  progress: bool = True) -> int:  # fmt: skip
    """Rate a finished run's conversations with more judge cards; returns how many assessments were made."""
    store = RunStore.open_existing(run_dir, KIND)
    try:
        cfg = config_of(store)
    finally:
        store.close()
    judges = make_judges(cards, judge or cfg.roles.judge, cfg.roles.user, scoring=scoring)
    return await reassess(run_dir, judges, progress=progress)


async def reassess(run_dir: Path, judges: list[Judge], *, progress: bool = True) -> int:
    """Score every conversation of an existing run with more judges (cards); returns how many assessments were
    made now. A judge whose name the run already used with another card is refused."""
    store = RunStore.open_existing(run_dir, KIND)
    try:
        check_judges(store, judges)
        workers = config_of(store).concurrency
        return await rate_stored(store, judges, stored_profiles(store), workers=workers, progress=progress)
    finally:
        store.close()
