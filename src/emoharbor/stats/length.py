"""Length control: what a judge says beyond the length of what it read, with numpy only.

Every judge so far has lost to a word count (docs/validate.md), so each validity figure has a
length-controlled twin:

- ``logistic_fit``: an L2-regularised logistic regression by Newton's method (IRLS), batched over leading
  axes, with fractional outcomes and weights (a weight of 0 leaves a row out; a weight of 2 counts it twice,
  as a bootstrap resample does);
- ``cv_auroc_gain``: the cross-validated AUROC of a logistic regression on [words, score] minus that of one
  on words alone, with a bootstrap interval that redoes the cross-validation in every resample;
- ``partial_spearman`` / ``partial_spearman_rows``: Spearman's rho of a score with a target, a third variable
  (the word count) partialled out on ranks;
- ``length_controlled_bt``: Bradley-Terry strengths fitted beside a length term, the AlpacaEval 2 way:
  logit P(a beats b) = theta_a - theta_b + gamma * tanh(d / s), d the words of a minus the words of b and s
  the root mean square of d over the verdicts, so that the strengths are what is left with the length
  difference held at 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from .bootstrap import Estimate
from .correlation import _resamples, auroc_rows, percentile, rank_rows

Array = NDArray[np.float64]

RIDGE = 1.0  # the L2 penalty on the standardised slopes of the cross-validated regressions
INTERCEPT_RIDGE = 1e-4  # keeps the intercept finite on a training set with one class only
FOLDS = 5  # stratified k-fold cross-validation
LOO_MAX_N = 20  # at or under this many conversations: leave-one-out instead
GAMMA_RIDGE = 0.01  # the L2 penalty on the length coefficient (finite when the longer reply always wins)
THETA_RIDGE = 1e-6  # fixes the strengths' free constant (they are centred afterwards)
CELLS = 1 << 21  # values of a batch of fits held at once


def _sigmoid(x: Array) -> Array:
    out: Array = 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow at large |x|
    return out


def logistic_fit(
    x: Array,
    y: Array,
    w: Array,
    penalty: Array,
    *,
    start: Array | None = None,
    max_iter: int = 50,
    tol: float = 1e-9,
    clip: float = 5.0,
) -> Array:
    """The coefficients (B, p) of a weighted logistic regression for each row of weights.

    ``x``: (n, p), the same rows for every fit; ``y``: the outcome in [0, 1] (a fraction is a share of
    wins), (n,) or (B, n); ``w``: (B, n) row weights (0 leaves a row out); ``penalty``: (p,) or (B, p), the
    L2 penalty of each coefficient (``sum w * loglik - penalty * beta**2 / 2`` is maximised). Newton
    steps (IRLS) are clipped to ``clip`` per coefficient, from ``start`` ((p,) or (B, p); 0 without it);
    deterministic.
    """
    x = np.asarray(x, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    n, p = x.shape
    yw = np.atleast_2d(np.asarray(y, dtype=float) * w)
    lam = np.broadcast_to(np.asarray(penalty, dtype=float), (w.shape[0], p))
    outer = (x[:, :, None] * x[:, None, :]).reshape(n, p * p)  # a row's x x^T: the Hessian is one product
    eye = np.eye(p)
    beta = np.zeros((w.shape[0], p)) + (0.0 if start is None else np.asarray(start, dtype=float))
    active = np.arange(w.shape[0])  # the fits still moving: only they are stepped again
    for _ in range(max_iter):
        b, wa = beta[active], w[active]
        mu = _sigmoid(b @ x.T)
        grad = (yw[active] - wa * mu) @ x - lam[active] * b
        hess = ((wa * mu * (1.0 - mu)) @ outer).reshape(-1, p, p) + lam[active][:, :, None] * eye
        step = np.clip(np.linalg.solve(hess, grad[:, :, None])[:, :, 0], -clip, clip)
        beta[active] = b + step
        active = active[np.max(np.abs(step), axis=1, initial=0.0) >= tol]
        if not active.size:
            break
    return beta


# -- cross-validated AUROC: words + score against words alone -------------------------------------------------


def stratified_folds(positive: Sequence[bool] | np.ndarray, k: int = FOLDS, *, seed: int = 0) -> np.ndarray:
    """A fold (0 to k - 1) for each item, each class dealt round the folds in a seeded random order, so every
    fold holds about the same share of each class."""
    pos = np.asarray(positive, dtype=bool)
    folds = np.zeros(pos.size, dtype=int)
    rng = np.random.default_rng(seed)
    for cls in (True, False):
        members = np.flatnonzero(pos == cls)
        folds[rng.permutation(members)] = np.arange(members.size) % k
    return folds


def cv_folds(positive: Sequence[bool] | np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Stratified ``FOLDS``-fold, or leave-one-out (a fold per item) at or under ``LOO_MAX_N`` items."""
    pos = np.asarray(positive, dtype=bool)
    return np.arange(pos.size) if pos.size <= LOO_MAX_N else stratified_folds(pos, FOLDS, seed=seed)


