"""Length control in every validity figure (``stats.length``): what a judge says beyond the word count in
validate's table (the cross-validated AUROC gain over words, the partial rho with words partialled out), and
HEART's length-controlled win rates and Bradley-Terry ratings. Synthetic data only, no model."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emoharbor.assess.dimensions import keys
from emoharbor.heart.analysis import reports
from emoharbor.heart.analysis.bias import length_term
from emoharbor.heart.analysis.ratings import rate_with_length, win_rates_vs_human
from emoharbor.heart.analysis.render import ratings_md, to_csv
from emoharbor.heart.analysis.verdicts import PairVerdict
from emoharbor.stats.bootstrap import TOO_SMALL
from emoharbor.stats.correlation import rankdata, spearman
from emoharbor.stats.length import (
    cv_auroc_gain,
    cv_folds,
    length_controlled_bt,
    length_feature,
    logistic_fit,
    partial_spearman,
    stratified_folds,
)
from emoharbor.store.run_store import RunStore
from emoharbor.validate.analysis import LENGTH_LABELS, validation_table
from emoharbor.validate.render import render_validation
from heart_helpers import preferring, run_all, scripted

N_BOOT = 300


def sample(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word counts, a signal independent of them, and success that depends on both."""
    rng = np.random.default_rng(seed)
    words = rng.normal(60, 20, n).round()
    signal = rng.normal(0, 1, n)
    success = 0.04 * (words - 60) + signal + rng.normal(0, 0.5, n) > 0
    return words, signal, success


# -- the statistics -------------------------------------------------------------------------------------------


def test_logistic_fit_solves_the_penalised_score_equations() -> None:
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(50), rng.normal(size=(50, 2))])
    y = (x[:, 1] + rng.normal(size=50) > 0).astype(float)
    w = np.stack([np.ones(50), rng.integers(0, 3, 50).astype(float)])
    penalty = np.array([1e-4, 1.0, 1.0])
    beta = logistic_fit(x, y, w, penalty)
    for b, wi in zip(beta, w, strict=True):
        mu = 1 / (1 + np.exp(-(x @ b)))
        assert np.abs(x.T @ (wi * (y - mu)) - penalty * b).max() == pytest.approx(0.0, abs=1e-7)
    # a weight of 2 is the row twice
    twice = logistic_fit(np.vstack([x, x[:1]]), np.append(y, y[0]), np.ones((1, 51)), penalty)
    w2 = np.ones((1, 50))
    w2[0, 0] = 2.0
    assert logistic_fit(x, y, w2, penalty)[0] == pytest.approx(twice[0], abs=1e-8)


def test_folds_are_stratified_and_leave_one_out_for_small_n() -> None:
    pos = np.array([True] * 30 + [False] * 20)
    folds = stratified_folds(pos, 5, seed=0)
    assert sorted(np.bincount(folds[pos])) == [6] * 5 and sorted(np.bincount(folds[~pos])) == [4] * 5
    assert (cv_folds(pos[:12]) == np.arange(12)).all()
    assert (cv_folds(pos, seed=0) == folds).all()


def test_a_judge_that_is_the_word_count_adds_nothing_beyond_length() -> None:
    words, _signal, success = sample(80)
    e = cv_auroc_gain(words, words, success, n_boot=N_BOOT, seed=0)
    assert e.value == pytest.approx(0.0, abs=0.02) and e.n == 80
    assert e.lo is not None and e.hi is not None and e.lo <= 1e-9 and e.hi >= -1e-9
    # a monotone function of the word count (a 1-5 judge that reads only length) adds no more
    five = np.digitize(words, np.quantile(words, [0.2, 0.4, 0.6, 0.8])) + 1.0
    coarse = cv_auroc_gain(words, five, success, n_boot=N_BOOT, seed=0)
    assert coarse.value == pytest.approx(0.0, abs=0.05) and coarse.lo is not None and coarse.lo <= 1e-9


def test_a_judge_with_signal_of_its_own_adds_beyond_length() -> None:
    words, signal, success = sample(120)
    e = cv_auroc_gain(words, signal + np.random.default_rng(5).normal(0, 0.3, 120), success, n_boot=N_BOOT, seed=0)
    assert e.value is not None and e.value > 0.1 and e.lo is not None and e.lo > 0
    again = cv_auroc_gain(words, signal + np.random.default_rng(5).normal(0, 0.3, 120), success, n_boot=N_BOOT)
    assert (again.value, again.lo, again.hi) == pytest.approx((e.value, e.lo, e.hi))  # deterministic on the seed
    # leave-one-out at small n, the same idea
    small = cv_auroc_gain(words[:16], signal[:16], success[:16], n_boot=N_BOOT, seed=0)
    assert small.value is not None and small.value > 0 and small.n == 16
    assert cv_auroc_gain(words[:5], signal[:5], np.ones(5, dtype=bool)).value is None  # one class: undefined


