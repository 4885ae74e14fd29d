"""What the commands that score replies or messages (``emoharbor validate``, ``sensitivity``, ``seekers``,
``realism``) share: the options of their run folder, the judge cards asked for, and the start of the run (their
models' options: ``options.model_options``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .options import concurrency_opt, format_opt, run_dir_opt, stacked

F = TypeVar("F", bound=Callable[..., Any])


def scorer_options(kind: str) -> Callable[[F], F]:
    """``--concurrency``, ``--run-dir`` (default ``runs/KIND-HASH``) and ``--format``."""
    return stacked(concurrency_opt, run_dir_opt(f"runs/{kind}-HASH"), format_opt)


def judge_cards(judges: tuple[str, ...], default: list[str]) -> list[str]:
    """The ``--judge`` cards: ``default`` where none is given, no card for ``none`` (the simulated user alone;
    each suite's options refuse a run left with no scorer)."""
    return [] if judges == ("none",) else list(judges) or default


def run_scorers(kind: str, opts: Any, plan_of: Callable[[Any], Any], sets: tuple[str, ...], example: str,
                run_dir: Path | None, *, fmt: str, progress: bool, seed: int) -> None:  # fmt: skip
    """Run the plan ``plan_of`` makes of ``opts``, changed by ``--set`` (``example``: its example in an error), as a
    run of ``kind`` in ``run_dir`` (default: ``runs/KIND-HASH``, the hash of the options resolved)."""
    from .. import kinds
    from ..overrides import parse_sets, with_sets
    from ..store.record import hash_config
    from .runs import run_kind

    opts = with_sets(opts, parse_sets(sets, example), f"the {kind} options")
    plan = plan_of(opts)
    folder = run_dir or Path("runs") / f"{kind}-{hash_config(opts.resolved())[:8]}"
    run_kind(kinds.of(kind), plan, folder, fmt=fmt, progress=progress, seed=seed)
