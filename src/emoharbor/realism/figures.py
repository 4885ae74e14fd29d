"""The realism figures, on messages grouped by talk: simulated seekers' messages beside real seekers' on the same
cuts, every interval from the same resamples of the talks (``stats.clusters``: a talk drawn twice counts all
its messages twice).

- **words**: the median words per message (``text.words``), and the ratio of the simulated median to the real;
- **shares** of messages with each feature of ``text.FEATURES`` (gratitude, question, voice, narrates, repeat);
- **distinct-2**: distinct word bigrams over all of them, on each side's messages;
- **discriminator**: the cross-validated AUROC of a logistic regression (scikit-learn) on sentence embeddings
  telling simulated from real messages, folds grouped by talk (a talk's messages are never both trained on and
  tested); 0.5: indistinguishable. Its floor is the same figure for real against real: at the same cuts, the
  real next message against the seeker's own message before it (two real messages of one seeker, one turn
  apart: what the classifier finds where there is nothing but people to find);
- **similarity**: the mean cosine similarity of each simulated message to the real next message at its cut,
  beside its mean similarity to the real messages of the other talks (what a message drawn from another talk
  would score, without the luck of the draw), and the paired difference.

Each figure has a **goal** (``GOALS``), the bar a simulated seeker that talks like a person should clear, and
a verdict: ``met``, ``not met`` or ``n/a`` (no value). Under ``MIN_N`` talks no interval is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..stats.bootstrap import MIN_N
from ..stats.clusters import cluster_draws, ratio_rows
from ..stats.correlation import percentile
from .text import FEATURES, bigrams, features, words

Estimate = dict[str, Any]  # {"value", "lo", "hi"}
Boots = tuple[float | None, np.ndarray]  # a figure's value and its resamples' values (NaN where undefined)

# figure -> (the goal in words, the test on (simulated, real) values)
GOALS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "words": ("median within +-30% of people's", lambda s, r: 0.7 <= s / r <= 1.3 if r else False),
    "gratitude": ("at most 1.5x people's share", lambda s, r: s <= 1.5 * r),
    "question": ("0.5x to 2x people's share", lambda s, r: 0.5 * r <= s <= 2 * r),
    "voice": ("at most 2% of messages", lambda s, r: s <= 0.02),
    "narrates": ("at most 2% of messages", lambda s, r: s <= 0.02),
    "repeat": ("at most people's share + 2 points", lambda s, r: s <= r + 0.02),
    "distinct_2": ("at least 0.8x people's", lambda s, r: s >= 0.8 * r),
}
AUROC_GOAL = 0.75  # the discriminator tells them apart no better than this
LABELS = {"words": "words per message (median)", "gratitude": "thanks or appreciation", "question":
          "asks the supporter a question", "voice": "offers help / the supporter's voice", "narrates":
          "narrates the inner state", "repeat": "repeats an earlier message", "distinct_2": "distinct-2"}  # fmt: skip


@dataclass(frozen=True)
class Message:
    talk: str
    text: str
    earlier: tuple[str, ...] = ()  # the same seeker's messages before it in the talk


def estimate(value: float | None, boots: np.ndarray, n_talks: int, n_boot: int) -> Estimate:
    if value is None or not np.isfinite(value):
        return {"value": None, "lo": None, "hi": None}
    if n_talks < MIN_N:
        return {"value": float(value), "lo": None, "hi": None}
    e = percentile(float(value), boots, n_talks, n_boot, 0.95)
    return {"value": e.value, "lo": e.lo, "hi": e.hi}


def talk_mean(talk: np.ndarray, v: np.ndarray, n_talks: int, draws: np.ndarray) -> Boots:
    """The mean of ``v``'s finite values (``talk``: the talk of each) and its value in each resample of ``draws``."""
    have = np.isfinite(v)
    sums = np.bincount(talk, weights=np.where(have, v, 0.0), minlength=n_talks)
    sizes = np.bincount(talk, weights=have.astype(float), minlength=n_talks)
    return (float(sums.sum() / sizes.sum()) if sizes.sum() else None), ratio_rows(sums, sizes, draws)


class Side:
    """One side's messages (simulated or real), indexed by the talks of the table."""

    def __init__(self, msgs: Sequence[Message], talk_index: dict[str, int]) -> None:
        self.msgs = list(msgs)
        self.talk = np.asarray([talk_index[m.talk] for m in self.msgs], dtype=int)
        self.words = np.asarray([words(m.text) for m in self.msgs], dtype=float)
        feats = [features(m.text, list(m.earlier)) for m in self.msgs]
        self.feature = {f: np.asarray([x[f] for x in feats], dtype=float) for f in FEATURES}
        self.bigrams = [bigrams(m.text) for m in self.msgs]

    def median_words(self, weights: np.ndarray | None = None) -> float:
        """The median words per message, each talk's messages counted ``weights[talk]`` times (None: once)."""
        w = np.ones(len(self.msgs)) if weights is None else weights[self.talk]
        if w.sum() == 0:
            return float("nan")
        return float(np.median(np.repeat(self.words, w.astype(int))))

    def distinct(self, weights: np.ndarray | None = None) -> float:
        """Distinct-2 of the messages of the talks drawn (``weights[talk]`` > 0; None: every talk), each talk's
        messages once."""
        grams = [g for gs, t in zip(self.bigrams, self.talk, strict=True) if weights is None or weights[t] for g in gs]
        return len(set(grams)) / len(grams) if grams else float("nan")