def test_partial_spearman_of_a_pure_length_judge_is_about_zero() -> None:
    rng = np.random.default_rng(2)
    words = rng.normal(60, 20, 400)
    empathy = words + rng.normal(0, 15, 400)  # the seekers reward length
    five = np.digitize(words, np.quantile(words, [0.2, 0.4, 0.6, 0.8])) + 1.0
    rho = spearman(five, empathy)
    assert rho is not None and rho > 0.6
    partial = partial_spearman(five, words, empathy)
    assert partial is not None and partial == pytest.approx(0.0, abs=0.1)
    assert partial_spearman(words, words, empathy) is None  # nothing left once the word count is out
    # a judge that reads the seekers' own signal keeps it
    signal = empathy - words
    keeps = partial_spearman(signal + rng.normal(0, 5, 400), words, empathy)
    assert keeps is not None and keeps > 0.5


def test_partial_spearman_is_the_partial_correlation_of_the_ranks() -> None:
    rng = np.random.default_rng(3)
    x, z = rng.normal(size=60), rng.normal(size=60)
    y = x + z + rng.normal(size=60)
    rx, rz, ry = rankdata(x), rankdata(z), rankdata(y)
    r = np.corrcoef([rx, ry, rz])
    expected = (r[0, 1] - r[0, 2] * r[1, 2]) / np.sqrt((1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2))
    assert partial_spearman(x, z, y) == pytest.approx(expected)
    assert partial_spearman(x, np.ones(60), y) == pytest.approx(spearman(x, y))  # a constant explains nothing


# -- validate's table -----------------------------------------------------------------------------------------


def words_text(n: int) -> str:
    return " ".join(["word"] * n)


def replay(i: int, words: int, success: bool, empathy: int) -> dict[str, Any]:
    turns = [
        {"speaker": "user", "text": words_text(4)},
        {"speaker": "supporter", "text": words_text(words)},
        {"speaker": "user", "text": words_text(2)},
        {"speaker": "supporter", "text": words_text(words)},
    ]
    return {
        "id": f"s:{i}",
        "status": "ok",
        "profile_id": f"s-{i}",
        "supporter": "esconv-human",
        "turns": turns,
        "dialog_turns": turns,
        "states": [{"turn": 0, "intensity": 80, "trust": 40}, {"turn": 1, "intensity": 70, "trust": 40}],
        "termination": "max_turns",
        "esconv": {
            "source": "s",
            "index": i,
            "survey": {"empathy": empathy, "relevance": 1 + i % 5},
            "intensity_drop": 1 + i % 3,
            "failed": not success,
            "from_failed_set": False,
            "supporter_turns_total": 2,
            "supporter_turns_replayed": 2,
            "truncated": False,
        },
    }


