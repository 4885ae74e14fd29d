"""Each supporter minus a baseline supporter on the same profiles and repeats: a paired bootstrap, P(difference
> 0), Holm's adjustment across the dimensions; under 5 pairs, no interval ("n too small")."""

from __future__ import annotations

import pytest

from emoharbor.assess.dimensions import keys
from emoharbor.assess.leaderboard import differences
from emoharbor.simulate.conversation import Conversation
from emoharbor.stats.bootstrap import MIN_N, holm, paired_difference


def test_holm_steps_down_and_keeps_the_order() -> None:
    adjusted = holm([0.01, 0.04, 0.03, None])
    assert adjusted[3] is None and adjusted[:3] == pytest.approx([0.03, 0.06, 0.06])
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([]) == []  # 2 x 0.5, capped at 1


def test_a_paired_difference_and_its_probability_above_zero() -> None:
    d = paired_difference([1.0, 0.5, 1.5, 1.0, 0.0, 1.0, 2.0, 0.5], seed=1)
    assert d["mean"] == pytest.approx(0.9375) and d["n"] == 8
    assert (
        d["lo"] is not None
        and 0 < d["lo"] < d["mean"] < d["hi"]
        and d["p_above_0"] == pytest.approx(1.0)
        and d["p"] < 0.01
    )
    small = paired_difference([1.0] * (MIN_N - 1))
    assert small["mean"] == pytest.approx(1.0) and small["lo"] is None and small["p_above_0"] is None


def test_only_profiles_and_repeats_that_both_supporters_have_are_paired() -> None:
    convs, under = [], {}
    for i in range(8):
        for sup, bump in (("base", 0), ("better", 1)):
            c = Conversation(id=f"p{i}|{sup}|0", profile_id=f"p{i}", supporter=sup)
            convs.append(c)
            under[c.id] = {k: min(5, 2 + (i % 3) + bump) for k in keys()}
    under["p0|base|0"] = None  # unscored: p0 has no pair
    out = differences(convs, under, keys(), "base", seed=0)
    warmth = out["better"]["warmth"]
    assert warmth["n"] == 7 and warmth["mean"] == pytest.approx(1.0) and warmth["p_above_0"] == 1.0
    assert out["better"]["overall"]["n"] == 7 and out["better"]["overall"]["mean"] == pytest.approx(1.0)
    assert all(out["better"][k]["p_holm"] is not None for k in keys()) and "p_holm" not in out["better"]["overall"]
    assert set(out) == {"better"}  # the baseline is not compared with itself


def test_the_differences_are_rows_of_the_leaderboard_csv_and_in_its_json() -> None:
    import csv
    import io
    import json

    from emoharbor.assess.render import CSV_HEADER, render

    convs, under = [], {}
    for i in range(6):
        for sup, bump in (("base", 0), ("better", 1)):
            c = Conversation(id=f"p{i}|{sup}|0", profile_id=f"p{i}", supporter=sup)
            convs.append(c)
            under[c.id] = {k: min(5, 2 + (i % 3) + bump) for k in keys()}
    est = {"mean": 3.0, "lo": 2.5, "hi": 3.5, "n": 6}
    row = {"supporter": "better", "dimensions": {k: est for k in keys()},
           **{k: est for k in ("overall", "generic", "personal", "gap", "intensity_change", "words")}}  # fmt: skip
    few = {"mean": 1.0, "lo": None, "hi": None, "n": MIN_N - 1, "p_above_0": None, "p": None, "p_holm": None}
    diffs = differences(convs, under, keys(), "base", seed=0)
    diffs["tiny"] = {"warmth": few}
    board = {"judge": "user", "baseline": "base", "dimension_keys": keys(), "rows": [row], "differences": diffs}
    rows = list(csv.DictReader(io.StringIO(render(board, "csv"))))
    assert list(rows[0]) == CSV_HEADER and CSV_HEADER[:6] == ["supporter", "metric", "mean", "lo", "hi", "n"]
    plain = [r for r in rows if not r["metric"].startswith("diff:")]
    assert len(plain) == 16 and all(r["vs"] == r["p_holm"] == "" for r in plain)  # 10 dimensions + 6
    better = {r["metric"]: r for r in rows if r["supporter"] == "better" and r["metric"].startswith("diff:")}
    assert list(better) == [*(f"diff:{k}" for k in keys()), "diff:overall", "diff:generic", "diff:personal",
                            "diff:words"]  # fmt: skip
    warmth = better["diff:warmth"]
    assert warmth["vs"] == "base" and float(warmth["mean"]) == pytest.approx(1.0) and warmth["n"] == "6"
    assert float(warmth["lo"]) <= 1.0 <= float(warmth["hi"]) and float(warmth["p_above_0"]) == pytest.approx(1.0)
    assert float(warmth["p_holm"]) >= float(warmth["p"]) and better["diff:overall"]["p_holm"] == ""
    (tiny,) = [r for r in rows if r["supporter"] == "tiny"]
    assert tiny["metric"] == "diff:warmth" and tiny["lo"] == tiny["hi"] == tiny["p_above_0"] == "" and tiny["n"] == "4"
    back = json.loads(render(board, "json"))
    assert back["baseline"] == "base" and back["differences"]["better"]["warmth"]["n"] == 6
    assert back["differences"]["tiny"]["warmth"]["lo"] is None


