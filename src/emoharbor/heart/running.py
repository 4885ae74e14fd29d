"""Running a stage's units: models built on first use, and model-call errors retried on a rerun."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..config import ModelSpec
from ..models.base import ChatModel
from ..store.run_store import RunStore, unit_calls
from ..store.units import Work, run_units

GetModel = Callable[[ModelSpec, str], Awaitable[ChatModel]]


class LazyModels:
    """Builds each model on first use, so a resumed stage with nothing left to do starts no server."""

    def __init__(self, get_model: GetModel) -> None:
        self._get = get_model
        self._models: dict[str, ChatModel] = {}
        self._lock = asyncio.Lock()

    async def get(self, key: str, spec: ModelSpec, role: str) -> ChatModel:
        async with self._lock:
            if key not in self._models:
                self._models[key] = await self._get(spec, role)
            return self._models[key]


Result = tuple[dict[str, Any], list[tuple[str, str]]]


async def run_stage(store: RunStore, kind: str, units: list[tuple[str, Work]], concurrency: int,
                    progress: bool) -> tuple[int, int]:  # fmt: skip
    """``run_units``, then once more for the units whose stored record is a model-call error (a rerun
    of a stage retries what failed for good last time). Returns (units done now, units resumed)."""
    errored = {k for k, d in store.items(kind) if d.get("status") == "error"}
    done = await run_units(store, kind, units, concurrency=concurrency, progress=progress)
    redo = [(k, w) for k, w in units if k in errored]
    gate = asyncio.Semaphore(concurrency)

    async def one(key: str, work: Work) -> None:
        async with gate:
            unit_calls.set([])
            record, events = await work()
            store.put(kind, key, record, calls=unit_calls.get(), events=events)

    async with asyncio.TaskGroup() as tg:
        for key, work in redo:
            tg.create_task(one(key, work))
    return done.done + len(redo), done.skipped - len(redo)
