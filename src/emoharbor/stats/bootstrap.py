"""Percentile bootstrap confidence intervals on a fixed seed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Stat = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class Estimate:
    value: float | None
    lo: float | None
    hi: float | None
    n: int

    def fmt(self, digits: int = 2) -> str:
        if self.value is None:
            return "n/a"
        if self.lo is None or self.hi is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def bootstrap_ci(
    values: Sequence[float], stat: Stat = np.mean, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Estimate:
    """The statistic of ``values`` with a percentile bootstrap interval (resampling the values).

    Fewer than two values: the statistic alone, no interval.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Estimate(None, None, None, 0)
    value = float(stat(x))
    if x.size < 2:
        return Estimate(value, None, None, int(x.size))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = np.array([stat(x[i]) for i in idx])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return Estimate(value, float(lo), float(hi), int(x.size))


MIN_N = 5  # fewer values than this: no interval is shown ("n too small") and nothing is coloured
TOO_SMALL = "n too small"


def too_small(n: int | None) -> bool:
    """Whether an estimate over ``n`` values (1 to ``MIN_N`` - 1) is shown without an interval."""
    return 0 < int(n or 0) < MIN_N


def margin_verdict(lo: float | None, hi: float | None) -> str:
    """What a margin over a baseline says: ``yes`` (its interval lies above 0), ``below`` (under 0), ``no`` (it
    holds 0), ``n/a`` (no interval)."""
    if lo is None or hi is None:
        return "n/a"
    return "yes" if lo > 0 else "below" if hi < 0 else "no"


def shown(e: Estimate) -> dict[str, Any]:
    """An estimate as tables and charts show it: under ``MIN_N`` values without an interval (it would mean
    nothing)."""
    small = too_small(e.n)
    return {"mean": e.value, "lo": None if small else e.lo, "hi": None if small else e.hi, "n": e.n}


def paired_difference(diffs: Sequence[float], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[
        str, float | int | None]:  # fmt: skip
    """The mean of paired differences (the same profile and repeat on both sides) with a percentile bootstrap
    interval over the pairs, the bootstrap probability that the mean is above 0, and a two-sided bootstrap p
    (twice the smaller tail, ties at 0 in both). Under ``MIN_N`` pairs: the mean alone."""
    x = np.asarray(diffs, dtype=float)
    if x.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "p_above_0": None, "p": None}
    mean = float(x.mean())
    if x.size < MIN_N:
        return {"mean": mean, "lo": None, "hi": None, "n": int(x.size), "p_above_0": None, "p": None}
    rng = np.random.default_rng(seed)
    boots = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    # two-sided: twice the smaller tail, a resample whose mean is exactly 0 counted in both tails (with
    # differences of whole scale points that happens often; all of them 0 is p = 1, not "significant")
    tail = min(int((boots <= 0).sum()), int((boots >= 0).sum()))
    return {"mean": mean, "lo": float(lo), "hi": float(hi), "n": int(x.size), "p_above_0": float((boots > 0).mean()),
            "p": min(1.0, 2 * (tail + 1) / (n_boot + 1))}  # fmt: skip


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``pvalues`` (None stays None), for a family such as the 10 dimensions."""
    known = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (len(known) - rank) * p))
        out[i] = running
    return out
