"""The ladder's figures from a table of scores, no model and no store: does a scorer order rungs of known order?

``scores``: one row per profile, one column per rung (best first), higher better, NaN where the profile has no
score for the rung (its talk or rating unscored). For each pair of rungs (a above b in the known order): the
share of profiles whose scores order them as known (a tie counts half), over the profiles that scored both;
Kendall's tau of each profile's scores against the known order, averaged over profiles (a profile with every
rung tied, or fewer than two rungs scored, counts 0: it orders nothing); the resolution, the closest pair of
rungs whose share's interval lies above 0.5. Intervals: percentile bootstrap over profiles, the same
resampled profiles for every pair (the pairs are paired), under ``MIN_N`` profiles none.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from typing import Any

import numpy as np

from ..stats.bootstrap import MIN_N

N_BOOT = 2000


def _interval(values: np.ndarray, boots: np.ndarray) -> dict[str, Any]:
    """A mean over profiles (``values``, NaN left out) and its interval from ``boots`` (resample x profile)."""
    ok = ~np.isnan(values)
    n = int(ok.sum())
    if n == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0}
    value = float(values[ok].mean())
    if n < MIN_N:
        return {"value": value, "lo": None, "hi": None, "n": n}
    with warnings.catch_warnings():  # a resample of profiles that all lack the pair: left out
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(boots, axis=1)
    means = means[~np.isnan(means)]
    lo, hi = np.quantile(means, [0.025, 0.975])
    return {"value": value, "lo": float(lo), "hi": float(hi), "n": n}


def order_shares(scores: np.ndarray) -> np.ndarray:
    """profile x pair: 1 where the profile's scores order the pair (a, b) as known (a above b), 0.5 a tie, 0 the
    other way, NaN where one is missing; pairs in ``pairs(n)``'s order."""
    out = []
    for a, b in pairs(scores.shape[1]):
        x, y = scores[:, a], scores[:, b]
        s = np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0))
        out.append(np.where(np.isnan(x) | np.isnan(y), np.nan, s))
    return np.stack(out, axis=1) if out else np.empty((scores.shape[0], 0))


def pairs(n: int) -> list[tuple[int, int]]:
    return list(combinations(range(n), 2))


def taus(scores: np.ndarray) -> np.ndarray:
    """Each profile's Kendall tau-a against the known order over the rungs it scored (concordant minus
    discordant pairs over all pairs; ties count 0), NaN with fewer than two rungs scored."""
    s = order_shares(scores)  # 1 concordant, 0 discordant, 0.5 tie
    signed = 2 * s - 1
    with warnings.catch_warnings():  # a profile with no pair scored: NaN, said below
        warnings.simplefilter("ignore", RuntimeWarning)
        out = np.nanmean(signed, axis=1) if s.shape[1] else np.full(scores.shape[0], np.nan)
    return np.where(np.isnan(s).all(axis=1), np.nan, out) if s.shape[1] else out


def ladder_figures(scores: np.ndarray, rungs: list[str], *, seed: int = 0, n_boot: int = N_BOOT) -> dict[str, Any]:
    """The figures of one scorer: each pair's share with its interval, the mean tau with its interval, the
    resolution (``None`` where no pair's interval lies above 0.5)."""
    n_profiles = scores.shape[0]
    shares = order_shares(scores)
    tau = taus(scores)
    idx = np.random.default_rng(seed).integers(0, n_profiles, size=(n_boot, n_profiles)) if n_profiles else None
    pair_rows = []
    for j, (a, b) in enumerate(pairs(len(rungs))):
        col = shares[:, j]
        boots = col[idx] if idx is not None else np.empty((0, 0))
        pair_rows.append({"above": rungs[a], "below": rungs[b], "gap": b - a, **_interval(col, boots)})
    mean_tau = _interval(tau, tau[idx] if idx is not None else np.empty((0, 0)))
    ordered = [p for p in pair_rows if p["lo"] is not None and p["lo"] > 0.5]
    closest = min(ordered, key=lambda p: (p["gap"], rungs.index(p["above"])), default=None)
    resolution = None if closest is None else {"above": closest["above"], "below": closest["below"],
                                                "gap": closest["gap"]}  # fmt: skip
    return {"pairs": pair_rows, "tau": mean_tau, "resolution": resolution, "profiles": int((~np.isnan(tau)).sum())}
