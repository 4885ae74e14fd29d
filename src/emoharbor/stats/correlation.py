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
  interval, much faster; ``spearman_ci`` and ``auroc_ci`` use it. A column may be a matrix (one row per
  item): ``minus_best_rows`` takes the baselines as one and gives a statistic minus the best baseline's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .bootstrap import Estimate

PairStat = Callable[..., float | None]


def rankdata(values: Sequence[float] | np.ndarray) -> np.ndarray:
    return rank_rows(np.asarray(values, dtype=float).reshape(-1))


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"spearman needs paired values: {a.size} and {b.size}")
    return _defined(spearman_rows(a, b)) if a.size >= 2 else None


def auroc(scores: Sequence[float] | np.ndarray, positive: Sequence[bool] | np.ndarray) -> float | None:
    s = np.asarray(scores, dtype=float)
    pos = np.asarray(positive, dtype=bool)
    if s.shape != pos.shape:
        raise ValueError(f"auroc needs one label per score: {s.size} scores, {pos.size} labels")
    return _defined(auroc_rows(s, pos))


def _defined(v: np.ndarray) -> float | None:
    """A statistic of one sample (``*_rows`` of a 1-D array), None where it is undefined (NaN)."""
    return float(v) if np.isfinite(v) else None


def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def percentile(value: float | None, boots: np.ndarray, n: int, n_boot: int, level: float) -> Estimate:
    """``value`` with the percentile interval of the resamples' values ``boots`` (NaN where undefined): none
    when fewer than half of the ``n_boot`` resamples give a value."""
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
    return percentile(value, np.array([np.nan if b is None else b for b in boots], dtype=float), n, n_boot, level)


# -- the same, vectorised over resamples (one row per resample); undefined values are NaN --------------------
RowStat = Callable[..., np.ndarray]


def rank_rows(x: np.ndarray) -> np.ndarray:
    """``rankdata`` along the last axis, tied values given the mean of the positions they span: each row
    sorted once (O(n log n)), or, for rows of small non-negative integers (``order_codes``), counted (O(n))."""
    a = np.asarray(x)
    if a.size == 0:
        return np.zeros(a.shape)
    n = a.shape[-1]
    rows = a.reshape(-1, n)
    if a.dtype.kind in "iu" and rows.min() >= 0 and rows.max() < 2 * n:
        return _counted_ranks(rows).reshape(a.shape)
    rows = rows.astype(float)
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    first = np.empty(rows.shape, dtype=bool)  # where a run of equal values starts
    first[:, 0] = True
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = np.flatnonzero(first)  # positions in the rows laid end to end: a run never spans two rows
    ends = np.append(starts[1:], first.size) - 1
    mean_rank = (starts + ends) / 2 % n + 1  # both ends lie in one row: the mean position in it, 1-based
    out = np.empty(rows.shape)
    np.put_along_axis(out, order, np.repeat(mean_rank, ends - starts + 1).reshape(rows.shape), axis=1)
    return out.reshape(a.shape)


def _counted_ranks(codes: np.ndarray) -> np.ndarray:
    """Ranks of rows of integers in [0, g): each value's count per row, their running sum the last rank."""
    r, g = codes.shape[0], int(codes.max()) + 1
    counts = np.bincount((codes + g * np.arange(r)[:, None]).ravel(), minlength=r * g).reshape(r, g)
    mean_rank = counts.cumsum(1) - (counts - 1) / 2
    return np.take_along_axis(mean_rank, codes, axis=1)


def order_codes(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Each value replaced by the place of its value among the distinct ones (0 = the smallest), per column
    of a matrix. Rank statistics (Spearman, AUROC) give the same on these, and ``rank_rows`` ranks
    resamples of them by counting instead of sorting."""
    a = np.asarray(values, dtype=float)
    if a.ndim == 1:
        return np.unique(a, return_inverse=True)[1].reshape(a.shape)
    return np.stack([order_codes(a[:, j]) for j in range(a.shape[1])], axis=1) if a.size else a.astype(int)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho along the last axis (leading axes broadcast: one ``y`` against many ``x``)."""
    rx, ry = rank_rows(x), rank_rows(y)
    dx, dy = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
    den = np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (dx * dy).sum(-1) / np.where(den > 0, den, 1.0), np.nan)


