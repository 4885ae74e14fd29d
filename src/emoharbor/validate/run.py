"""`emoharbor validate`: replay real ESConv conversations through the simulated user, rate each one by the
user-judge and by a third-party judge, resumably in a run store.

Store kinds: ``replay`` (key: the ESConv record id, ``<file stem>:<index>``; the conversation record plus
``esconv`` (the seeker's survey, the failure label, how many supporter turns were replayed) and ``profile``)
and ``assessment`` (key ``<record id>|<judge>``, as in an EmoHarbor run).
"""

from __future__ import annotations

import asyncio
import random
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.dimensions import rubric_version
from ..assess.judge import USER_JUDGE
from ..config import ModelSpec, hash_config
from ..data.esconv import EsconvDialog, load_esconv
from ..errors import ConfigError, DataError
from ..evaluate import assess_unit, third_party_name, work_left
from ..models.base import ChatModel
from ..models.pool import ModelPool
from ..profiles.esconv_import import draft_profile
from ..prompts import all_versions
from ..simulate.chain_user import ChainSettings, ChainUser
from ..simulate.conversation import Conversation
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, finished, progress_bar, unit
from .replay import esconv_facts, plan_replay, replay

KIND = "validate"


@dataclass
class ValidateOptions:
    esconv: list[Path]
    limit: int | None = None  # the first N records of each file
    sample: int | None = None  # or N records of each file drawn at random with ``seed``
    seed: int = 0
    user: ModelSpec = field(default_factory=ModelSpec)
    judge: ModelSpec = field(default_factory=ModelSpec)
    max_supporter_turns: int = 4
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not self.esconv:
            raise ConfigError("validate needs at least one ESConv file (--esconv PATH)")
        if self.limit is not None and self.sample is not None:
            raise ConfigError("give --limit N (the first N records) or --sample N (N at random), not both")
        for name in ("limit", "sample"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ConfigError(f"--{name} must be at least 1, not {v}")
        if self.max_supporter_turns < 0:
            raise ConfigError("--max-supporter-turns must be 0 (no cap) or more")

    def resolved(self) -> dict[str, Any]:
        return {
            "esconv": [str(p.resolve()) for p in self.esconv],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "user": self.user.model_dump(mode="json"),
            "judge": self.judge.model_dump(mode="json"),
            "max_supporter_turns": self.max_supporter_turns,
        }


def select(dialogs: list[EsconvDialog], limit: int | None, sample: int | None, seed: int) -> list[EsconvDialog]:
    if sample is not None:
        picked = sorted(random.Random(seed).sample(range(len(dialogs)), min(sample, len(dialogs))))
        return [dialogs[i] for i in picked]
    return dialogs[:limit] if limit is not None else dialogs


def load_selection(opts: ValidateOptions) -> list[EsconvDialog]:
    """The chosen records of every file, interleaved (first of each file, then second of each...), so a run
    stopped early holds about as many conversations from each file."""
    per_file: list[list[EsconvDialog]] = []
    seen: dict[str, str] = {}
    for path in opts.esconv:
        chosen = select(load_esconv(path), opts.limit, opts.sample, opts.seed)
        for d in chosen:
            if d.id in seen:
                raise DataError(f"{path}: record id {d.id} is also in {seen[d.id]}: give files with different names")
            seen[d.id] = str(path)
        per_file.append(chosen)
    longest = max((len(c) for c in per_file), default=0)
    return [c[i] for i in range(longest) for c in per_file if i < len(c)]


def run_record(opts: ValidateOptions) -> dict[str, Any]:
    """The options with the versions of the prompts and the rubric: a run is never resumed with other prompts."""
    return {**opts.resolved(), "prompt_versions": all_versions(), "rubric_version": rubric_version()}


def effective_concurrency(opts: ValidateOptions) -> int:
    """Conversations at once: one when both models are the embedded one (it serves one request at a time and
    reuses the prompt prefix it read last, which parallel conversations would evict)."""
    return 1 if opts.user.backend == "local" and opts.judge.backend == "local" else opts.concurrency


def conversation_seed(seed: int, record_id: str) -> int:
    return seed + zlib.crc32(record_id.encode())


@dataclass
class ValidateSummary:
    run_dir: Path
    conversations: int
    newly_done: int
    errors: int


async def replay_and_assess(
    store: RunStore, dialog: EsconvDialog, opts: ValidateOptions, user_model: ChatModel, judge_model: ChatModel
) -> bool:
    """One conversation: replayed (or read back from the store), then rated by both judges. False on error."""
    profile = draft_profile(dialog, evaluation_only=True)
    plan = plan_replay(dialog, opts.max_supporter_turns)

    async def work() -> tuple[dict[str, Any], Events]:
        user = ChainUser(user_model, profile, ChainSettings())
        conv = await replay(user, dialog, profile, plan, seed=conversation_seed(opts.seed, dialog.id))
        record = {
            **conv.model_dump(mode="json"),
            "esconv": esconv_facts(dialog, plan),
            "profile": profile.model_dump(mode="json"),
        }
        return record, [*conv.events, ("replay", "error" if conv.termination == "error" else "done")]

    conv = Conversation.model_validate(await unit(store, "replay", dialog.id, work, redo_failed_calls=True))
    if conv.termination == "error":
        return False
    await assess_unit(store, conv, USER_JUDGE, user_model, profile)
    await assess_unit(store, conv, third_party_name(opts.judge.model), judge_model, None)
    return True


async def run_validation(
    opts: ValidateOptions, run_dir: Path, *, progress: bool = True, cache_path: Path | bool | None = True
) -> ValidateSummary:
    dialogs = load_selection(opts)
    resolved = run_record(opts)
    store = RunStore.create_or_resume(run_dir, KIND, resolved, hash_config(resolved))
    have = finished(store, "replay") & {d.id for d in dialogs}
    judges = (USER_JUDGE, third_party_name(opts.judge.model))
    pending, errors = work_left(store, "replay", [d.id for d in dialogs], judges)
    todo = [d for d in dialogs if d.id in pending]
    if not todo:  # nothing to do: no model server is started
        store.set_meta("status", "complete")
        store.close()
        return ValidateSummary(run_dir, len(dialogs), 0, errors)
    bar = progress_bar(len(dialogs), len(have), "conversations", enabled=progress)
    gate = asyncio.Semaphore(effective_concurrency(opts))
    started = time.perf_counter()
    before = float(store.meta().get("wall_s", "0"))  # earlier sessions of this run

    def record_wall_time() -> None:  # after every conversation: a run killed outright keeps its time too
        store.set_meta("wall_s", f"{before + time.perf_counter() - started:.1f}")

    try:
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            user_model = await pool.get(opts.user, "user")
            judge_model = await pool.get(opts.judge, "judge")

            async def one(d: EsconvDialog) -> None:
                nonlocal errors
                async with gate:
                    was_done = d.id in have
                    if not await replay_and_assess(store, d, opts, user_model, judge_model):
                        errors += 1
                    if not was_done:
                        bar.update(1)
                        record_wall_time()

            async with asyncio.TaskGroup() as tg:
                for d in todo:
                    tg.create_task(one(d))
        store.set_meta("status", "complete")
    finally:
        bar.close()
        record_wall_time()
        store.close()
    return ValidateSummary(run_dir, len(dialogs), len(dialogs) - len(have), errors)
