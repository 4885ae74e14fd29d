"""Running many units of work concurrently into a run store, resumably.

A unit is (key, work): ``work()`` returns the unit's record (a JSON-able dict) and a list of
(event, detail) pairs to count (parse failures, repetition, skips...). The record, the unit's
model calls and its events are written in one transaction when the unit finishes. Units whose key
the store already holds are skipped, so a killed run started again only does what is missing.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from .run_store import RunStore, unit_calls

Events = list[tuple[str, str]]
Work = Callable[[], Awaitable[tuple[dict[str, Any], Events]]]


def progress_bar(total: int, done: int, desc: str, *, enabled: bool, unit: str = "it") -> tqdm[Any]:
    """The progress bar on stderr, starting at the units already done."""
    return tqdm(
        total=total, initial=done, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True
    )


@dataclass
class UnitsDone:
    skipped: int  # already in the store
    done: int


def failed_call(record: dict[str, Any]) -> bool:
    """Whether a stored conversation or assessment ended on a model call that failed for good (the
    endpoint was down, a timeout outlived the retries): such a unit is done again by the next run. Output
    that did not parse is kept as it is: the same calls would come back from the cache."""
    if record.get("termination") == "error":
        return any(ev[0] == "model_error" for ev in record.get("events", []))
    return bool(record.get("unscored")) and record.get("attempts") == 0 and bool(record.get("error"))


def finished(store: RunStore, kind: str) -> set[str]:
    """The keys of ``kind`` that a resumed run does not do again."""
    return {k for k, d in store.items(kind) if not failed_call(d)}


async def unit(
    store: RunStore,
    kind: str,
    key: str,
    work: Work,
    *,
    redo_failed_calls: bool = False,
    redo_if: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Do one unit unless the store has it (with ``redo_failed_calls``: unless it has it and the unit did
    not end on a failed model call; with ``redo_if``: unless that says the stored record must be done
    again); write its record, calls and events in one transaction."""
    have = store.get(kind, key)
    redo = have is not None and ((redo_failed_calls and failed_call(have)) or (redo_if is not None and redo_if(have)))
    if have is not None and not redo:
        return have
    token = unit_calls.set([])
    try:
        record, events = await work()
        store.put(kind, key, record, calls=unit_calls.get(), events=events)
    finally:
        unit_calls.reset(token)
    return record


async def run_units(
    store: RunStore,
    kind: str,
    units: Sequence[tuple[str, Work]],
    *,
    concurrency: int = 32,
    progress: bool = True,
    label: str = "",
) -> UnitsDone:
    have = store.keys(kind)
    todo = [(k, w) for k, w in units if k not in have]
    bar = progress_bar(len(units), len(units) - len(todo), label or kind, enabled=progress, unit=kind)
    gate = asyncio.Semaphore(concurrency)

    async def one(key: str, work: Work) -> None:
        async with gate:
            await unit(store, kind, key, work)
            bar.update(1)

    try:
        async with asyncio.TaskGroup() as tg:
            for key, work in todo:
                tg.create_task(one(key, work))
    finally:
        bar.close()
    return UnitsDone(skipped=len(units) - len(todo), done=len(todo))