def auroc_rows(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """AUROC along the last axis (leading axes broadcast)."""
    pos = np.asarray(positive, dtype=bool)
    ranks = rank_rows(scores)
    n_pos = pos.sum(-1)
    n_neg = pos.shape[-1] - n_pos
    u = (ranks * pos).sum(-1) - n_pos * (n_pos + 1) / 2
    both = (n_pos > 0) & (n_neg > 0)
    return np.where(both, u / np.where(both, n_pos * n_neg, 1), np.nan)


def _each(stat: RowStat, m: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``stat`` of every column of ``m`` (resamples, items, columns) against ``t``: (resamples, columns)."""
    return stat(np.swapaxes(m, -1, -2), t[..., None, :])


def columns_rows(stat: RowStat) -> RowStat:
    """``(m, t) -> stat(m[..., j], t)`` for every column j of a matrix: several scores on the same items."""
    return lambda m, t: _each(stat, m, t)


def difference_rows(stat: RowStat) -> RowStat:
    """``(a, b, t) -> stat(a, t) - stat(b, t)``: one score's statistic minus another's on the same items."""
    return lambda a, b, t: stat(a, t) - stat(b, t)


def minus_best_rows(stat: RowStat) -> RowStat:
    """``(x, b, t) -> stat(x, t) - max_j stat(b[..., j], t)``: a score's statistic minus the best of several
    baseline columns (the last axis of ``b``), the best chosen anew in every resample, so that the interval
    from ``bootstrap_rows`` counts the choosing too. A baseline undefined in a resample (a constant column)
    is passed over; with none defined the margin is undefined. ``x`` may be a matrix of several scores
    (items x scores): one margin per score, against the same best baseline."""

    def rows(x: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
        several = x.ndim == b.ndim
        own = _each(stat, x, t) if several else stat(x, t)
        if b.shape[-1] == 0:
            return np.full(own.shape, np.nan)
        best = np.fmax.reduce(_each(stat, b, t), axis=-1)
        return np.asarray(own - (best[..., None] if several else best))

    return rows


CHUNK_CELLS = 1 << 22  # resampled values computed at once (bounds the memory of many columns at large n)


def bootstrap_many(
    stat: RowStat, *columns: Sequence[float] | np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> list[Estimate]:
    """``bootstrap_rows`` for a statistic that gives several values per resample (an array (resamples, k),
    e.g. ``columns_rows``): one estimate each, all from the same resamples. Nothing when there are no rows."""
    cols, n = _columns(columns)
    if n == 0:
        return []
    point = np.asarray(stat(*(c[None, :] for c in cols)), dtype=float).reshape(-1)
    values = [float(v) if np.isfinite(v) else None for v in point]
    if n < 2 or all(v is None for v in values):
        return [Estimate(v, None, None, n) for v in values]
    idx = _resamples(n, n_boot, seed)
    width = sum(int(np.prod(c.shape[1:])) for c in cols) or 1
    step = max(1, CHUNK_CELLS // (n * width))
    boots = np.concatenate(
        [
            np.asarray(stat(*(c[idx[a : a + step]] for c in cols)), dtype=float).reshape(-1, len(values))
            for a in range(0, n_boot, step)
        ]
    )
    return [
        Estimate(None, None, None, n) if v is None else percentile(v, boots[:, j], n, n_boot, level)
        for j, v in enumerate(values)
    ]


def bootstrap_rows(
    stat: RowStat, *columns: Sequence[float] | np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Estimate:
    """``paired_bootstrap`` for a statistic computed on many resamples at once: the same resamples (same
    seed, same draws), the same interval; fast enough for many cells of a few thousand conversations."""
    got = bootstrap_many(stat, *columns, n_boot=n_boot, seed=seed, level=level)
    return got[0] if got else Estimate(None, None, None, 0)


def spearman_ci(x: Sequence[float], y: Sequence[float], *, seed: int = 0, n_boot: int = 2000) -> Estimate:
    return bootstrap_rows(spearman_rows, x, y, seed=seed, n_boot=n_boot)


def auroc_ci(scores: Sequence[float], positive: Sequence[bool], *, seed: int = 0, n_boot: int = 2000) -> Estimate:
    return bootstrap_rows(auroc_rows, scores, positive, seed=seed, n_boot=n_boot)
