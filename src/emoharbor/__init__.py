"""emoharbor: evaluate and improve personalised emotional support."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__version__ = "0.1.0"


def load_results(run: str | Path) -> Any:
    """A run folder's tidy results as a pandas DataFrame (see ``emoharbor.results``)."""
    from .results import load_results as load

    return load(run)
