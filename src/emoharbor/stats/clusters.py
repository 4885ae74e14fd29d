"""The bootstrap over clusters (talks, cases): whole clusters are resampled with replacement, so that items of
one cluster, which are not independent, move together.

- ``cluster_draws``: how many times each cluster is drawn in each resample (resamples x clusters), on a fixed
  seed; every figure of a table computed from the same draws stands on the same resamples.
- ``ratio_rows``: a ratio of sums over clusters (the share of pairs that agree: agreeing pairs over pairs) in
  every resample.
- ``weighted_ranks`` / ``weighted_spearman_rows``: Spearman's rho of the items of every resample, a cluster
  drawn twice counting its items twice, computed from the draws as weights (no resample is built):
  the mid-ranks of the resample are the weight of the values below plus half the weight of the equal ones
  (plus one half), exactly the ranks ``correlation.rankdata`` gives the resample written out.
- ``percentile``: the percentile interval of those values (``correlation.percentile``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .bootstrap import Estimate
from .correlation import percentile, spearman

CHUNK_CELLS = 1 << 21  # resample x item values computed at once


def cluster_draws(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_clusters): how many times each cluster is drawn in each resample of ``n_clusters`` draws."""
    idx = np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))
    offsets = (np.arange(n_boot) * n_clusters)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=n_boot * n_clusters).reshape(n_boot, n_clusters)


def ratio_rows(sums: np.ndarray, sizes: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """sum(sums) / sum(sizes) over the clusters of each resample (NaN where the resample has no size)."""
    top, bottom = draws @ np.asarray(sums, dtype=float), draws @ np.asarray(sizes, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def ratio_ci(sums: np.ndarray, sizes: np.ndarray, draws: np.ndarray, level: float = 0.95) -> Estimate:
    """The ratio over every cluster, with its percentile interval over ``draws``; n: the clusters with a size."""
    sums, sizes = np.asarray(sums, dtype=float), np.asarray(sizes, dtype=float)
    n = int((sizes > 0).sum())
    if n == 0:
        return Estimate(None, None, None, 0)
    value = float(sums.sum() / sizes.sum())
    if n < 2:
        return Estimate(value, None, None, n)
    return percentile(value, ratio_rows(sums, sizes, draws), n, draws.shape[0], level)


def cluster_mean_ci(groups: Sequence[Sequence[float]], *, seed: int = 0, n_boot: int = 2000) -> Estimate:
    """The mean over every value of ``groups`` with a percentile interval from resampling whole groups (the
    values of one case, or one history, go together); ``n`` is the number of groups."""
    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    sums, sizes = np.array([g.sum() for g in arrays]), np.array([g.size for g in arrays])
    if n_boot <= 0:
        return Estimate(float(sums.sum() / sizes.sum()) if arrays else None, None, None, len(arrays))
    return ratio_ci(sums, sizes, cluster_draws(len(arrays), n_boot, seed))


def weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The mid-ranks of ``x`` (items) in each row of weights ``w`` (rows x items): an item of weight k counts
    as k equal values, an item of weight 0 as none (its rank is then of no use)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    first = np.ones(x.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(first) - 1  # each sorted item's run of equal values
    ends = np.append(np.flatnonzero(first)[1:], x.size) - 1
    upto = np.cumsum(np.asarray(w, dtype=float)[:, order], axis=1)[:, ends]  # weight up to each run's end
    before = np.concatenate([np.zeros((upto.shape[0], 1)), upto[:, :-1]], axis=1)
    mid = before + (upto - before + 1) / 2
    out = np.empty(upto.shape[:1] + x.shape)
    out[:, order] = mid[:, group]
    return out


def weighted_spearman_rows(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Spearman's rho of ``x`` and ``y`` (items) in each row of weights ``w`` (rows x items): the weighted
    Pearson correlation of the weighted ranks; NaN where a side is constant. Rows are taken in chunks, so that
    memory stays bounded at many items."""
    w = np.asarray(w, dtype=float)
    step = max(1, CHUNK_CELLS // max(1, w.shape[1]))
    out = []
    for s in range(0, w.shape[0], step):
        part = w[s : s + step]
        a, b, total = weighted_ranks(x, part), weighted_ranks(y, part), part.sum(1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            da = a - (part * a).sum(1, keepdims=True) / total
            db = b - (part * b).sum(1, keepdims=True) / total
            den = np.sqrt((part * da * da).sum(1) * (part * db * db).sum(1))
            out.append(np.where(den > 1e-12, (part * da * db).sum(1) / np.where(den > 1e-12, den, 1.0), np.nan))
    return np.concatenate(out) if out else np.zeros(0)


def item_draws(clusters: Sequence[object], n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, items): how many times each item is drawn when the clusters its items name (one per item) are
    resampled whole (``cluster_draws``)."""
    codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1].reshape(-1)
    n = int(codes.max()) + 1 if codes.size else 0
    return cluster_draws(n, n_boot, seed)[:, codes]


def spearman_cluster_ci(x: Sequence[float], y: Sequence[float], clusters: Sequence[object], *, seed: int = 0,
                        n_boot: int = 2000, level: float = 0.95) -> Estimate:  # fmt: skip
    """Spearman's rho of the pairs (x, y) with a percentile interval from resampling clusters (the replies to one
    prompt together); ``n`` is the number of clusters."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len({str(c) for c in clusters})
    value = spearman(a, b)
    if value is None or n < 2 or n_boot <= 0:
        return Estimate(value, None, None, n)
    return percentile(value, weighted_spearman_rows(a, b, item_draws(clusters, n_boot, seed)), n, n_boot, level)
