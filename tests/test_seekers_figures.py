"""The figures of a seekers table on hand-computable data: the within-talk pairs, Spearman's rho, the pairwise
agreement (ties half), the margin over the best baseline, the verdict, unscored points, and the bootstrap over
talks (``stats.clusters``) against resamples written out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emoharbor.seekers.figures import Figures, concordance, within_talk_pairs
from emoharbor.stats.bootstrap import margin_verdict
from emoharbor.stats.clusters import cluster_draws, ratio_ci, weighted_ranks, weighted_spearman_rows
from emoharbor.stats.correlation import rankdata, spearman

# three talks of two points: a (ratings 1, 3), b (2, 5), c (4, 4: no pair, the ratings are equal)
TALKS = ["a", "a", "b", "b", "c", "c"]
RATING = [1, 3, 2, 5, 4, 4]
GOOD = [1, 2, 3, 4, 9, 9]  # orders both pairs as the seekers did
TIED = [5, 5, 4, 1, 0, 0]  # a tie in talk a (1/2), the wrong way in talk b (0)
FLAT = [0.0] * 6  # a baseline that ties every pair and has no rho
WRONG = [3, 1, 3, 1, 2, 2]  # a baseline that orders both pairs the wrong way


def copies(values: list[float] | list[str], k: int) -> list:  # type: ignore[type-arg]
    """``values`` k times over; talk names made distinct per copy."""
    return [f"{v}{i}" if isinstance(v, str) else v for i in range(k) for v in values]


def test_pairs_are_every_two_points_of_a_talk_with_different_ratings() -> None:
    talks = np.array([0, 0, 0, 1, 1, 2])
    i, j = within_talk_pairs(talks, np.array([1, 2, 2, 3, 3, 5]))
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 1), (0, 2)]
    score = np.array([1.0, 4.0, 1.0, 0, 0, 0])
    assert concordance(score, np.array([1, 2, 2, 3, 3, 5.0]), i, j).tolist() == [1.0, 0.5]


def test_rho_and_pairwise_agreement_by_hand() -> None:
    f = Figures(TALKS, RATING, {"flat": FLAT, "wrong": WRONG}, n_boot=200)
    good, tied = f.row(GOOD), f.row(TIED)
    # ranks of the ratings 1 3 2 6 4.5 4.5 and of GOOD 1 2 3 4 5.5 5.5: covariance 13, both sums of squares 17
    assert good["rho"]["value"] == pytest.approx(13 / 17)
    assert good["pairs"]["value"] == pytest.approx(1.0) and good["pairs"]["n"] == 2 and good["pairs"]["talks"] == 2
    assert tied["pairs"]["value"] == pytest.approx((0.5 + 0.0) / 2)
    assert good["rho"]["lo"] is None and good["rho"]["talks"] == 3  # under 5 talks: no interval
    # WRONG's ranks 5.5 1.5 5.5 1.5 3.5 3.5: covariance -12, sums of squares 16 and 17; FLAT has no rho
    assert good["rho_best"] == "wrong" and good["rho_margin"]["value"] == pytest.approx(13 / 17 + 12 / math.sqrt(272))
    # FLAT ties both pairs (0.5), WRONG gets both wrong (0): the best is FLAT
    assert good["pairs_best"] == "flat" and good["pairs_margin"]["value"] == pytest.approx(0.5)


def test_the_margin_and_the_verdict_with_intervals_over_talks() -> None:
    f = Figures(copies(TALKS, 5), copies(RATING, 5), {"flat": copies(FLAT, 5), "wrong": copies(WRONG, 5)},
                n_boot=300, seed=1)  # fmt: skip
    good = f.row(copies(GOOD, 5))
    assert good["rho"]["value"] == pytest.approx(13 / 17)  # every point five times: the same ranks, affinely
    assert good["rho"]["lo"] <= good["rho"]["value"] <= good["rho"]["hi"]
    # GOOD agrees on every pair and FLAT ties every pair in every resample: the margin is 0.5 in each
    assert (good["pairs"]["lo"], good["pairs"]["hi"]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert (good["pairs_margin"]["lo"], good["pairs_margin"]["hi"]) == (pytest.approx(0.5), pytest.approx(0.5))
    assert good["pairs_beats"] == "yes" and good["pairs"]["n"] == 10 and good["pairs"]["talks"] == 10
    same = f.row(copies(WRONG, 5))  # a scorer that is the baseline itself: its margin holds 0
    assert same["rho_margin"]["value"] == pytest.approx(0.0) and same["rho_beats"] == "no"
    assert same["pairs_beats"] == "below"  # 0 against FLAT's 0.5 in every resample
    base = f.row(copies(FLAT, 5), baseline=True)
    assert base["rho"]["value"] is None and "rho_margin" not in base and base["pairs"]["value"] == pytest.approx(0.5)


def test_an_unscored_point_is_left_out_of_its_scorers_figures() -> None:
    f = Figures(TALKS, RATING, {"wrong": WRONG}, n_boot=100)
    row = f.row([None, *GOOD[1:]])
    assert (row["scored"], row["unscored"]) == (5, 1)
    assert row["pairs"]["n"] == 1 and row["pairs"]["value"] == pytest.approx(1.0)  # talk a's pair is gone
    want = spearman(GOOD[1:], RATING[1:])
    assert want is not None and row["rho"]["value"] == pytest.approx(want)
    # the margin is taken on the same five points: WRONG's rho there, not on all six
    wrong = spearman(WRONG[1:], RATING[1:])
    assert wrong is not None and row["rho_margin"]["value"] == pytest.approx(want - wrong)


def test_verdicts() -> None:
    assert margin_verdict(0.1, 0.3) == "yes"
    assert margin_verdict(-0.3, -0.1) == "below"
    assert margin_verdict(-0.1, 0.3) == "no"
    assert margin_verdict(None, None) == "n/a"


def test_cluster_draws_and_the_weighted_rho_equal_resamples_written_out() -> None:
    rng = np.random.default_rng(3)
    talk = rng.integers(0, 6, size=30)
    x, y = rng.integers(0, 4, size=30).astype(float), rng.integers(1, 6, size=30).astype(float)
    draws = cluster_draws(6, 40, seed=2)
    assert draws.shape == (40, 6) and (draws.sum(axis=1) == 6).all()
    got = weighted_spearman_rows(x, y, draws[:, talk])
    for b in range(40):
        idx = np.concatenate([np.flatnonzero(talk == t) for t in range(6) for _ in range(draws[b, t])])
        want = spearman(x[idx], y[idx])
        assert (want is None and np.isnan(got[b])) or got[b] == pytest.approx(want)
    ones = np.ones((1, 30))
    assert weighted_ranks(x, ones)[0] == pytest.approx(rankdata(x))


def test_a_ratio_over_clusters() -> None:
    draws = np.array([[1, 1, 1], [3, 0, 0], [0, 0, 3]])
    e = ratio_ci(np.array([2.0, 0.0, 1.0]), np.array([2.0, 1.0, 2.0]), draws)
    assert e.value == pytest.approx(3 / 5) and e.n == 3
    assert (e.lo, e.hi) == (pytest.approx(np.quantile([0.6, 1.0, 0.5], 0.025)),
                            pytest.approx(np.quantile([0.6, 1.0, 0.5], 0.975)))  # fmt: skip
