"""The one stage runner: units of work done by a fixed pool of workers into a run store, resumably.

A unit is (key, work): ``work()`` returns the unit's record (a JSON-able dict) and a list of (event, detail)
pairs to count (parse failures, repetition, skips...). Every record says how it ended in ``status``:

- ``ok``: done;
- ``unscored``: done, but its output could not be used (it did not parse, a reply was missing): counted and
  reported, never redone (the same calls would come back from the cache);
- ``error``: a model call failed for good (the endpoint was down, a timeout outlived the retries): the next
  run of the same command does the unit again.

Every record also says in ``reasks`` how many times a reply that did not parse was asked again within the unit
(``models.structured.ask_json``; 0 when none), so a unit that needed it is told apart from one that did not.

The record and its events are written in one transaction when the unit finishes; its model calls are written
as they return (``run_store.call_sink``). Units whose stored record is not an ``error`` are skipped, so a
killed run started again only does what is missing.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tqdm import tqdm

from ..models.structured import Reasks, reask_count
from .keys import Key
from .run_store import STATUSES, RunStore, unit_attempt

Events = list[tuple[str, str]]
Work = Callable[[], Awaitable[tuple[dict[str, Any], Events]]]
T = TypeVar("T")


def progress_bar(total: int, done: int, desc: str, *, enabled: bool, unit: str = "it") -> tqdm[Any]:
    """The progress bar on stderr, starting at the units already done."""
    return tqdm(
        total=total, initial=done, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True
    )


class WallTime:
    """A run's model time across its sessions (the store's ``wall_s``: earlier sessions' and this one's),
    written after each unit (``mark``), so a run killed outright keeps it too."""

    def __init__(self, store: RunStore) -> None:
        self.store, self.started = store, time.perf_counter()
        self.before = float(store.meta().get("wall_s", "0"))

    def mark(self) -> None:
        self.store.set_meta("wall_s", f"{self.before + time.perf_counter() - self.started:.1f}")

    async def then(self, key: Key, record: dict[str, Any]) -> None:
        """``mark`` as a stage's follow-on work (``run_stage(then=...)``)."""
        self.mark()


def finished(store: RunStore, table: str) -> set[Key]:
    """The keys of ``table`` that a resumed run does not do again (their status read, no record decoded)."""
    return {k for k, status in store.field(table, "status").items() if status != "error"}


async def unit(store: RunStore, table: str, key: Key, work: Work, *, redo: bool = False) -> dict[str, Any]:
    """Do one unit unless the store has it and it did not end in ``error`` (``redo``: the caller says the stored
    record must be done again); write its record, with its re-asks, and its events in one transaction. A stored
    record is returned as read (read here once, for the follow-on work that needs it)."""
    have = None if redo else store.get(table, key)
    if have is not None and have["status"] != "error":
        return have
    attempt = uuid.uuid4().hex
    reasks = Reasks()
    token, counting = unit_attempt.set((table, key, attempt)), reask_count.set(reasks)
    try:
        made, events = await work()
        if made.get("status") not in STATUSES:
            raise RuntimeError(f"{table} {key}: its record has status {made.get('status')!r}, not one of {STATUSES}")
        record = {**made, "reasks": reasks.n}
        store.put(table, key, record, attempt=attempt, events=events)
    finally:
        reask_count.reset(counting)
        unit_attempt.reset(token)
    return record


async def in_workers(items: Iterable[T], work: Callable[[T], Awaitable[None]], workers: int) -> None:
    """``work`` on every item, ``workers`` at a time: a fixed pool of tasks, so memory does not grow with the
    number of items."""
    it = iter(items)

    async def worker() -> None:
        for item in it:
            await work(item)

    async with asyncio.TaskGroup() as tg:
        for _ in range(max(1, workers)):
            tg.create_task(worker())


async def in_groups(items: Iterable[T], group: Callable[[T], Hashable], work: Callable[[T], Awaitable[None]],
                    workers: int) -> None:  # fmt: skip
    """``work`` on every item, ``workers`` groups at a time; the items of one group (``group(item)``) one after
    another, in their order, by one worker. Items that share a long prompt prefix (the replies to one context
    scored by one scorer) so reach a server one after another, and the slot that read the prefix for the first
    reuses it for the rest; run side by side, each would land on a slot of its own and read it anew."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(group(item), []).append(item)

    async def in_turn(members: list[T]) -> None:
        for item in members:
            await work(item)

    await in_workers(list(groups.values()), in_turn, workers)


@dataclass
class StageDone:
    units: int  # in the stage
    resumed: int  # found finished in the store
    done_now: int  # done (or done again) by this run
    statuses: dict[str, int]  # the stage's units by status, after this run


def ended_in_error(store: RunStore, table: str, keys: Iterable[Key]) -> int:
    """How many of ``keys`` (conversations, replays) ended with termination ``error``: a model call that failed
    for good, or output of the simulated user that did not parse."""
    wanted = set(keys)
    return sum(1 for k, t in store.field(table, "termination").items() if k in wanted and t == "error")


def stage_todo(store: RunStore, table: str, keys: Sequence[Key], more: Callable[[Key], bool] | None = None,
               redo_if: Callable[[Key], bool] | None = None) -> list[Key]:  # fmt: skip
    """The keys with work left: not stored, stored as ``error``, ``redo_if(key)`` says its record must be done
    again, or ``more(key)`` says the unit has follow-on work left (an assessment of a stored conversation). Only
    the records' statuses are read."""
    status = store.field(table, "status")
    out = []
    for key in keys:
        left = status.get(key) in (None, "error") or (redo_if is not None and redo_if(key))
        if left or (more is not None and more(key)):
            out.append(key)
    return out


async def run_stage(
    store: RunStore,
    table: str,
    units: Sequence[tuple[Key, Work]],
    *,
    workers: int,
    progress: bool = True,
    label: str = "",
    then: Callable[[Key, dict[str, Any]], Awaitable[None]] | None = None,
    more: Callable[[Key], bool] | None = None,
    redo_if: Callable[[Key], bool] | None = None,
    group: Callable[[Key], Hashable] | None = None,
) -> StageDone:
    """Every unit not finished yet, ``workers`` at a time, with a progress bar; with ``group``, the units of one
    group (their prompts share a long prefix) one after another by one worker (``in_groups``).
    ``then(key, record)``: follow-on work on a unit's record that did not end in ``error`` (its assessments),
    run in the same worker;
    ``more(key)``: whether a finished unit still has such work left; ``redo_if(key)``: whether a finished unit
    must be done again. A stored record is read once, by the unit that hands it to ``then``; the records of
    units with nothing left are not read at all."""
    keys = [k for k, _ in units]
    todo = set(stage_todo(store, table, keys, more, redo_if))
    bar = progress_bar(len(units), len(units) - len(todo), label or table, enabled=progress, unit=table)

    async def one(item: tuple[Key, Work]) -> None:
        key, work = item
        record = await unit(store, table, key, work, redo=redo_if is not None and redo_if(key))
        if then is not None and record["status"] != "error":
            await then(key, record)
        bar.update(1)

    group_of = group or (lambda key: key)  # without groups, each unit is its own
    try:
        await in_groups([u for u in units if u[0] in todo], lambda u: group_of(u[0]), one, workers)
    finally:
        bar.close()
    wanted = set(keys)
    statuses = Counter(status for k, status in store.field(table, "status").items() if k in wanted)
    return StageDone(len(units), len(units) - len(todo), len(todo), dict(sorted(statuses.items())))
