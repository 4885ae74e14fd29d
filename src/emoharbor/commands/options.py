"""The ``--set KEY=VALUE`` option (see ``emoharbor.overrides`` for what it takes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def set_option(example: str) -> Callable[[F], F]:
    """The ``--set`` option (its values reach the command as ``sets``); ``example``: ``concurrency=4``."""
    return click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help=f"change one setting, e.g. --set {example}; KEY dotted for a nested setting, VALUE as YAML (repeatable)",
    )


# ``--quiet``: the command's work shows no progress bar (it reaches the command as ``no_progress``)
progress_opt = click.option("--quiet", "no_progress", is_flag=True, help="No progress bar.")
