"""Which records of the given sources a run takes, the one way the commands that read sources do it
(``validate``, ``sensitivity``, ``seekers``): ``--limit N`` (the first N of each source) or ``--sample N``
(N of each drawn with ``--seed``), and the sources taken in turn, so that a run stopped early holds about as
many of each."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from ..errors import ConfigError

T = TypeVar("T")


def check_selection(limit: int | None, sample: int | None, unit: str) -> None:
    """``--limit N`` or ``--sample N`` of ``unit`` ("records", "cases", "talks"), not both, each at least 1."""
    if limit is not None and sample is not None:
        raise ConfigError(f"give --limit N (the first N {unit}) or --sample N (N at random), not both")
    for name, v in (("limit", limit), ("sample", sample)):
        if v is not None and v < 1:
            raise ConfigError(f"--{name} must be at least 1, not {v}")


def select(items: Sequence[T], limit: int | None, sample: int | None, seed: int) -> list[T]:
    """The first ``limit`` items of a source, or ``sample`` of them drawn with ``seed`` (in their order in the
    source), or all."""
    if sample is not None:
        picked = sorted(random.Random(seed).sample(range(len(items)), min(sample, len(items))))
        return [items[i] for i in picked]
    return list(items[:limit] if limit is not None else items)


def in_turn(per_source: Sequence[Sequence[T]]) -> list[T]:
    """The items of every source taken in turn: the first of each, then the second of each..."""
    longest = max((len(s) for s in per_source), default=0)
    return [s[i] for i in range(longest) for s in per_source if i < len(s)]
