"""Spearman, AUROC and the paired bootstrap against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emoharbor.stats.correlation import (
    auroc,
    auroc_ci,
    auroc_rows,
    bootstrap_many,
    bootstrap_rows,
    columns_rows,
    minus_best_rows,
    order_codes,
    paired_bootstrap,
    rank_rows,
    rankdata,
    spearman,
    spearman_ci,
    spearman_rows,
)


def test_ranks_share_the_mean_rank_on_ties() -> None:
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert rankdata([10, 20, 20, 30]).tolist() == pytest.approx([1.0, 2.5, 2.5, 4.0])
    assert rankdata([3, 1, 3, 3]).tolist() == pytest.approx([3.0, 1.0, 3.0, 3.0])  # ranks 2,3,4 -> 3
    assert rankdata([]).tolist() == []


def test_spearman_without_ties_is_the_classic_formula() -> None:
    # d = [0, -1, 1, 0], sum d^2 = 2, rho = 1 - 6*2 / (4*(16-1)) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_with_ties_is_pearson_of_mean_ranks() -> None:
    # y = [5,6,7,8,7] ranks [1,2,3.5,5,3.5]; centred x ranks [-2,-1,0,1,2], y ranks [-2,-1,.5,2,.5]
    # sum of products 8, sums of squares 10 and 9.5: rho = 8 / sqrt(95)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))


def test_spearman_is_undefined_for_a_constant_side_or_one_pair() -> None:
    assert spearman([1, 2, 3], [4, 4, 4]) is None
    assert spearman([1], [2]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])


def test_auroc_counts_ties_as_half() -> None:
    # positives 3,4,5 against negatives 1,3: 6 pairs, one tie (3 vs 3): (5 + 0.5) / 6
    scores = [3, 4, 5, 1, 3]
    labels = [True, True, True, False, False]
    assert auroc(scores, labels) == pytest.approx(5.5 / 6)
    assert auroc([1, 2], [True, False]) == pytest.approx(0.0)
    assert auroc([2, 2, 2], [True, False, False]) == pytest.approx(0.5)
    assert auroc([1, 2], [True, True]) is None


def test_bootstrap_of_two_values_covers_every_resample_mean() -> None:
    # resample means of [0, 1] are 0, 0.5, 1 with chances 1/4, 1/2, 1/4: the 2.5% and 97.5% points are 0 and 1
    est = paired_bootstrap(lambda x: float(np.mean(x)), [0.0, 1.0], seed=7)
    assert (est.value, est.lo, est.hi, est.n) == (0.5, 0.0, 1.0, 2)


def test_paired_bootstrap_keeps_pairs_together_and_skips_undefined_resamples() -> None:
    # a resample of 3 equal-ordered pairs is either one pair repeated (rho undefined: skipped) or rho = 1
    est = spearman_ci([1, 2, 3], [1, 2, 3], seed=3)
    assert (est.value, est.lo, est.hi) == (1.0, 1.0, 1.0)
    # a perfectly anti-ordered sample stays at -1 in every defined resample
    est = spearman_ci([1, 2, 3, 4, 5], [9, 7, 5, 3, 1], seed=3)
    assert (est.value, est.lo, est.hi, est.n) == (-1.0, -1.0, -1.0, 5)


def test_bootstrap_interval_on_a_fixed_seed_is_the_percentile_of_those_resamples() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    y = [2.0, 1.0, 4.0, 3.0, 6.0, 5.0]
    est = paired_bootstrap(spearman, x, y, n_boot=200, seed=11)
    # redo by hand: the same generator, the same index draws, rho per resample, sorted, linear percentile
    idx = np.random.default_rng(11).integers(0, 6, size=(200, 6))
    rhos = sorted(r for i in idx if (r := spearman(np.array(x)[i], np.array(y)[i])) is not None)
    pos = 0.025 * (len(rhos) - 1)
    lo = rhos[int(pos)] + (pos - int(pos)) * (rhos[int(pos) + 1] - rhos[int(pos)])
    assert est.value == pytest.approx(1 - 6 * 6 / (6 * 35))  # d^2 = 1 each: 1 - 36/210
    assert est.lo == pytest.approx(lo)
    assert est.hi is not None and est.hi <= 1.0 and est.lo is not None and est.value is not None and est.lo < est.value
    assert paired_bootstrap(spearman, x, y, n_boot=200, seed=11) == est  # same seed, same interval


def test_auroc_interval_and_too_few_defined_resamples() -> None:
    est = auroc_ci([1, 2, 3, 4, 5, 6, 7, 8], [False] * 4 + [True] * 4, seed=0)
    assert (
        est.value == pytest.approx(1.0) and est.lo == pytest.approx(1.0) and est.hi == pytest.approx(1.0) and est.n == 8
    )

    # a statistic defined only when the 4 rows drawn are all different (4!/4^4, under 10% of resamples):
    # too few defined resamples, so no interval is claimed
    def distinct_mean(x: np.ndarray) -> float | None:
        return float(x.mean()) if len(set(x.tolist())) == x.size else None

    est = paired_bootstrap(distinct_mean, [1.0, 2.0, 3.0, 4.0], seed=0)
    assert est.value == pytest.approx(2.5) and est.lo is None and est.hi is None
    assert paired_bootstrap(spearman, [], []).value is None


def test_vectorised_bootstrap_matches_the_plain_one_on_the_same_seed() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(1, 6, size=40).astype(float)  # many ties, as with 1-5 ratings
    y = x + rng.integers(-2, 3, size=40)
    labels = rng.random(40) < 0.4
    a = paired_bootstrap(spearman, x, y, n_boot=300, seed=9)
    b = spearman_ci(x.tolist(), y.tolist(), n_boot=300, seed=9)
    assert b.value == pytest.approx(a.value) and b.lo == pytest.approx(a.lo) and b.hi == pytest.approx(a.hi)
    c = paired_bootstrap(auroc, x, labels, n_boot=300, seed=9)
    d = auroc_ci(x.tolist(), labels.tolist(), n_boot=300, seed=9)
    assert d.value == pytest.approx(c.value) and d.lo == pytest.approx(c.lo) and d.hi == pytest.approx(c.hi)
    assert rank_rows(np.array([[10, 20, 20, 30], [3, 1, 3, 3]])).tolist() == [[1, 2.5, 2.5, 4], [3, 1, 3, 3]]


def pairwise_ranks(x: np.ndarray) -> np.ndarray:
    """The earlier O(n^2) definition: (values below) + (values equal, itself included, + 1) / 2."""
    below = (x[:, None, :] < x[:, :, None]).sum(-1)
    equal = (x[:, None, :] == x[:, :, None]).sum(-1)
    return np.asarray(below + (equal + 1) / 2, dtype=float)


def test_sorted_and_counted_ranks_match_the_pairwise_definition_with_ties() -> None:
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 60):
        few = rng.integers(0, 4, size=(30, n)).astype(float)  # many ties
        spread = np.round(rng.normal(size=(30, n)), 1)  # some ties, negative values
        for x in (few, spread):
            assert np.array_equal(rank_rows(x), pairwise_ranks(x))
            codes = order_codes(x.reshape(-1)).reshape(x.shape)  # integers: ranked by counting
            assert codes.dtype.kind == "i" and np.array_equal(rank_rows(codes), pairwise_ranks(x))
    cube = rng.integers(0, 3, size=(4, 5, 9))
    assert np.array_equal(rank_rows(cube), pairwise_ranks(cube.reshape(20, 9)).reshape(4, 5, 9))
    assert rankdata([2.5, -1, 2.5]).tolist() == pytest.approx([2.5, 1.0, 2.5])


def test_order_codes_keep_every_rank_statistic() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=50), rng.integers(1, 6, size=50).astype(float)
    assert spearman(order_codes(x), order_codes(y)) == pytest.approx(spearman(x, y))
    m = np.stack([x, y], axis=1)
    assert order_codes(m)[:, 1].tolist() == (y - 1).astype(int).tolist()
    a = spearman_ci(x.tolist(), y.tolist(), n_boot=200, seed=4)
    b = bootstrap_rows(spearman_rows, order_codes(x), order_codes(y), n_boot=200, seed=4)
    assert (b.value, b.lo, b.hi) == pytest.approx((a.value, a.lo, a.hi))


def test_several_columns_at_once_give_what_each_gives_alone() -> None:
    rng = np.random.default_rng(3)
    m = rng.integers(1, 6, size=(40, 3)).astype(float)
    y = m[:, 0] + rng.integers(-2, 3, size=40)
    many = bootstrap_many(columns_rows(spearman_rows), m, y, n_boot=300, seed=8)
    for j in range(3):
        one = spearman_ci(m[:, j].tolist(), y.tolist(), n_boot=300, seed=8)
        assert (many[j].value, many[j].lo, many[j].hi) == pytest.approx((one.value, one.lo, one.hi))
    assert bootstrap_many(columns_rows(spearman_rows), np.zeros((0, 2)), np.zeros(0)) == []


def test_the_margin_over_the_best_baseline_picks_the_best_in_every_resample() -> None:
    rng = np.random.default_rng(6)
    n, n_boot = 30, 400
    y = rng.random(n) < 0.5
    judge = y + rng.normal(size=n)
    base = np.stack([y + rng.normal(size=n) * 2, rng.normal(size=n), np.ones(n)], axis=1)  # one constant
    stat = minus_best_rows(auroc_rows)
    est = bootstrap_rows(stat, judge, base, y, n_boot=n_boot, seed=1)
    best = max(auroc(base[:, j], y) for j in range(3))  # type: ignore[type-var]
    assert est.value == pytest.approx(auroc(judge, y) - best)  # type: ignore[operator]
    # by hand: the same draws, the best baseline of each resample
    idx = np.random.default_rng(1).integers(0, n, size=(n_boot, n))
    boots = []
    for i in idx:
        if y[i].all() or not y[i].any():
            continue
        boots.append(auroc(judge[i], y[i]) - max(auroc(base[i, j], y[i]) for j in range(3)))  # type: ignore[operator,type-var]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    assert (est.lo, est.hi) == pytest.approx((lo, hi))
    # several judge columns against the same baselines: the margins of each alone
    two = bootstrap_many(stat, np.stack([judge, -judge], axis=1), base, y, n_boot=n_boot, seed=1)
    assert (two[0].value, two[0].lo, two[0].hi) == pytest.approx((est.value, est.lo, est.hi))
    alone = bootstrap_rows(stat, -judge, base, y, n_boot=n_boot, seed=1)
    assert (two[1].value, two[1].lo, two[1].hi) == pytest.approx((alone.value, alone.lo, alone.hi))
    # a constant baseline has no rho: it is passed over, not taken as the best
    rho = bootstrap_rows(minus_best_rows(spearman_rows), judge, base[:, 2:], y.astype(float), n_boot=50)
    assert rho.value is None
