"""The EmoHarbor evaluation: profiles x supporters x repeats as concurrent conversations, each rated
by the simulated user (User-as-a-Judge) and by a third-party judge, resumable through the run store.

Store kinds: ``conversation`` (key ``profile|supporter|repeat``) and ``assessment``
(key ``profile|supporter|repeat|judge``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .assess.dimensions import rubric_version
from .assess.judge import USER_JUDGE, judge_as_user, judge_third_party
from .config import RunConfig, hash_config
from .models.base import ChatModel, ModelCallError
from .models.pool import ModelPool
from .profiles.loader import resolve_profiles
from .profiles.schema import Profile
from .prompts import all_versions
from .simulate.conversation import Conversation
from .simulate.factory import make_supporter, make_user
from .simulate.loop import converse
from .store.run_store import RunStore, call_sink
from .store.units import Events, failed_call, finished, progress_bar, unit

KIND = "emoharbor"
T = TypeVar("T")


def third_party_name(model: str) -> str:
    return f"third_party:{model}"


async def in_workers(items: list[T], work: Callable[[T], Awaitable[None]], workers: int) -> None:
    """``work`` on every item, ``workers`` at a time: a fixed pool of tasks, so memory does not grow with
    the number of items."""
    it = iter(items)

    async def worker() -> None:
        for item in it:
            await work(item)

    async with asyncio.TaskGroup() as tg:
        for _ in range(min(workers, len(items))):
            tg.create_task(worker())


def run_record(cfg: RunConfig) -> tuple[dict[str, Any], str]:
    """The resolved config with the versions of the prompts and the rubric, and its hash."""
    resolved = {**cfg.resolved(), "prompt_versions": all_versions(), "rubric_version": rubric_version()}
    return resolved, hash_config(resolved)


def config_of(store: RunStore) -> RunConfig:
    return RunConfig.model_validate(
        {k: v for k, v in store.config().items() if not k.endswith("_version") and k != "prompt_versions"}
    )


def effective_concurrency(cfg: RunConfig) -> int:
    """Conversations at once. The embedded model serves one request at a time and reuses the prompt
    prefix it read last: conversations in parallel would only evict each other's prefixes."""
    specs = [*cfg.roles.supporter, cfg.roles.user]
    return 1 if all(s.backend == "local" for s in specs) else cfg.concurrency


def conversation_key(profile_id: str, supporter: str, repeat: int) -> str:
    return f"{profile_id}|{supporter}|{repeat}"


@dataclass
class RunSummary:
    run_dir: Path
    conversations: int
    newly_done: int
    errors: int


def _seed(cfg: RunConfig, profile_idx: int, repeat: int) -> int:
    # the same profile and repeat get the same seed for every supporter: a paired comparison
    return cfg.seed + 1_000_003 * repeat + 7919 * profile_idx


async def assess_unit(
    store: RunStore, conv: Conversation, judge: str, model: ChatModel, profile: Profile | None
) -> dict[str, Any]:
    """Score ``conv`` with ``judge``: the user's own view when a profile is given, else a third party's."""

    async def work() -> tuple[dict[str, Any], Events]:
        try:
            if profile is not None:
                rec = await judge_as_user(model, profile, conv, seed=conv.seed)
            else:
                rec = await judge_third_party(model, judge, conv, seed=conv.seed)
        except ModelCallError as e:
            rec = {"scores": {}, "evidence": {}, "unscored": True, "error": str(e), "attempts": 0}
            return {**rec, "judge": judge, "conversation": conv.id}, [("model_error", str(e)[:200])]
        events = [("unscored", f"{judge}: {rec['error'][:160]}")] if rec["unscored"] else []
        return {**rec, "judge": judge, "conversation": conv.id}, events

    return await unit(store, "assessment", f"{conv.id}|{judge}", work, redo_failed_calls=True)


def work_left(store: RunStore, kind: str, keys: list[str], judges: tuple[str, ...]) -> tuple[set[str], int]:
    """For a resumed run: the conversations (``kind`` "conversation" or "replay") with work left (not
    stored, ended on a failed model call, or missing a judge's finished assessment), and how many of the
    others ended in error."""
    assessed = finished(store, "assessment")
    todo, errors = set(), 0
    for key in keys:
        conv = store.get(kind, key)
        if conv is None or failed_call(conv):
            todo.add(key)
        elif conv.get("termination") == "error":
            errors += 1
        elif not all(f"{key}|{j}" in assessed for j in judges):
            todo.add(key)
    return todo, errors


