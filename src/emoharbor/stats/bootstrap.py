"""Percentile bootstrap confidence intervals on a fixed seed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
