"""Rank correlation, AUROC and paired bootstrap intervals, with numpy only.

- ``rankdata``: 1-based ranks, tied values share the mean of the ranks they span.
- ``spearman``: Pearson's correlation of those ranks (the tie-corrected Spearman rho); ``None`` when it is
  undefined (fewer than two pairs, or one side constant).
- ``auroc``: the probability that a random positive scores higher than a random negative, ties counting
  one half (the Mann-Whitney U over n_pos * n_neg); ``None`` when a class is empty.
- ``paired_bootstrap``: resamples whole rows (the pairs stay together) on a fixed seed and takes the
  percentile interval of the statistic over the resamples where it is defined. When fewer than half of the
  resamples give a value (tiny or nearly constant samples), no interval is given. ``bootstrap_rows`` does
  the same with a statistic vectorised over resamples (``spearman_rows``, ``auroc_rows``): same draws, same
  interval, much faster; ``spearman_ci`` and ``auroc_ci`` use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .bootstrap import Estimate

PairStat = Callable[..., float | None]


def rankdata(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return np.zeros(0)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # the last rank each distinct value spans (1-based)
    mean_rank = ends - (counts - 1) / 2  # the mean of ranks ends-counts+1 .. ends
    return np.asarray(mean_rank[inverse.reshape(-1)], dtype=float)


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 2:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    den = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    if den == 0.0:
        return None
    return float((dx * dy).sum() / den)


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"spearman needs paired values: {a.size} and {b.size}")
    return pearson(rankdata(a), rankdata(b))


def auroc(scores: Sequence[float] | np.ndarray, positive: Sequence[bool] | np.ndarray) -> float | None:
    s = np.asarray(scores, dtype=float)
    pos = np.asarray(positive, dtype=bool)
    if s.shape != pos.shape:
        raise ValueError(f"auroc needs one label per score: {s.size} scores, {pos.size} labels")
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s)
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _interval(value: float | None, boots: np.ndarray, n: int, n_boot: int, level: float) -> Estimate:
    got = boots[np.isfinite(boots)]
    if got.size < n_boot / 2:
        return Estimate(value, None, None, n)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(got, [alpha, 1 - alpha])
    return Estimate(value, float(lo), float(hi), n)


def _columns(columns: tuple[Sequence[float] | np.ndarray, ...]) -> tuple[list[np.ndarray], int]:
    cols = [np.asarray(c) for c in columns]
    n = cols[0].shape[0] if cols else 0
    if any(c.shape[0] != n for c in cols):
        raise ValueError("a paired bootstrap needs columns of the same length")
    return cols, int(n)


def paired_bootstrap(
    stat: PairStat,
    *columns: Sequence[float] | np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """``stat(*columns)`` with a percentile interval from resampling rows (all columns together)."""
    cols, n = _columns(columns)
    value = stat(*cols) if n else None
    if value is None or n < 2:
        return Estimate(value, None, None, n)
    boots = [stat(*(c[i] for c in cols)) for i in _resamples(n, n_boot, seed)]
    return _interval(value, np.array([np.nan if b is None else b for b in boots], dtype=float), n, n_boot, level)


# -- the same, vectorised over resamples (one row per resample); undefined values are NaN --------------------
RowStat = Callable[..., np.ndarray]
CHUNK_CELLS = 4_000_000  # rows x n x n comparisons per chunk when ranking


def rank_rows(x: np.ndarray) -> np.ndarray:
    """``rankdata`` of every row: (values below) + (values equal, itself included, + 1) / 2."""
    out = np.empty(x.shape, dtype=float)
    step = max(1, CHUNK_CELLS // max(1, x.shape[1] ** 2))
    for a in range(0, x.shape[0], step):
        c = x[a : a + step]
        below = (c[:, None, :] < c[:, :, None]).sum(-1)
        equal = (c[:, None, :] == c[:, :, None]).sum(-1)
        out[a : a + step] = below + (equal + 1) / 2
    return out


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    rx, ry = rank_rows(np.asarray(x, dtype=float)), rank_rows(np.asarray(y, dtype=float))
    dx, dy = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
    den = np.sqrt((dx * dx).sum(1) * (dy * dy).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (dx * dy).sum(1) / np.where(den > 0, den, 1.0), np.nan)


def auroc_rows(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    pos = np.asarray(positive, dtype=bool)
    ranks = rank_rows(np.asarray(scores, dtype=float))
    n_pos = pos.sum(1)
    n_neg = pos.shape[1] - n_pos
    u = (ranks * pos).sum(1) - n_pos * (n_pos + 1) / 2
    both = (n_pos > 0) & (n_neg > 0)
    return np.where(both, u / np.where(both, n_pos * n_neg, 1), np.nan)


def bootstrap_rows(
    stat: RowStat, *columns: Sequence[float] | np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Estimate:
    """``paired_bootstrap`` for a statistic computed on many resamples at once: the same resamples (same
    seed, same draws), the same interval; fast enough for many cells of a few hundred conversations."""
    cols, n = _columns(columns)
    if n == 0:
        return Estimate(None, None, None, 0)
    v = float(stat(*(c[None, :] for c in cols))[0])
    value = v if np.isfinite(v) else None
    if value is None or n < 2:
        return Estimate(value, None, None, n)
    idx = _resamples(n, n_boot, seed)
    return _interval(value, stat(*(c[idx] for c in cols)), n, n_boot, level)


def spearman_ci(x: Sequence[float], y: Sequence[float], *, seed: int = 0, n_boot: int = 2000) -> Estimate:
    return bootstrap_rows(spearman_rows, x, y, seed=seed, n_boot=n_boot)


def auroc_ci(scores: Sequence[float], positive: Sequence[bool], *, seed: int = 0, n_boot: int = 2000) -> Estimate:
    return bootstrap_rows(auroc_rows, scores, positive, seed=seed, n_boot=n_boot)