class Table:
    """The figures of simulated against real messages grouped by ``talks`` (the talks of the cuts)."""

    def __init__(self, sim: Sequence[Message], real: Sequence[Message], *, n_boot: int = 2000, seed: int = 0) -> None:
        names = sorted({m.talk for m in [*sim, *real]})
        self.index = {t: i for i, t in enumerate(names)}
        self.n_talks, self.n_boot, self.seed = len(names), n_boot, seed
        self.draws = cluster_draws(self.n_talks, n_boot, seed)
        self.sim, self.real = Side(sim, self.index), Side(real, self.index)

    def _est(self, value: float | None, boots: np.ndarray) -> Estimate:
        return estimate(value, boots, self.n_talks, self.n_boot)

    def _share(self, side: Side, f: str) -> Boots:
        return talk_mean(side.talk, side.feature[f], self.n_talks, self.draws)

    def _per_draw(self, fn: Callable[[Side, np.ndarray | None], float]) -> tuple[Boots, Boots]:
        """``fn`` on each side (simulated, real): on every talk, and on each resample's (``fn(side, draw)``)."""
        sim, real = [(fn(side, None), np.asarray([fn(side, w) for w in self.draws])) for side in (self.sim, self.real)]
        return sim, real

    def _row(self, figure: str, sim: Boots, real: Boots, compare: str) -> dict[str, Any]:
        s, r = sim[0], real[0]
        ratio = compare == "ratio"
        with np.errstate(invalid="ignore", divide="ignore"):
            boots = sim[1] / real[1] if ratio else sim[1] - real[1]
        value = None if s is None or r is None or (ratio and not r) else s / r if ratio else s - r
        goal, test = GOALS[figure]
        ok = None if s is None or r is None or not np.isfinite(s) or not np.isfinite(r) else test(s, r)
        return {"figure": figure, "label": LABELS[figure], "sim": self._est(s, sim[1]), "real": self._est(r, real[1]),
                "compare": compare, "vs_real": self._est(value, boots), "goal": goal,
                "verdict": "n/a" if ok is None else "met" if ok else "not met"}  # fmt: skip

    def rows(self) -> list[dict[str, Any]]:
        """words, each feature's share, distinct-2: the simulated and the real value, their ratio or difference,
        the goal and its verdict."""
        if not self.sim.msgs or not self.real.msgs:
            return []
        rows = [self._row("words", *self._per_draw(Side.median_words), "ratio")]
        for f in FEATURES:
            rows.append(self._row(f, self._share(self.sim, f), self._share(self.real, f), "difference"))
        # Distinct-2 falls as a sample grows and a talk drawn twice adds no new bigram, so a resample's value is
        # not comparable with the sample's: each side's value stands without an interval, and the ratio's
        # interval compares the two sides on the same talks of each resample, each talk drawn counted once.
        row = self._row("distinct_2", *self._per_draw(Side.distinct), "ratio")
        for side in ("sim", "real"):
            row[side] = {**row[side], "lo": None, "hi": None}
        return [*rows, row]

    # the figures on embeddings (``vectors``: the unit-length embedding of each message, simulated then real)
    def discriminator(self, sim_vec: np.ndarray, real_vec: np.ndarray, before_vec: np.ndarray) -> dict[str, Any]:
        """AUROC of simulated against real, and the real-against-real floor (``before_vec``: the seeker's own
        message before each cut, row by row with ``real_vec``)."""
        y = np.r_[np.ones(len(sim_vec)), np.zeros(len(real_vec))]
        groups = np.r_[self.sim.talk, self.real.talk]
        out: dict[str, Any] = {"sim_vs_real": self._auroc(np.vstack([sim_vec, real_vec]), y, groups),
               "real_vs_real": self._auroc(np.vstack([before_vec, real_vec]), y, groups)}  # fmt: skip
        value = out["sim_vs_real"]["value"]
        out["goal"] = f"AUROC at most {AUROC_GOAL}"
        out["verdict"] = "n/a" if value is None else "met" if value <= AUROC_GOAL else "not met"
        return out

    def _auroc(self, x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> Estimate:
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import GroupKFold

        folds = min(5, len(np.unique(groups)))
        if folds < 2 or len(np.unique(y)) < 2:
            return {"value": None, "lo": None, "hi": None}
        score = np.zeros(len(y))
        for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
            if len(np.unique(y[train])) < 2:
                score[test] = 0.5
                continue
            clf = LogisticRegression(max_iter=2000).fit(x[train], y[train])
            score[test] = clf.predict_proba(x[test])[:, 1]
        value = float(roc_auc_score(y, score))
        boots = np.full(self.n_boot, np.nan)
        for b, w in enumerate(self.draws):
            weight = w[groups].astype(float)
            keep = weight > 0
            if len(np.unique(y[keep])) == 2:
                boots[b] = roc_auc_score(y[keep], score[keep], sample_weight=weight[keep])
        return self._est(value, boots)

    def similarity(self, sim_vec: np.ndarray, next_vec: np.ndarray) -> dict[str, Any]:
        """Cosine similarity of each simulated message to its cut's real next message (``next_vec``, row by row)
        and, on average, to the real messages of the other talks; the paired difference and whether its
        interval lies above 0 (None when every message is of one talk)."""
        cos = sim_vec @ next_vec.T
        other = self.sim.talk[:, None] != self.real.talk[None, :]
        if not other.any(axis=1).all():
            return {}
        to_next = np.diag(cos)
        to_other = (cos * other).sum(axis=1) / other.sum(axis=1)
        out: dict[str, Any] = {}
        for name, v in (("next", to_next), ("other", to_other), ("difference", to_next - to_other)):
            out[name] = self._est(*talk_mean(self.sim.talk, v, self.n_talks, self.draws))
        lo = out["difference"]["lo"]
        out["goal"] = "closer to the real next message than to another talk's"
        out["verdict"] = "n/a" if lo is None else "met" if lo > 0 else "not met"
        return out
