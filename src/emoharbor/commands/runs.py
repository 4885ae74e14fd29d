"""The one ending of every command that makes a run (``run``, ``demo``, ``validate``, ``sensitivity``): its
kind's checks, the run, its summary line, its table, and exit status 2 when every unit ended in error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..kinds import RunKind
    from ..store.run_store import RunStore


def run_kind(kind: RunKind, plan: Any, folder: Path, *, fmt: str, progress: bool, seed: int = 0,
             show: Callable[[RunStore], None] | None = None) -> None:  # fmt: skip
    """Check ``plan`` (the models too when ``folder`` holds no run yet), run it in ``folder``, print its summary
    and its table (``show``: something printed before the table)."""
    from ..errors import EmoharborError
    from ..preflight import is_new_run
    from ..report.timings import by_step, timings_text
    from ..store.run_store import RunStore

    kind.check(plan, new=is_new_run(folder))
    click.echo(f"run folder: {folder}", err=True)
    started = time.perf_counter()
    summary = asyncio.run(kind.execute(plan, folder, progress=progress))
    click.echo(summary.line(time.perf_counter() - started), err=True)
    store = RunStore.open_existing(folder)
    try:
        if show is not None:
            show(store)
        click.echo(kind.board(store, fmt, seed=seed)[0])
        timed = timings_text(by_step(store.calls())) if fmt == "text" else ""
        if timed:
            click.echo("\n" + timed, err=True)
    finally:
        store.close()
    if summary.all_failed:
        raise EmoharborError(f"every {summary.unit} ended in error: see `emoharbor export {folder}` (events)")
