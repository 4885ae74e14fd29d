"""Bradley-Terry ratings by maximum likelihood (Newton on log-strengths, or Hunter's MM algorithm), with a
cluster bootstrap.

``wins[i, j]`` is the (possibly fractional) number of times ``i`` beat ``j``; a tie is half a win
each way. P(i beats j) = p_i / (p_i + p_j). Ratings are on the Elo scale: 1000 + 400 log10(p_i),
with the strengths normalised to a geometric mean of 1 over the rated competitors, so a 400-point
gap means 10:1 odds. ``prior`` adds that many pseudo-wins each way to every pair that was compared,
which keeps a competitor that never lost (or never won) finite; ``prior=0`` is the plain MLE
(-inf for a competitor with no wins). A competitor never compared gets NaN.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
ELO_BASE, ELO_SCALE = 1000.0, 400.0


def _counts(wins: Array, prior: float) -> tuple[Array, Array, NDArray[np.bool_]]:
    """With ``prior`` pseudo-wins each way on every compared pair: the games of each pair (..., k, k), each
    competitor's wins (..., k), and whether it was compared at all."""
    w = np.asarray(wins, dtype=np.float64)
    w = w + prior * ((w + np.swapaxes(w, -1, -2)) > 0)
    n = w + np.swapaxes(w, -1, -2)
    return n, w.sum(-1), n.sum(-1) > 0


def _strengths(wins: Array, prior: float, max_iter: int, tol: float) -> Array:
    """MM iterations, batched over leading axes: wins (..., k, k) -> strengths (..., k)."""
    n, won, compared = _counts(wins, prior)
    p = np.ones(won.shape)
    for _ in range(max_iter):
        s = p[..., :, None] + p[..., None, :]
        denom = np.divide(n, s, out=np.zeros_like(n), where=s > 0).sum(-1)
        new = np.divide(won, denom, out=np.ones_like(p), where=denom > 0)
        pos = (new > 0) & compared
        logs = np.log(np.where(pos, new, 1.0))
        shift = logs.sum(-1) / np.maximum(pos.sum(-1), 1)
        new = new / np.exp(shift)[..., None]
        done = float(np.max(np.abs(new - p))) < tol
        p = new
        if done:
            break
    return np.where(compared, p, np.nan)


def _newton(wins: Array, prior: float, max_iter: int = 100, tol: float = 1e-10) -> Array:
    """Newton's method on log-strengths, batched; for ``prior > 0``, where every compared pair has wins
    both ways and the MLE is finite. Returns natural-log strengths (mean 0 per component), NaN if uncompared."""
    n, won, compared = _counts(wins, prior)
    theta = np.zeros(won.shape)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[..., None, :] - theta[..., :, None]))  # P(i beats j)
        grad = won - (n * p).sum(-1)
        s = n * p * (1.0 - p)
        hess = -s  # the negative Hessian: a graph Laplacian, singular along constant shifts (pinv handles it)
        diag = np.arange(s.shape[-1])
        hess[..., diag, diag] += s.sum(-1)
        step = np.einsum("...ij,...j->...i", np.linalg.pinv(hess), grad)
        step = np.clip(step, -5.0, 5.0)
        theta = theta + step
        if float(np.max(np.abs(step))) < tol:
            break
    return np.where(compared, theta, np.nan)


def fit_bradley_terry(wins: Array, *, prior: float = 0.0, max_iter: int = 20000, tol: float = 1e-12) -> Array:
    """Elo-scale ratings (..., k) for win matrices (..., k, k): Newton's method when ``prior > 0``,
    the MM algorithm otherwise (it also handles competitors without wins)."""
    if prior > 0:
        theta = _newton(wins, prior)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a matrix without comparisons: all NaN
            mean = np.nanmean(theta, axis=-1, keepdims=True)
        return to_elo(theta - mean)
    p = _strengths(wins, prior, max_iter, tol)
    with np.errstate(divide="ignore"):
        return ELO_BASE + ELO_SCALE * np.log10(p)


def to_elo(theta: Array) -> Array:
    """Natural-log strengths on the Elo scale."""
    out: Array = ELO_BASE + ELO_SCALE * theta / np.log(10.0)
    return out


def history_draws(h: int, reps: int, seed: int) -> Array | None:
    """How often each of ``h`` histories is drawn in each of ``reps`` resamples (reps, h), the draws of
    ``bootstrap_intervals``. None without resamples."""
    if reps <= 0 or h == 0:
        return None
    rng = np.random.default_rng(seed)
    return np.stack([np.bincount(rng.integers(0, h, h), minlength=h) for _ in range(reps)]).astype(np.float64)


def win_probability(rating_i: float, rating_j: float) -> float:
    return 1.0 / (1.0 + math.pow(10.0, (rating_j - rating_i) / ELO_SCALE))


def bootstrap_intervals(
    per_cluster: Array, *, prior: float, reps: int, seed: int, level: float = 0.95
) -> tuple[Array, Array]:
    """Percentile intervals from resampling clusters (histories) with replacement.

    ``per_cluster``: (H, k, k), one win matrix per history. Returns (low, high), each (k,).
    """
    k = per_cluster.shape[1]
    counts = history_draws(per_cluster.shape[0], reps, seed)
    if counts is None:
        nan = np.full(k, np.nan)
        return nan, nan.copy()
    samples = np.tensordot(counts, per_cluster, axes=(1, 0))  # (reps, k, k)
    ratings = fit_bradley_terry(samples, prior=prior, max_iter=5000, tol=1e-9)
    tail = (1.0 - level) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a competitor never compared: NaN
        low = np.nanquantile(ratings, tail, axis=0, method="lower")
        high = np.nanquantile(ratings, 1.0 - tail, axis=0, method="higher")
    return low, high
