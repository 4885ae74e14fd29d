"""emoharbor: evaluate and improve personalised emotional support."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__version__ = "0.1.0"

from . import kind_table  # noqa: F401  (the built-in kinds of run, into kinds.TABLE: names only)


def load_results(run: str | Path) -> Any:
    """A run folder's tidy results as a pandas DataFrame (see ``emoharbor.results``)."""
    from .results import load_results as load

    return load(run)
