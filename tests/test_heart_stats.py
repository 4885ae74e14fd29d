"""Statistics against hand-computed values: Bradley-Terry, Cohen's kappa, Krippendorff's alpha, agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emoharbor.heart.analysis.bradley_terry import bootstrap_intervals, fit_bradley_terry, win_probability
from emoharbor.heart.analysis.stats import agreement, cohen_kappa, krippendorff_alpha


def test_bt_two_players_three_to_one() -> None:
    # MLE: p_A / p_B = wins ratio = 3; normalised to geometric mean 1: p = (sqrt 3, 1/sqrt 3)
    r = fit_bradley_terry(np.array([[0.0, 3.0], [1.0, 0.0]]))
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3), abs=1e-6)  # 190.849
    assert r[0] == pytest.approx(1000 + 200 * math.log10(3), abs=1e-6)  # 1095.42
    assert win_probability(r[0], r[1]) == pytest.approx(0.75, abs=1e-9)


def test_bt_three_players_saturated_case() -> None:
    # strengths (4, 2, 1): observed shares equal the model's for every pair (A-B 2:1, B-C 2:1, A-C 4:1),
    # so the MLE is exactly (4, 2, 1), i.e. (2, 1, 0.5) at geometric mean 1
    wins = np.array([[0.0, 2.0, 4.0], [1.0, 0.0, 2.0], [1.0, 1.0, 0.0]])
    r = fit_bradley_terry(wins)
    expected = [1000 + 400 * math.log10(2), 1000.0, 1000 - 400 * math.log10(2)]  # 1120.41, 1000, 879.59
    assert r == pytest.approx(expected, abs=1e-6)


def test_bt_score_equations_hold_on_an_arbitrary_case() -> None:
    wins = np.array([[0, 3, 1, 2], [1, 0, 2, 0.5], [2, 1, 0, 1], [1, 2.5, 2, 0]], dtype=float)
    r = fit_bradley_terry(wins)
    p = 10 ** ((r - 1000) / 400)
    n = wins + wins.T
    for i in range(4):
        expected_wins = sum(n[i, j] * p[i] / (p[i] + p[j]) for j in range(4) if j != i)
        assert wins[i].sum() == pytest.approx(expected_wins, rel=1e-8)


def test_bt_ties_prior_and_uncompared() -> None:
    even = fit_bradley_terry(np.array([[0.0, 1.5], [1.5, 0.0]]))  # a win each and a tie (half each)
    assert even[0] == pytest.approx(even[1])
    no_loss = fit_bradley_terry(np.array([[0.0, 2.0], [0.0, 0.0]]))
    assert math.isinf(no_loss[1]) and no_loss[1] < 0  # plain MLE: a competitor with no wins
    prior = fit_bradley_terry(np.array([[0.0, 2.0], [0.0, 0.0]]), prior=0.5)  # 2.5 : 0.5
    assert prior[0] - prior[1] == pytest.approx(400 * math.log10(5), abs=1e-6)
    lonely = fit_bradley_terry(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert math.isnan(lonely[2]) and lonely[0] == pytest.approx(1000.0)


def test_bootstrap_intervals_contain_the_estimate_and_are_seeded() -> None:
    rng = np.random.default_rng(1)
    per = np.zeros((40, 2, 2))
    for h in range(40):
        a_wins = rng.random() < 0.75
        per[h, 0, 1], per[h, 1, 0] = (1.0, 0.0) if a_wins else (0.0, 1.0)
    r = fit_bradley_terry(per.sum(0), prior=0.1)
    lo, hi = bootstrap_intervals(per, prior=0.1, reps=300, seed=5)
    lo2, hi2 = bootstrap_intervals(per, prior=0.1, reps=300, seed=5)
    assert np.array_equal(lo, lo2) and np.array_equal(hi, hi2)
    assert lo[0] < r[0] < hi[0] and lo[1] < r[1] < hi[1]
    assert hi[0] - lo[0] > 50  # 40 histories leave real uncertainty


def test_cohen_kappa_hand_example() -> None:
    # 10 items: both "a" 4, both "b" 3, rater1 a / rater2 b 2, rater1 b / rater2 a 1
    # p_o = 0.7; rater1 a 0.6 b 0.4; rater2 a 0.5 b 0.5; p_e = 0.3 + 0.2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    pairs = [("a", "a")] * 4 + [("b", "b")] * 3 + [("a", "b")] * 2 + [("b", "a")]
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("a", "a"), ("b", "b")]) == pytest.approx(1.0)
    assert cohen_kappa([("a", "a"), ("a", "a")]) is None  # p_e = 1: undefined
    assert cohen_kappa([]) is None


def test_krippendorff_alpha_hand_examples() -> None:
    # units [a,a], [a,b], [b,b]: o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 n_a n_b) = 1 - 5 * 2 / 18 = 4/9
    assert krippendorff_alpha([["a", "a"], ["a", "b"], ["b", "b"]]) == pytest.approx(4 / 9)
    # units [a,a,b], [b,b], [a] (unpairable): unit 1 adds 1/2 per ordered pair: o_aa = 1, o_ab = o_ba = 1;
    # unit 2: o_bb = 2; n_a = 2, n_b = 3, n = 5; alpha = 1 - 4 * 2 / (2 * 2 * 3) = 1/3
    assert krippendorff_alpha([["a", "a", "b"], ["b", "b"], ["a"]]) == pytest.approx(1 / 3)
    assert krippendorff_alpha([["a", "a"], ["tie", "tie"]]) == pytest.approx(1.0)
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # one value in use: undefined
    assert krippendorff_alpha([["a"], ["b"]]) is None


def test_agreement_with_and_without_ties() -> None:
    pairs = [("a", "a"), ("a", "tie"), ("b", "a"), ("tie", "tie"), ("b", "b")]
    assert agreement(pairs) == (pytest.approx(3 / 5), 5)
    assert agreement(pairs, ignore="tie") == (pytest.approx(2 / 3), 3)
    assert agreement([("tie", "tie")], ignore="tie") == (None, 0)


def test_bt_newton_with_prior_matches_mm() -> None:
    from emoharbor.heart.analysis.bradley_terry import _strengths

    wins = np.array([[0, 3, 1, 2], [1, 0, 2, 0.5], [2, 1, 0, 1], [1, 2.5, 2, 0]], dtype=float)
    newton = fit_bradley_terry(wins, prior=0.3)
    mm = 1000 + 400 * np.log10(_strengths(wins, 0.3, 100000, 1e-14))
    assert newton == pytest.approx(mm, abs=1e-6)


def test_krippendorff_alpha_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units with
    # missing values, nominal alpha = 0.743
    units = [[1, 1, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4], [4, 4, 4, 4],
             [1, 1, 2, 1], [2, 2, 2, 2], [5, 5, 5], [1, 1], [3]]  # fmt: skip
    assert krippendorff_alpha([[str(v) for v in u] for u in units]) == pytest.approx(0.743, abs=5e-4)


def test_rating_tables_put_the_highest_overall_rating_first() -> None:
    from emoharbor.heart.analysis.render import rating_tables

    def row(c: str, dim: str, rating: float, wins: int = 0) -> dict[str, object]:
        return {"judge": "j", "subset": "all", "variant": "plain", "competitor": c, "dimension": dim,
                "rating": rating, "wins": wins, "ties": 1, "losses": 2}  # fmt: skip

    # each dimension's rows come sorted by rating, as ratings_report writes them: a leads on attunement only
    rows = [row("a", "attunement", 1100), row("b", "attunement", 900)]
    rows += [row("b", "overall", 1050, wins=5), row("a", "overall", 950, wins=3)]
    [(scope, comps)] = rating_tables({"ratings": rows})
    assert scope == ("j", "all", "plain")
    assert [(c, wtl) for c, _, wtl in comps] == [("b", "5-1-2"), ("a", "3-1-2")]
    assert comps[1][1]["attunement"]["rating"] == 1100
