"""The figures of a seekers table, on arrays: how well a score orders the seekers' own ratings of the reply
blocks, beside baselines that need no model, every interval from the same resamples of the talks.

- **rho**: Spearman's rho of the score with the rating over every point the score has;
- **pairs**: within-talk pairwise agreement: every two points of one talk whose ratings differ are a pair;
  the pair agrees (1) when the score orders them as the ratings do, disagrees (0) when the other way, and a
  tie of the score counts one half; the figure is the share over all pairs (agreeing pairs summed over talks,
  over pairs summed over talks). A talk-level difference (one seeker rates everything high) cannot help it;
- **minus best baseline**: the figure minus the best baseline's on the same points, the best chosen again in
  every resample (so the interval counts the choosing); a score *beats the baselines* on a figure when this
  interval lies wholly above 0.

Intervals: percentile, from ``n_boot`` resamples of the talks (``stats.clusters``: a talk drawn twice counts
all its points twice), the same draws for every score and baseline of a table; under ``MIN_N`` talks no
interval. A point a score has not got (unscored: NaN) is left out of that score's figures, and its margins
are taken on the points it has.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..stats.bootstrap import MIN_N, Estimate, margin_verdict
from ..stats.clusters import cluster_draws, ratio_rows, weighted_spearman_rows
from ..stats.correlation import percentile, spearman

Boots = tuple[float | None, np.ndarray]  # a figure's value and its resamples' values (NaN where undefined)


def within_talk_pairs(talks: np.ndarray, rating: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two points (i < j) of one talk whose ratings differ, as two index arrays."""
    at = [np.flatnonzero(talks == t) for t in np.unique(talks)]
    pairs = [(i, j) for a in at for i, j in itertools.combinations(a, 2) if rating[i] != rating[j]]
    both = np.asarray(pairs, dtype=int).reshape(-1, 2)
    return both[:, 0], both[:, 1]


def concordance(score: np.ndarray, rating: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Per pair: 1 when the score orders the two as the ratings do, 0 the other way, 1/2 a tie of the score."""
    return np.asarray(0.5 * (1 + np.sign(score[i] - score[j]) * np.sign(rating[i] - rating[j])), dtype=float)


class Figures:
    """The figures of scores on one set of points (``talks``: each point's talk; ``rating``: the seeker's)."""

    def __init__(self, talks: Sequence[str], rating: Sequence[float], baselines: dict[str, Sequence[float]], *,
                 n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> None:  # fmt: skip
        names, self.talk = np.unique(np.asarray(talks, dtype=str), return_inverse=True)
        self.talk = self.talk.reshape(-1)
        self.n_talks = len(names)
        self.rating = np.asarray(rating, dtype=float)
        self.baselines = {k: np.asarray(v, dtype=float) for k, v in baselines.items()}
        self.n_boot, self.level = n_boot, level
        self.draws = cluster_draws(self.n_talks, n_boot, seed)
        self.i, self.j = within_talk_pairs(self.talk, self.rating)
        self._base: dict[bytes, dict[str, dict[str, Boots]]] = {}  # per set of points: baseline figures

    def rho(self, x: np.ndarray, mask: np.ndarray) -> Boots:
        if mask.sum() < 2:
            return None, np.full(self.n_boot, np.nan)
        value = spearman(x[mask], self.rating[mask])
        return value, weighted_spearman_rows(x[mask], self.rating[mask], self.draws[:, self.talk[mask]])

    def pairs(self, x: np.ndarray, mask: np.ndarray) -> Boots:
        keep = mask[self.i] & mask[self.j]
        i, j = self.i[keep], self.j[keep]
        sums = np.bincount(self.talk[i], weights=concordance(x, self.rating, i, j), minlength=self.n_talks)
        sizes = np.bincount(self.talk[i], minlength=self.n_talks).astype(float)
        value = float(sums.sum() / sizes.sum()) if sizes.sum() else None
        return value, ratio_rows(sums, sizes, self.draws)

    def _estimate(self, got: Boots, n: int, talks: int) -> dict[str, Any]:
        value, boots = got
        small = value is None or talks < MIN_N  # no interval
        e = Estimate(value, None, None, n) if small else percentile(value, boots, n, self.n_boot, self.level)
        return {"value": e.value, "lo": e.lo, "hi": e.hi, "n": n, "talks": talks}

    def _baselines(self, mask: np.ndarray) -> dict[str, dict[str, Boots]]:
        key = mask.tobytes()
        if key not in self._base:
            self._base[key] = {
                fig: {name: getattr(self, fig)(b, mask) for name, b in self.baselines.items()}
                for fig in ("rho", "pairs")
            }
        return self._base[key]

    def row(self, score: Sequence[float | None], *, baseline: bool = False) -> dict[str, Any]:
        """A score's figures, and (not for a baseline) its margins over the best baseline and the verdicts."""
        x = np.asarray([np.nan if v is None else v for v in score], dtype=float)
        mask = np.isfinite(x)
        x = np.where(mask, x, 0.0)
        talks = len(np.unique(self.talk[mask]))
        keep = mask[self.i] & mask[self.j]
        pair_talks = len(np.unique(self.talk[self.i[keep]]))
        sizes = {"rho": (int(mask.sum()), talks), "pairs": (int(keep.sum()), pair_talks)}
        out: dict[str, Any] = {"scored": int(mask.sum()), "unscored": int((~mask).sum())}
        base = {} if baseline else self._baselines(mask)
        for fig in ("rho", "pairs"):
            own = getattr(self, fig)(x, mask)
            out[fig] = self._estimate(own, *sizes[fig])
            if baseline:
                continue
            others = base[fig]
            known = {k: v for k, (v, _) in others.items() if v is not None}
            best = max(known, key=lambda k: known[k]) if known else None
            value = None if own[0] is None or best is None else own[0] - known[best]
            stack = np.stack([b for _, b in others.values()]) if others else np.full((1, self.n_boot), np.nan)
            with np.errstate(invalid="ignore"):
                boots = own[1] - np.fmax.reduce(stack, axis=0)
            margin = self._estimate((value, boots), *sizes[fig])
            out[f"{fig}_margin"], out[f"{fig}_best"] = margin, best
            out[f"{fig}_beats"] = margin_verdict(margin.get("lo"), margin.get("hi"))
        return out