def out_of_fold(features: Array, y: Array, counts: np.ndarray, folds: np.ndarray) -> Array:
    """Each item's linear predictor from the regression fitted without its fold, per row of ``counts``.

    ``features``: (n, q) without an intercept; ``counts``: (R, n), how often each item is in a resample (a
    row of ones: the sample itself); an item's copies share its fold, so no item is ever predicted by a fit
    it was in. The regression is on the features standardised on each training set's own (weighted) mean
    and standard deviation, the slopes penalised by ``RIDGE``: fitted on the features standardised once,
    with each training set's penalty rescaled to match (the same fit). Returns (R, n)."""
    feats = np.asarray(features, dtype=float)
    n, q = feats.shape
    sd0 = feats.std(0)
    z = (feats - feats.mean(0)) / np.where(sd0 > 1e-12, sd0, 1.0)
    x = np.column_stack([np.ones(n), z])
    k = int(folds.max()) + 1 if n else 0
    held = folds[None, :] == np.arange(k)[:, None]  # (k, n): the items each fold holds out
    out = np.empty(counts.shape)
    # every fit starts from the fit on all the items once, near which the fits of folds and resamples lie
    start = logistic_fit(x, y, np.ones((1, n)), np.array([INTERCEPT_RIDGE, *([RIDGE] * q)]))[0]
    step = max(1, CELLS // max(1, k * n * (q + 1)))
    for a in range(0, counts.shape[0], step):
        c = counts[a : a + step].astype(float)
        w = (c[:, None, :] * ~held[None]).reshape(-1, n)  # (r * k, n) training weights
        tot = np.maximum(w.sum(-1, keepdims=True), 1e-12)
        mean = w @ z / tot
        var = np.maximum(w @ (z * z) / tot - mean * mean, 0.0)
        scale = np.where(var > 1e-12, var, 1.0)  # a slope on z/sd penalised by RIDGE: on z, by RIDGE * sd**2
        penalty = np.column_stack([np.full(w.shape[0], INTERCEPT_RIDGE), RIDGE * scale])
        beta = logistic_fit(x, y, w, penalty, start=start)
        eta = (beta @ x.T).reshape(c.shape[0], k, n)
        out[a : a + step] = np.take_along_axis(eta, folds[None, None, :], axis=1)[:, 0, :]
    return out


def cv_auroc_gain(
    words: Sequence[float] | np.ndarray,
    score: Sequence[float] | np.ndarray,
    positive: Sequence[bool] | np.ndarray,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """The cross-validated AUROC of a logistic regression on [words, score] minus that of one on [words],
    for telling ``positive`` items from the others: what the score adds beyond the word count.

    Folds: ``cv_folds`` (stratified 5-fold, leave-one-out for small n), the same for both models and every
    resample. The interval: the items resampled as every other cell (same seed, same draws), the
    cross-validation redone in each resample, the percentile interval of the gains where both classes were
    drawn (a class missing from a resample leaves it out). Undefined (None) without both classes."""
    x = np.column_stack([np.asarray(words, dtype=float), np.asarray(score, dtype=float)])
    pos = np.asarray(positive, dtype=bool)
    n = int(pos.size)
    if n == 0 or pos.all() or not pos.any():
        return Estimate(None, None, None, n)
    score_auc = _cv_aurocs(x.tobytes(), pos.tobytes(), n, n_boot, seed)
    words_auc = _cv_aurocs(x[:, :1].tobytes(), pos.tobytes(), n, n_boot, seed)  # shared by a judge's rows
    return percentile(float(score_auc[0] - words_auc[0]), score_auc[1:] - words_auc[1:], n, n_boot, level)


@lru_cache(maxsize=64)
def _cv_aurocs(features: bytes, positive: bytes, n: int, n_boot: int, seed: int) -> Array:
    """The cross-validated AUROC of the sample, then of each resample (``_resamples(n, n_boot, seed)``), for
    features and labels given as bytes (so that the words-alone model of every row of a judge is fitted
    once)."""
    x = np.frombuffer(features, dtype=float).reshape(n, -1)
    pos = np.frombuffer(positive, dtype=bool)
    idx = np.concatenate([np.arange(n)[None, :], _resamples(n, n_boot, seed)])  # the items each draws
    counts = np.stack([np.bincount(row, minlength=n) for row in idx])
    eta = out_of_fold(x, pos.astype(float), counts, cv_folds(pos, seed=seed))
    out: Array = auroc_rows(np.take_along_axis(eta, idx, axis=1), pos[idx])
    out.setflags(write=False)
    return out


# -- partial rank correlation ---------------------------------------------------------------------------------


def partial_spearman_rows(x: np.ndarray, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of ``x`` with ``y``, ``z`` partialled out, along the last axis: all three ranked, the
    ranked ``z`` regressed out of the ranked ``x`` and ``y`` (least squares with an intercept), Pearson's
    correlation of the residuals. NaN where undefined: ``x`` or ``y`` constant, or wholly explained by ``z``
    (a score that is a monotone function of the word count has nothing left). A constant ``z`` explains
    nothing: the plain rho."""
    rx, rz, ry = (r - r.mean(-1, keepdims=True) for r in (rank_rows(x), rank_rows(z), rank_rows(y)))
    zz = (rz * rz).sum(-1, keepdims=True)
    safe = np.where(zz > 0, zz, 1.0)
    ex = rx - np.where(zz > 0, (rx * rz).sum(-1, keepdims=True) / safe, 0.0) * rz
    ey = ry - np.where(zz > 0, (ry * rz).sum(-1, keepdims=True) / safe, 0.0) * rz
    sx, sy = (ex * ex).sum(-1), (ey * ey).sum(-1)
    tiny = 1e-12 * np.maximum((rx * rx).sum(-1) * (ry * ry).sum(-1), 1.0)
    den = np.sqrt(sx * sy)
    ok = (sx * sy > tiny) & (den > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, (ex * ey).sum(-1) / np.where(ok, den, 1.0), np.nan)


def partial_spearman(
    x: Sequence[float] | np.ndarray, z: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> float | None:
    """``partial_spearman_rows`` of one sample; None where undefined."""
    a, c, b = (np.asarray(v, dtype=float) for v in (x, z, y))
    if not a.shape == b.shape == c.shape:
        raise ValueError(f"partial_spearman needs paired values: {a.size}, {c.size} and {b.size}")
    if a.size < 3:
        return None
    v = float(partial_spearman_rows(a, c, b))
    return v if np.isfinite(v) else None


# -- length-controlled Bradley-Terry --------------------------------------------------------------------------


def length_feature(diff: Sequence[float] | np.ndarray) -> tuple[Array, float]:
    """``tanh(d / s)`` for each length difference d, s the root mean square of the differences (about 0, so
    that swapping which reply is called a does not change it), and s itself; all 0 when every d is 0."""
    d = np.asarray(diff, dtype=float)
    s = float(np.sqrt(np.mean(d * d))) if d.size else 0.0
    return (np.tanh(d / s) if s > 0 else np.zeros(d.shape)), s


@dataclass(frozen=True)
class LengthBT:
    """A length-controlled Bradley-Terry fit: natural-log strengths (k,) centred on the competitors compared
    (NaN: never compared), the length coefficient gamma, the scale of the length differences, and the same
    for each bootstrap resample ((reps, k) and (reps,); empty without resamples)."""

    theta: Array
    gamma: float
    scale: float
    boot_theta: Array
    boot_gamma: Array


def fit_length_bt(
    a: np.ndarray, b: np.ndarray, wins_a: Array, wins_b: Array, length: Array, k: int, weights: Array, *,
    prior: float,
) -> tuple[Array, Array]:  # fmt: skip
    """Strengths (B, k) and gamma (B,) for each row of ``weights`` (B, m), the verdicts' weights.

    Verdict j is competitor ``a[j]`` against ``b[j]`` with ``wins_a[j]`` and ``wins_b[j]`` wins (a tie: half
    each; a strength-weighted verdict: its strengths) and the length feature ``length[j]``. As in the raw
    Bradley-Terry fit, ``prior`` pseudo-wins each way are added to every pair compared (with a weight in
    that row), at length difference 0. A competitor without a weighted verdict gets NaN. Strengths are
    centred on the compared competitors."""
    m = a.size
    pairs, at = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1), axis=0, return_inverse=True)
    member = np.zeros((m, len(pairs)))  # (verdicts, pairs): the pair each verdict compares
    member[np.arange(m), at.reshape(-1)] = 1.0
    pa, pb = pairs[:, 0], pairs[:, 1]
    rows = m + len(pairs)
    x = np.zeros((rows, k + 1))
    x[np.arange(m), a] += 1.0
    x[np.arange(m), b] -= 1.0
    x[m + np.arange(len(pairs)), pa] = 1.0
    x[m + np.arange(len(pairs)), pb] = -1.0
    x[:m, k] = length
    total = np.concatenate([wins_a + wins_b, np.full(len(pairs), 2.0 * prior)])
    share = np.concatenate([np.divide(wins_a, wins_a + wins_b, out=np.full(m, 0.5), where=wins_a + wins_b > 0),
                            np.full(len(pairs), 0.5)])  # fmt: skip
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    present = (weights @ member) > 0  # (B, pairs): the pairs compared in each resample
    w = np.concatenate([weights, present.astype(float)], axis=1) * total
    penalty = np.array([*([THETA_RIDGE] * k), GAMMA_RIDGE])
    beta = np.empty((weights.shape[0], k + 1))
    step = max(1, CELLS // max(1, rows * (k + 1)))
    for s in range(0, weights.shape[0], step):
        beta[s : s + step] = logistic_fit(x, share, w[s : s + step], penalty, max_iter=100)
    compared = (weights @ np.abs(x[:m, :k])) > 0
    theta = np.where(compared, beta[:, :k], np.nan)
    with np.errstate(invalid="ignore"):
        centre = np.nansum(theta, axis=1, keepdims=True) / np.maximum(compared.sum(1, keepdims=True), 1)
    return theta - centre, beta[:, k]


def length_controlled_bt(
    a: Sequence[int], b: Sequence[int], wins_a: Sequence[float], wins_b: Sequence[float],
    diff: Sequence[float], clusters: Sequence[int], k: int, *, prior: float, counts: Array | None = None,
) -> LengthBT:  # fmt: skip
    """The length-controlled fit of verdicts (competitor indices ``a`` and ``b``, their wins, ``diff`` the
    words of a minus the words of b, ``clusters`` each verdict's history index) and, given ``counts``
    (reps, H): how often each history is drawn in each resample, the same fit on every resample."""
    ai, bi = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    wa, wb = np.asarray(wins_a, dtype=float), np.asarray(wins_b, dtype=float)
    length, scale = length_feature(diff)
    if ai.size == 0:
        nan = np.full(k, np.nan)
        return LengthBT(nan, float("nan"), scale, np.zeros((0, k)), np.zeros(0))
    theta, gamma = fit_length_bt(ai, bi, wa, wb, length, k, np.ones((1, ai.size)), prior=prior)
    boot_theta, boot_gamma = np.zeros((0, k)), np.zeros(0)
    if counts is not None and counts.size:
        cl = np.asarray(clusters, dtype=int)
        boot_theta, boot_gamma = fit_length_bt(ai, bi, wa, wb, length, k, counts[:, cl], prior=prior)
    return LengthBT(theta[0], float(gamma[0]), scale, boot_theta, boot_gamma)
