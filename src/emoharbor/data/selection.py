"""Which records of the given sources a run takes, the one way every command that reads sources does it
(``validate``, ``sensitivity``, ``seekers``, ``realism``, HEART's history sources, the study's items): ``--limit
N`` (the first N of each source) or ``--sample N`` (N of each drawn with ``--seed``), checked by
``check_selection``, and the sources taken in turn, so that a run stopped early holds about as many of each
(``choose``). GRPO's contexts are drawn spread over sources and dialogues (``spread``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ..errors import ConfigError, DataError

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


def choose(sources: Sequence[tuple[Path, Sequence[T]]], limit: int | None, sample: int | None, seed: int,
           ident: Callable[[T], str], what: str) -> list[T]:  # fmt: skip
    """``select`` in each source, the sources taken in turn (``in_turn``); an item whose ``ident`` is also in an
    earlier source (two files of one name) is one line naming both (``what``: "talk", "record id")."""
    seen: dict[str, Path] = {}
    chosen = []
    for path, items in sources:
        picked = select(items, limit, sample, seed)
        for item in picked:
            name = ident(item)
            if name in seen:
                raise DataError(f"{path}: {what} {name} is also in {seen[name]}: give files with different names")
            seen[name] = path
        chosen.append(picked)
    return in_turn(chosen)


def spread(items: Sequence[T], n: int | None, seed: int, dialog: Callable[[T], str],
           source: Callable[[T], str] = lambda _: "") -> list[T]:  # fmt: skip
    """A seeded sample of ``n`` items (all when None) spread over them: the sources taking turns (so that a small
    source is not drowned by a large one) and, within a source, one item per dialogue before a second of the
    same (GRPO's contexts)."""
    rng = random.Random(seed)
    queues: dict[str, list[T]] = {}
    for x in items:
        queues.setdefault(source(x), []).append(x)
    for key, pool in queues.items():
        rng.shuffle(pool)
        seen: set[str] = set()
        first: list[T] = []
        rest: list[T] = []
        for c in pool:
            (rest if dialog(c) in seen else first).append(c)
            seen.add(dialog(c))
        queues[key] = first + rest
    return in_turn(list(queues.values()))[:n]


def in_turn(per_source: Sequence[Sequence[T]]) -> list[T]:
    """The items of every source taken in turn: the first of each, then the second of each..."""
    longest = max((len(s) for s in per_source), default=0)
    return [s[i] for i in range(longest) for s in per_source if i < len(s)]