def length_store(tmp_path: Path, n: int, unscored: int = 0) -> RunStore:
    """``n`` conversations; the user-judge scores the supporter's mean words (a pure-length judge), the
    third-party judge an independent signal the seekers' success also follows. The last ``unscored`` of
    the user-judge's assessments did not parse."""
    rng = np.random.default_rng(4)
    words = rng.integers(5, 60, n)
    signal = rng.normal(0, 1, n)
    success = 0.05 * (words - 32) + signal > 0
    s = RunStore.create_or_resume(tmp_path / "run", "validate", {"user": {"model": "m"}}, "h")
    for i in range(n):
        s.put("replay", (f"s:{i:03d}",), replay(i, int(words[i]), bool(success[i]), 1 + int(words[i]) // 12))
        ok = i < n - unscored
        user = {"judge": "user", "conversation": f"s:{i:03d}", "status": "ok" if ok else "unscored"}
        user["scores"] = {k: float(words[i]) if ok else None for k in keys()}
        s.put("assessment", (f"s:{i:03d}", "user"), user)
        third = {"judge": "third_party:m", "conversation": f"s:{i:03d}", "status": "ok", "saw": "all"}
        third["scores"] = {k: round(float(signal[i]), 3) for k in keys()}
        s.put("assessment", (f"s:{i:03d}", "third_party:m"), third)
    return s


def cells(data: dict[str, Any], judge: str) -> dict[str, Any]:
    return next(r["cells"] for r in data["length_control"] if (r["judge"], r["score"]) == (judge, "overall"))


def test_validate_rows_beyond_length(tmp_path: Path) -> None:
    store = length_store(tmp_path, 60, unscored=4)
    data = validation_table(store, n_boot=N_BOOT, embedding=False)
    store.close()
    assert len(data["length_control"]) == len(data["rows"]) - 1  # every judge row; not the inner state's
    user, third = cells(data, "user"), cells(data, "third_party:m")
    assert user["not_failed"]["n"] == 56 and third["not_failed"]["n"] == 60  # the unscored are left out
    assert data["counts"]["judges"]["user"]["unscored"] == 4
    gain = user["not_failed"]
    assert gain["value"] == pytest.approx(0.0, abs=0.02) and gain["lo"] <= 1e-9 <= gain["hi"] + 2e-9
    assert user["empathy"]["value"] is None  # the word count itself: nothing left to correlate
    assert third["not_failed"]["value"] > 0.1 and third["not_failed"]["lo"] > 0
    assert -1 <= third["empathy"]["value"] <= 1 and third["empathy"]["n"] == 60
    assert data["counts"]["length_feature"] == "mean supporter words"

    text = render_validation(data, "text")
    assert "Beyond length" in text and LENGTH_LABELS["not_failed"] in text
    assert "AUROC beyond length (words+judge − words)" in text and "partial rho vs empathy | words" in text
    assert "| partial rho vs relevance | words |" in render_validation(data, "md")
    table = list(csv.DictReader(io.StringIO(render_validation(data, "csv"))))
    beyond = [r for r in table if r["target"] == "not_failed | words"]
    assert {r["judge"] for r in beyond} == {"user", "third_party:m"}
    assert {r["target"] for r in table} >= {"empathy | words", "relevance | words", "intensity_drop | words"}
    js = json.loads(render_validation(data, "json"))
    assert js["length_labels"] == LENGTH_LABELS and len(js["length_control"]) == len(data["length_control"])


def test_validate_beyond_length_follows_the_small_n_rule(tmp_path: Path) -> None:
    store = length_store(tmp_path, 4)
    data = validation_table(store, n_boot=N_BOOT, embedding=False)
    store.close()
    text = render_validation(data, "text")
    block = text.split("Beyond length")[1].split("\n\n", 2)[1]
    lines = [line for line in block.splitlines() if line.startswith("third_party:m")]
    assert lines and all(f"({TOO_SMALL}, n=4)" in line and "[" not in line for line in lines)


# -- HEART ----------------------------------------------------------------------------------------------------

HUMAN = "human"


def verdicts_for(
    histories: int, pick: Any, lengths: Any, competitors: tuple[str, ...] = ("long", HUMAN), seed: int = 0
) -> list[PairVerdict]:
    """One overall verdict per history and pair of ``competitors``; ``lengths(rng)`` gives each reply's words,
    ``pick(words_a, words_b, a, b, rng)`` the outcome ("a", "b" or "tie")."""
    rng = np.random.default_rng(seed)
    out = []
    for h in range(histories):
        words = lengths(rng)
        for i, a in enumerate(competitors):
            for b in competitors[i + 1 :]:
                outcome = pick(words[a], words[b], a, b, rng)
                out.append(PairVerdict(f"h:{h}", "all", a, b, "j", "overall", outcome, words_a=words[a],
                                       words_b=words[b]))  # fmt: skip
    return out


def longer(wa: int, wb: int, *_: Any) -> str:
    return "tie" if wa == wb else "a" if wa > wb else "b"


def test_a_length_loving_judge_is_far_from_even_raw_and_near_even_length_controlled() -> None:
    def lengths(rng: np.random.Generator) -> dict[str, int]:  # "long" is longer 9 times in 10, by much or little
        human = int(rng.integers(20, 60))
        return {HUMAN: human, "long": max(1, human + int(rng.normal(30, 25)))}

    vs = verdicts_for(60, longer, lengths)
    comps = [HUMAN, "long"]
    [row] = win_rates_vs_human(vs, comps, reps=200, seed=0)
    assert row["win_rate"] > 0.8 and row["histories"] == 60
    assert row["lc_win_rate"] == pytest.approx(0.5, abs=0.12)
    assert row["lc_low"] < 0.5 < row["lc_high"] and row["low"] > 0.7  # the raw interval is far from even
    rows, term = rate_with_length(vs, comps, "plain", prior=0.1, reps=200, seed=0)
    by = {r["competitor"]: r for r in rows}
    assert by["long"]["rating"] - by[HUMAN]["rating"] > 200  # raw: "long" well ahead
    assert abs(by["long"]["lc_rating"] - by[HUMAN]["lc_rating"]) < 100  # length held at 0: about level
    assert term["gamma"] > 1 and term["low"] > 0 and term["histories"] == 60
    assert length_term(vs, {(v.history_id, c): w for v in vs for c, w in ((v.a, v.words_a), (v.b, v.words_b))}) > 1

    def pulled(wa: int, wb: int, a: str, b: str, rng: np.random.Generator) -> str:  # length alone moves it
        return "a" if rng.random() < 1 / (1 + np.exp(-4 * np.tanh((wa - wb) / 40))) else "b"

    [noisy] = win_rates_vs_human(verdicts_for(200, pulled, lengths), comps, reps=100, seed=0)
    assert noisy["win_rate"] > 0.7 and noisy["lc_win_rate"] == pytest.approx(0.5, abs=0.08)


def test_a_judge_of_quality_keeps_its_preference_under_length_control() -> None:
    def lengths(rng: np.random.Generator) -> dict[str, int]:  # lengths that say nothing about quality
        return {c: int(rng.integers(10, 80)) for c in ("good", "bad", HUMAN)}

    def quality(wa: int, wb: int, a: str, b: str, rng: np.random.Generator) -> str:
        rank = {"good": 2, HUMAN: 1, "bad": 0}
        return "a" if rank[a] > rank[b] else "b"

    vs = verdicts_for(40, quality, lengths, ("good", "bad", HUMAN))
    rows = {r["competitor"]: r for r in win_rates_vs_human(vs, ["good", "bad", HUMAN], reps=100)}
    assert rows["good"]["win_rate"] == pytest.approx(1.0) and rows["good"]["lc_win_rate"] > 0.8
    assert rows["bad"]["win_rate"] == pytest.approx(0.0) and rows["bad"]["lc_win_rate"] < 0.2


def test_length_controlled_fit_is_the_raw_fit_without_length_differences() -> None:
    a, b = [0, 0, 1, 1, 2, 0], [1, 2, 2, 0, 0, 1]
    fit = length_controlled_bt(a, b, [1, 1, 1, 0, 0.5, 1], [0, 0, 0, 1, 0.5, 0], [0] * 6, list(range(6)), 3,
                               prior=0.1)  # fmt: skip
    assert fit.gamma == pytest.approx(0.0) and fit.scale == pytest.approx(0.0)
    assert float(np.nansum(fit.theta)) == pytest.approx(0.0, abs=1e-9) and fit.theta[0] > fit.theta[2]
    feature, scale = length_feature([3, -4])
    assert scale == pytest.approx(np.sqrt(12.5)) and feature == pytest.approx(np.tanh(np.array([3, -4]) / scale))


async def test_heart_ratings_say_n_too_small_for_few_histories(tmp_path: Path) -> None:
    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    data = reports.ratings_report(store, config)
    bias = reports.agreement_report(store, config, tmp_path)["bias"]
    store.close()
    assert "length_gamma" in bias[0]
    kind = next(
        r
        for r in data["win_rates_vs_human"]
        if (r["subset"], r["dimension"], r["competitor"]) == ("all", "overall", "kind")
    )
    assert kind["histories"] == 2 and kind["low"] is None and kind["lc_low"] is None
    assert kind["win_rate"] == pytest.approx(1.0) and kind["lc_win_rate"] is not None
    small = [r for r in data["ratings"] if r["histories"] < 5]
    assert small and all(r["low"] is None and r["lc_low"] is None for r in small)
    md = ratings_md(data)
    wr = md.split("## Win rate against the human reply")[1].split("\n## ")[0]
    lines = [line for line in wr.splitlines() if line.startswith("| fair | all | kind |")]
    assert len(lines) == 2 and "| raw |" in lines[0] and "| length-controlled |" in lines[1]
    assert all(f"({TOO_SMALL}, n=2)" in line and "[" not in line for line in lines)
    assert "kind (length-controlled)" in md and "## Length term" in md
    regular = md.split("## plain — judge: fair, histories: regular")[1].split("\n## ")[0]
    assert TOO_SMALL in regular and "[" not in regular  # 3 histories: no interval anywhere, raw or not
    terms = list(csv.DictReader(io.StringIO(to_csv(data, "ratings", "length_terms"))))
    assert terms and {"gamma", "low", "high", "length_sd", "histories"} <= set(terms[0])
