"""The EmoHarbor evaluation: profiles x supporters x repeats as concurrent conversations, each rated by the
run's judges (the simulated user as User-as-a-Judge, a third-party judge...), resumable through the run store.

Store kinds: ``conversation`` (key ``profile|supporter|repeat``) and ``assessment``
(key ``profile|supporter|repeat|judge``).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..assess.stage import Judge, assess_all, check_judges, judge_models, judges_record, make_judges, unassessed
from ..config import RunConfig
from ..models.pool import ModelPool, conversations_at_once
from ..models.spec import ModelSpec
from ..profiles.loader import BANK_FOLDER, BANK_PACKAGE, resolve_profiles
from ..simulate.chain_user import CHAIN_PROMPTS
from ..simulate.conversation import Conversation
from ..simulate.factory import make_supporter, make_user
from ..simulate.loop import converse
from ..store.keys import Key
from ..store.record import config_part, open_run, record_hash, run_record
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, Work, ended_in_error, finished, run_stage, stage_todo

KIND = "emoharbor"


def run_judges(cfg: RunConfig) -> list[Judge]:
    return make_judges(cfg.judges, cfg.roles.judge, cfg.roles.user)


def run_prompts(cfg: RunConfig) -> list[str]:
    """The prompt files a run's conversations read: the simulated user's, and the built-in supporter prompts
    its supporters name (the judges' prompts are in their cards)."""
    user = list(CHAIN_PROMPTS) if cfg.user_agent == "chain" else ["user_simple"]
    sup = {s.system_prompt or "builtin:default" for s in cfg.roles.supporter}
    return [*user, *sorted(f"supporter_{p.removeprefix('builtin:')}" for p in sup if p.startswith("builtin:"))]


def run_inputs(cfg: RunConfig) -> list[Path]:
    """The files a run reads: profile files and folders (the built-in bank too), supporter prompt files."""
    paths = [Path(p) for p in cfg.profiles if not p.startswith("builtin:")]
    if any(p.startswith("builtin:") for p in cfg.profiles):
        paths.append(Path(str(resources.files(BANK_PACKAGE).joinpath(BANK_FOLDER))))
    files = [s.system_prompt for s in cfg.roles.supporter if s.system_prompt and s.system_prompt.startswith("@")]
    paths += [Path(f[1:]) for f in files]
    return paths


def resolved_of(cfg: RunConfig) -> dict[str, Any]:
    """The config as resolved, with the versions of the judges' cards."""
    return {**cfg.resolved(), "judge_cards": judges_record(run_judges(cfg))}


def record_of(cfg: RunConfig) -> dict[str, Any]:
    """The run record: the resolved config, the judges' cards, the prompts' versions, the inputs' hashes."""
    return run_record(resolved_of(cfg), run_prompts(cfg), run_inputs(cfg))


def run_hash(cfg: RunConfig) -> str:
    return record_hash(record_of(cfg))


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


@dataclass
class RunSummary:
    run_dir: Path
    conversations: int
    newly_done: int
    errors: int


def _seed(cfg: RunConfig, profile_idx: int, repeat: int) -> int:
    # the same profile and repeat get the same seed for every supporter: a paired comparison
    return cfg.seed + 1_000_003 * repeat + 7919 * profile_idx


async def run_evaluation(
    cfg: RunConfig, run_dir: Path, *, progress: bool = True, cache_path: Path | bool | None = True
) -> RunSummary:
    profiles = resolve_profiles(cfg.profiles)
    store = open_run(run_dir, KIND, resolved_of(cfg), prompts=run_prompts(cfg), inputs=run_inputs(cfg))
    judges = run_judges(cfg)
    try:
        check_judges(store, judges)
        jobs = [(i, p, s, r) for r in range(cfg.repeats) for i, p in enumerate(profiles) for s in cfg.roles.supporter]
        by_key = {conversation_key(p.id, s.name, r): (i, p, s, r) for i, p, s, r in jobs}
        more = unassessed(store, judges, "conversation")
        had = len(finished(store, "conversation") & set(by_key))  # conversations stored before this run
        if not stage_todo(store, "conversation", list(by_key), more):  # nothing to do: no model reached, no server
            store.set_meta("status", "complete")
            return RunSummary(run_dir, len(jobs), 0, ended_in_error(store, "conversation", by_key))
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            user_model = await pool.get(cfg.roles.user, "user")
            models = await judge_models(pool, judges)
            sup_models = {s.name: await pool.get(s, "supporter") for s in cfg.roles.supporter}
            profile_of = {p.id: p for p in profiles}

            def talk(key: Key) -> Work:
                i, profile, spec, repeat = by_key[key]

                async def work() -> tuple[dict[str, Any], Events]:
                    conv = Conversation(id=conversation_id(key), profile_id=profile.id, supporter=spec.name,
                                        repeat=repeat, seed=_seed(cfg, i, repeat))  # fmt: skip
                    user = make_user(cfg.user_agent, user_model, profile, cfg)
                    supporter = make_supporter(sup_models[spec.name], spec)
                    await converse(conv, user, supporter, max_turns=cfg.max_turns, seed=conv.seed)
                    return conv.model_dump(mode="json"), [*conv.events, ("termination", conv.termination)]

                return work

            async def assess(key: Key, record: dict[str, Any]) -> None:
                conv = Conversation.model_validate(record)
                if conv.status == "ok":
                    await assess_all(store, key, conv, judges, models, profile_of[conv.profile_id])

            units = [(k, talk(k)) for k in by_key]
            workers = conversations_at_once([*cfg.roles.supporter, cfg.roles.user], cfg.concurrency)
            await run_stage(store, "conversation", units, workers=workers, progress=progress,
                            label="conversations", then=assess, more=more)  # fmt: skip
        store.set_meta("status", "complete")
        return RunSummary(run_dir, len(jobs), len(jobs) - had, ended_in_error(store, "conversation", by_key))
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
        cfg = config_of(store)
        profiles = {p.id: p for p in resolve_profiles(cfg.profiles)}
        convs = {k: d for k, d in store.items("conversation") if d["status"] == "ok"}
        before = len(store.keys("assessment"))
        async with ModelPool(sink=call_sink(store)) as pool:
            models = await judge_models(pool, judges)

            async def assess(key: Key, record: dict[str, Any]) -> None:
                conv = Conversation.model_validate(record)
                await assess_all(store, key, conv, judges, models, profiles.get(conv.profile_id))

            async def stored() -> tuple[dict[str, Any], Events]:  # every unit is stored: only ``then`` runs
                raise RuntimeError("reassess does not make conversations")

            units = [(k, stored) for k in convs]
            more = unassessed(store, judges, "conversation")
            await run_stage(store, "conversation", units, workers=cfg.concurrency, progress=progress,
                            label="assessments", then=assess, more=more)  # fmt: skip
        return len(store.keys("assessment")) - before
    finally:
        store.close()
