"""The EmoHarbor evaluation: profiles x supporters x repeats as concurrent conversations, each rated
by the simulated user (User-as-a-Judge) and by a third-party judge, resumable through the run store.

Store kinds: ``conversation`` (key ``profile|supporter|repeat``) and ``assessment``
(key ``profile|supporter|repeat|judge``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .assess.cards import JudgeCard, judge_model, load_card
from .assess.dimensions import rubric_version
from .assess.judge import check_logprobs, judge_conversation
from .config import ModelSpec, RunConfig, hash_config
from .errors import ConfigError
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


@dataclass(frozen=True)
class Judge:
    """A judge card as a run uses it: the card, the model it runs on, its name in the records."""

    card: JudgeCard
    model: ModelSpec
    name: str
    role: str = "judge"  # "user" for a user-kind card on the user's own model: it shares the user's server


def make_judges(refs: list[str], judge: ModelSpec, user: ModelSpec, **options: str | None) -> list[Judge]:
    """The judges of a run from card references; ``options``: ``scoring`` / ``sees`` from the command line.
    A user-kind card runs on the simulated user's model unless it names its own."""
    out: list[Judge] = []
    for ref in refs:
        card = load_card(ref).with_options(**options)
        spec = judge_model(card, user if card.kind == "user" else judge)
        if card.kind == "heart_pairwise":
            raise ConfigError(f"judge card {card.name} is a HEART pairwise judge: give it to `emoharbor heart judge`")
        if card.scoring == "expected" and spec.backend in ("scripted", "hf"):
            raise ConfigError(
                f"judge card {card.name} has scoring: expected, but the {spec.backend} backend ({spec.model}) gives "
                "no token log-probabilities: use an OpenAI-compatible or local: model, or scoring: argmax"
            )
        role = "user" if card.kind == "user" and spec == user else "judge"
        out.append(Judge(card, spec, card.judge_id(spec.model, user.model), role))
    names = [j.name for j in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"two judges have the same name {dup}: give the cards different names")
    return out


def judges_record(judges: list[Judge]) -> dict[str, Any]:
    return {j.name: j.card.record(j.model) for j in judges}


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


def run_judges(cfg: RunConfig) -> list[Judge]:
    return make_judges(cfg.judges, cfg.roles.judge, cfg.roles.user)


def run_record(cfg: RunConfig) -> tuple[dict[str, Any], str]:
    """The resolved config with the versions of the prompts, the rubric and the judge cards, and its hash."""
    resolved = {
        **cfg.resolved(),
        "prompt_versions": all_versions(),
        "rubric_version": rubric_version(),
        "judge_cards": judges_record(run_judges(cfg)),
    }
    return resolved, hash_config(resolved)


def config_of(store: RunStore) -> RunConfig:
    return RunConfig.model_validate(
        {
            k: v
            for k, v in store.config().items()
            if not k.endswith("_version") and k not in ("prompt_versions", "judge_cards")
        }
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
    store: RunStore,
    conv: Conversation,
    judge: Judge,
    model: ChatModel,
    profile: Profile | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score ``conv`` with ``judge`` (``profile``: the user's, for the kinds that are shown it); ``extra``
    goes into the record (a validate run says there what the judge saw)."""
    name = judge.name

    async def work() -> tuple[dict[str, Any], Events]:
        try:
            rec = await judge_conversation(judge.card, model, name, conv, profile, seed=conv.seed)
        except ModelCallError as e:
            rec = {"scores": {}, "evidence": {}, "unscored": True, "error": str(e), "attempts": 0}
            return {**rec, "judge": name, "conversation": conv.id, **(extra or {})}, [("model_error", str(e)[:200])]
        events = [("unscored", f"{name}: {rec['error'][:160]}")] if rec["unscored"] else []
        if rec.get("expected_error") and not rec["unscored"]:
            events.append(("expected_unscored", f"{name}: {rec['expected_error'][:160]}"))
        return {**rec, "conversation": conv.id, **(extra or {})}, events

    return await unit(store, "assessment", f"{conv.id}|{name}", work, redo_failed_calls=True)


async def judge_models(pool: ModelPool, judges: list[Judge]) -> dict[str, ChatModel]:
    """Each judge's model, after checking that the cards set to ``scoring: expected`` get log-probabilities."""
    models: dict[str, ChatModel] = {}
    for j in judges:
        models[j.name] = await pool.get(j.model, j.role)
        await check_logprobs(j.card, models[j.name])
    return models


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
    judges = run_judges(cfg)
    check_judges(store, judges)
    pending, errors = work_left(store, "conversation", keys, tuple(j.name for j in judges))
    todo = [job for job, key in zip(jobs, keys, strict=True) if key in pending]
    if not todo:  # nothing to do: no model is reached, no server started
        store.set_meta("status", "complete")
        store.close()
        return RunSummary(run_dir, len(jobs), 0, errors)
    bar = progress_bar(len(jobs), len(have), "conversations", enabled=progress)
    try:
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            user_model = await pool.get(cfg.roles.user, "user")
            models = await judge_models(pool, judges)
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
                    for j in judges:
                        await assess_unit(store, conv, j, models[j.name], profile)
                if not was_done:
                    bar.update(1)

            await in_workers(todo, lambda job: one(*job), effective_concurrency(cfg))
        store.set_meta("status", "complete")
    finally:
        bar.close()
        store.close()
    return RunSummary(run_dir, len(jobs), len(jobs) - len(have), errors)


async def reassess(run_dir: Path, judges: list[Judge], *, progress: bool = True) -> int:
    """Score every conversation of an existing run with more judges (cards); returns how many assessments
    were made now. A judge whose name the run already used with another card is refused."""
    store = RunStore.open_existing(run_dir)
    try:
        check_judges(store, judges)
    except ConfigError:
        store.close()
        raise
    cfg = config_of(store)
    profiles = {p.id: p for p in resolve_profiles(cfg.profiles)}
    convs = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    convs = [c for c in convs if c.termination != "error"]
    jobs = [(c, j) for c in convs for j in judges]
    before = sum(store.has("assessment", f"{c.id}|{j.name}") for c, j in jobs)
    try:
        async with ModelPool(sink=call_sink(store)) as pool:
            models = await judge_models(pool, judges)
            bar = progress_bar(len(jobs), before, "assessments", enabled=progress)

            async def one(job: tuple[Conversation, Judge]) -> None:
                c, j = job
                await assess_unit(store, c, j, models[j.name], profiles.get(c.profile_id))
                bar.update(1)

            todo = [(c, j) for c, j in jobs if not store.has("assessment", f"{c.id}|{j.name}")]
            await in_workers(todo, one, cfg.concurrency)
            bar.close()
    finally:
        store.close()
    return len(jobs) - before


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
