"""What the commands that score replies or messages (``emoharbor sensitivity``, ``seekers``, ``realism``) share:
the options of their run folder, the judge cards asked for, and the start of the run (their models' options:
``models.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def scorer_options(kind: str) -> Callable[[F], F]:
    """``--concurrency``, ``--run-dir`` (default ``runs/KIND-HASH``) and ``--format``."""
    options = [
        click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256)),
        click.option("--run-dir", type=click.Path(path_type=Path), help=f"Run folder (default: runs/{kind}-HASH)."),
        click.option(
            "--format", "fmt", type=click.Choice(["text", "md", "json", "csv"]), default="text", show_default=True
        ),
    ]

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def judge_cards(judges: tuple[str, ...], default: list[str]) -> list[str]:
    """The ``--judge`` cards: ``default`` where none is given, no card for ``none`` (the simulated user alone;
    each suite's options refuse a run left with no scorer)."""
    return [] if judges == ("none",) else list(judges) or default


def run_scorers(kind: str, plan: Any, resolved: dict[str, Any], run_dir: Path | None, *, fmt: str, progress: bool,
                seed: int) -> None:  # fmt: skip
    """Run ``plan`` of ``kind`` in ``run_dir`` (default: ``runs/KIND-HASH``, the hash of the ``resolved`` options)."""
    from .. import kinds
    from ..store.record import hash_config
    from .runs import run_kind

    folder = run_dir or Path("runs") / f"{kind}-{hash_config(resolved)[:8]}"
    run_kind(kinds.of(kind), plan, folder, fmt=fmt, progress=progress, seed=seed)
