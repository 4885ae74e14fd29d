"""The scorers' units done in a run store: the models of the scorers with units left started (nothing when
none is left), each unit done once and kept, one case's units by one scorer in a row (their prompts share the
case's long prefix, so a server slot reads it once), the run's model time kept across sessions."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path

from ..assess.stage import Judge
from ..models.pool import ModelPool
from ..store.run_store import RunStore, call_sink
from ..store.units import WallTime, finished, in_groups, progress_bar, unit
from .items import Item, scorer_models, work_of
from .names import USER
from .options import ScorerOptions


def same_prefix(item: Item) -> Hashable:
    """The items whose prompts share a long prefix: one case, one scorer."""
    return item.case.id, item.judge.name if item.judge is not None else USER


def left(store: RunStore, items: list[Item]) -> list[Item]:
    """The items a resumed run still does (not finished, or ended in an error)."""
    done = {table: finished(store, table) for table in {i.table for i in items}}
    return [i for i in items if i.key not in done[i.table]]


async def score(store: RunStore, items: list[Item], opts: ScorerOptions, judges: list[Judge], *, label: str,
                progress: bool = True, cache_path: Path | bool | None = True,
                group: Callable[[Item], Hashable] = same_prefix) -> int:  # fmt: skip
    """Do the items not done yet, ``opts.concurrency`` groups at a time; returns how many there were."""
    todo = left(store, items)
    if not todo:  # nothing left: no server is started
        return 0
    clock = WallTime(store)
    async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
        reward, models = await scorer_models(pool, todo, opts.user, opts.reward, judges)
        bar = progress_bar(len(items), len(items) - len(todo), label, enabled=progress, unit="score")

        async def one(item: Item) -> None:
            await unit(store, item.table, item.key, work_of(item, reward, models, opts.seed))
            clock.mark()
            bar.update(1)

        try:
            await in_groups(todo, group, one, opts.concurrency)
        finally:
            bar.close()
    return len(todo)
