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


async def unit(store: RunStore, kind: str, key: str, work: Work) -> dict[str, Any]:
    """Do one unit unless the store has it; write its record, calls and events in one transaction."""
    have = store.get(kind, key)
    if have is not None:
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
