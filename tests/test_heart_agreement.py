"""Human judgments: import with bad rows counted; judge-human and human-human agreement, kappa, alpha,
the bias table and rationale focus, all against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor.errors import DataError
from emoharbor.heart.analysis import reports
from emoharbor.heart.stages.judging import neutral_ids
from heart_helpers import preferring, run_all, scripted

HEADER = "history_id,competitor_a,competitor_b,rater,dimension,winner,strength,rationale,first_shown\n"
GOOD = [
    "regular:0,human,kind,r1,overall,kind,4,More specific to her situation,kind",
    "regular:0,human,kind,r2,Overall,human,3,Sounds more natural,human",
    "regular:1,kind,human,r1,overall,tie,,,",
    "regular:0,blunt,kind,r1,overall,kind,5,,",  # the pair given the other way round
    "regular:0,kind,blunt,r2,overall,kind,,,",
    "regular:2,kind,blunt,r1,overall,blunt,2,,kind",
    "regular:0,human,kind,r1,Empathic responsiveness,kind,3,,",
]
BAD = [
    "regular:0,human,kind,r3,warmth,kind,,,",  # unknown dimension
    "regular:0,human,kind,r3,overall,blunt,,,",  # winner not in the pair
    "regular:9,human,kind,r3,overall,kind,,,",  # history not in the run
    "regular:0,human,robot,r3,overall,robot,,,",  # competitor not in the run
    "regular:0,human,kind,,overall,kind,,,",  # no rater
    "regular:0,human,kind,r3,overall,kind,7,,",  # strength out of range
    "regular:0,human,human,r3,overall,human,,,",  # the same competitor twice
]


async def test_agreement_bias_and_rationales_hand_computed(tmp_path: Path) -> None:
    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    csv_path = tmp_path / "humans.csv"
    csv_path.write_text(HEADER + "\n".join(GOOD + BAD) + "\n", encoding="utf-8")
    rep = reports.import_human_judgments(store, config, csv_path)
    assert rep.rows == 14 and rep.imported == 7
    assert dict(rep.skipped) == {"unknown_dimension": 1, "bad_winner": 1, "unknown_history": 1,
                                 "unknown_competitor": 1, "missing_field": 1, "bad_strength": 1,
                                 "same_competitors": 1}  # fmt: skip
    again = reports.import_human_judgments(store, config, csv_path)  # idempotent
    assert again.imported == 7 and len(list(store.items("human_judgment"))) == 7

    data = reports.agreement_report(store, config, tmp_path)
    # judge "fair" (kind always wins): overall pairs (judge, human) = (b,b) (b,a) (b,tie) (a,a) (a,a) (a,b)
    jh = next(r for r in data["judge_human"] if r["judge"] == "fair" and r["dimension"] == "overall")
    assert jh["pairs"] == 6 and jh["agree_with_ties"] == pytest.approx(0.5)
    assert jh["pairs_without_ties"] == 5 and jh["agree_without_ties"] == pytest.approx(0.6)
    # p_o = 1/2; judge a 1/2 b 1/2; humans a 1/2 b 1/3 tie 1/6; p_e = 1/4 + 1/6 = 5/12; kappa = (1/12)/(7/12)
    assert jh["kappa"] == pytest.approx(1 / 7, abs=1e-4)
    # two items with two raters: (b, a) disagree, (a, a) agree
    hh = next(r for r in data["human_human"] if r["dimension"] == "overall")
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert hh["items_with_several_raters"] == 2 and hh["pairs"] == 2 and hh["agree_with_ties"] == pytest.approx(0.5)
    alpha = next(r for r in data["alpha"] if r["dimension"] == "overall")
    # humans: units [b,a], [a,a]: o_aa 2, o_ab = o_ba = 1; n_a 3, n_b 1, n 4: 1 - 3 * 2 / 6 = 0
    assert alpha["humans"] == pytest.approx(0.0)
    # with the judge: [b,a,b] [tie,b] [a,a,a] [b,a]: n_a 5, n_b 4, n_tie 1, n 10, disagreeing o 6:
    # 1 - 9 * 6 / (2 * (20 + 5 + 4)) = 4/58
    assert alpha["humans+fair"] == pytest.approx(4 / 58, abs=1e-4)

    bias = {r["rater"]: r for r in data["bias"]}
    # lengths: kind 8 words, blunt 3, human 12 (regular:0) and 4 (regular:1); fair picks kind, and the
    # larger neutral id between human and blunt on regular:0
    ids = dict(zip(["human", "blunt"], neutral_ids("regular:0", "human", "blunt"), strict=True))
    human_beats_blunt = ids["human"] > ids["blunt"]
    assert bias["fair"]["length_n"] == 7
    assert bias["fair"]["longer_wins"] == pytest.approx((5 + human_beats_blunt) / 7, abs=1e-4)
    assert bias["fair"]["first_shown_wins"] == pytest.approx(0.5) and bias["fair"]["position_n"] == 14
    # self-preference (all scripted: kind and blunt are both served by the judge's own model, so only their
    # pairs with the human count): fair's pairs with the human are kind x2 (won) and blunt on regular:0
    # (the larger neutral id); humans give them kind 1 + 0 + tie 0.5 of 3 (the kind-blunt rows do not count)
    own_rate = (3 - human_beats_blunt) / 3
    assert bias["fair"]["own_model"] == "blunt, kind" and bias["fair"]["own_n"] == 3
    assert bias["fair"]["own_win_rate"] == pytest.approx(own_rate, abs=1e-4)
    assert bias["fair"]["humans_win_rate"] == pytest.approx(0.5)
    assert bias["fair"]["self_preference"] == pytest.approx(own_rate - 0.5, abs=1e-4)
    assert bias["humans"]["position_n"] == 3 and bias["humans"]["first_shown_wins"] == pytest.approx(2 / 3, abs=1e-4)

    focus = {r["source"]: r for r in data["rationale_focus"]}
    # the judge's rationale "It validates the feeling and sounds natural." every time
    assert focus["fair"]["rationales"] == 14
    assert focus["fair"]["empathic_responsiveness"] == pytest.approx(1.0) and focus["fair"][
        "human_alignment"
    ] == pytest.approx(1.0)
    assert focus["fair"]["attunement"] == pytest.approx(0.0)
    assert focus["humans"]["rationales"] == 2  # "More specific to her situation", "Sounds more natural"
    assert focus["humans"]["attunement"] == pytest.approx(0.5) and focus["humans"]["human_alignment"] == pytest.approx(
        0.5
    )
    assert any("keyword lexicon" in n for n in data["notes"])


async def test_jsonl_import_and_bad_files(tmp_path: Path) -> None:
    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    p = tmp_path / "h.jsonl"
    rows = [{"history_id": "regular:0", "competitor_a": "human", "competitor_b": "kind", "rater": "r1",
             "dimension": "attunement", "winner": "kind"}, "not an object"]  # fmt: skip
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n", encoding="utf-8")
    rep = reports.import_human_judgments(store, config, p)
    assert rep.imported == 1 and dict(rep.skipped) == {"not_an_object": 1, "bad_json": 1}
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("history_id,winner\nregular:0,kind\n", encoding="utf-8")
    with pytest.raises(DataError, match="lacks the columns"):
        reports.import_human_judgments(store, config, bad_csv)
    with pytest.raises(DataError, match="not found"):
        reports.import_human_judgments(store, config, tmp_path / "none.csv")


async def test_agreement_without_humans_reports_no_numbers(tmp_path: Path) -> None:
    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    data = reports.agreement_report(store, config, tmp_path)
    assert data["human_judgments"] == 0
    assert all(r["pairs"] == 0 and r["kappa"] is None for r in data["judge_human"])
    assert all(r["humans"] is None for r in data["alpha"])