def test_differences_that_are_all_zero_or_one_sided_with_ties_are_not_significant() -> None:
    """Whole-point scores tie often: no difference at all is p = 1, and resamples whose mean is exactly 0 count
    against a one-sided result (they were once left out, and five ties read as p = 0.0005)."""
    from emoharbor.stats.bootstrap import paired_difference

    none = paired_difference([0, 0, 0, 0, 0])
    assert (
        none["p"] == pytest.approx(1.0)
        and none["p_above_0"] == pytest.approx(0.0)
        and (none["lo"], none["hi"]) == pytest.approx((0.0, 0.0))
    )
    tied = paired_difference([-1, 0, -1, 0, 0])  # every resample <= 0, but (3/5)^5 of them are exactly 0
    assert 0.1 < tied["p"] < 0.2
    clear = paired_difference([1, 1, 2, 1, 1, 2, 1, 1])
    assert clear["p"] < 0.01 and clear["p_above_0"] == pytest.approx(1.0)


def test_the_supporters_words_a_message_are_paired_beside_the_scores() -> None:
    """A supporter that writes 4 more words a message than the baseline, on the same profiles, shows +4 [4, 4] words
    in its difference table, scored or not, and its mean words in its row; a conversation it wrote nothing in has
    no length and no pair."""
    from emoharbor.assess.leaderboard import RunResults, leaderboard
    from emoharbor.simulate.conversation import Turn

    convs, under = [], {}
    for i in range(6):
        for sup, extra in (("base", 0), ("longer", 4)):
            said = " ".join(["word"] * (5 + i + extra))
            turns = [Turn(speaker="user", text="hi"), Turn(speaker="supporter", text=said),
                     Turn(speaker="user", text="ok"), Turn(speaker="supporter", text=said + " and two")]  # fmt: skip
            c = Conversation(id=f"p{i}|{sup}|0", profile_id=f"p{i}", supporter=sup, turns=turns)
            convs.append(c)
            under[c.id] = {k: 3 for k in keys()} if i else None  # p0 unscored: its length still pairs
    convs.append(Conversation(id="p9|longer|0", profile_id="p9", supporter="longer"))  # no message: no length
    assert convs[0].supporter_words == pytest.approx(6.0)  # (5 + 7) / 2
    words = differences(convs, under, keys(), "base", seed=0)["longer"]["words"]
    assert words["n"] == 6 and words["mean"] == pytest.approx(4.0)
    assert words["lo"] == pytest.approx(4.0) and words["hi"] == pytest.approx(4.0)
    results = RunResults(convs, [], {}, ["base", "longer"], {}, {})
    rows = {r["supporter"]: r for r in leaderboard(results, "user")["rows"]}
    assert rows["base"]["words"]["mean"] == pytest.approx(8.5) and rows["longer"]["words"]["n"] == 6