async def run_evaluation(
    cfg: RunConfig, run_dir: Path, *, progress: bool = True, cache_path: Path | bool | None = True
) -> RunSummary:
    profiles = resolve_profiles(cfg.profiles)
    store = RunStore.create_or_resume(run_dir, KIND, *run_record(cfg))
    jobs = [(i, p, s, r) for r in range(cfg.repeats) for i, p in enumerate(profiles) for s in cfg.roles.supporter]
    keys = [conversation_key(p.id, s.name, r) for _, p, s, r in jobs]
    have = finished(store, "conversation") & set(keys)
    judges = (USER_JUDGE, third_party_name(cfg.roles.judge.model)) if cfg.third_party_judge else (USER_JUDGE,)
    pending, errors = work_left(store, "conversation", keys, judges)
    todo = [job for job, key in zip(jobs, keys, strict=True) if key in pending]
    if not todo:  # nothing to do: no model is reached, no server started
        store.set_meta("status", "complete")
        store.close()
        return RunSummary(run_dir, len(jobs), 0, errors)
    bar = progress_bar(len(jobs), len(have), "conversations", enabled=progress)
    try:
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            user_model = await pool.get(cfg.roles.user, "user")
            judge_model = await pool.get(cfg.roles.judge, "judge") if cfg.third_party_judge else None
            sup_models = {s.name: await pool.get(s, "supporter") for s in cfg.roles.supporter}

            async def one(i: int, profile: Profile, spec: Any, repeat: int) -> None:
                nonlocal errors
                key = conversation_key(profile.id, spec.name, repeat)
                was_done = key in have

                async def talk() -> tuple[dict[str, Any], Events]:
                    conv = Conversation(
                        id=key,
                        profile_id=profile.id,
                        supporter=spec.name,
                        repeat=repeat,
                        seed=_seed(cfg, i, repeat),
                    )
                    user = make_user(cfg.user_agent, user_model, profile, cfg)
                    await converse(
                        conv,
                        user,
                        make_supporter(sup_models[spec.name], spec),
                        max_turns=cfg.max_turns,
                        seed=conv.seed,
                    )
                    events = [*conv.events, ("termination", conv.termination)]
                    return conv.model_dump(mode="json"), events

                conv = Conversation.model_validate(await unit(store, "conversation", key, talk, redo_failed_calls=True))
                if conv.termination == "error":
                    errors += 1
                else:
                    await assess_unit(store, conv, USER_JUDGE, user_model, profile)
                    if judge_model is not None:
                        await assess_unit(store, conv, third_party_name(cfg.roles.judge.model), judge_model, None)
                if not was_done:
                    bar.update(1)

            await in_workers(todo, lambda job: one(*job), effective_concurrency(cfg))
        store.set_meta("status", "complete")
    finally:
        bar.close()
        store.close()
    return RunSummary(run_dir, len(jobs), len(jobs) - len(have), errors)


async def reassess(run_dir: Path, judge_spec: Any, *, as_user: bool, progress: bool = True) -> int:
    """Score every conversation of an existing run with another judge; returns how many were scored now."""
    store = RunStore.open_existing(run_dir)
    cfg = config_of(store)
    profiles = {p.id: p for p in resolve_profiles(cfg.profiles)}
    name = f"user:{judge_spec.model}" if as_user else third_party_name(judge_spec.model)
    convs = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    convs = [c for c in convs if c.termination != "error"]
    before = sum(store.has("assessment", f"{c.id}|{name}") for c in convs)
    try:
        async with ModelPool(sink=call_sink(store)) as pool:
            model = await pool.get(judge_spec, "judge")
            bar = progress_bar(len(convs), 0, "assessments", enabled=progress)

            async def one(c: Conversation) -> None:
                await assess_unit(store, c, name, model, profiles[c.profile_id] if as_user else None)
                bar.update(1)

            await in_workers(convs, one, cfg.concurrency)
            bar.close()
    finally:
        store.close()
    return len(convs) - before
