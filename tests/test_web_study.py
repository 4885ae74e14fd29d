"""The study store: blinded items, overlap assignments, hashed tokens, revisable answers, export in the
format ``emoharbor.heart.humans`` reads, attention checks, and agreement so far (hand-computed)."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from emoharbor.assess.dimensions import keys as conversation_keys
from emoharbor.errors import EmoharborError
from emoharbor.heart.analysis.humans import read_human_judgments
from emoharbor.web.assign import assign
from emoharbor.web.build import attention_bank, create_study
from emoharbor.web.export import CONVERSATION_COLUMNS, PAIR_COLUMNS, export_study
from emoharbor.web.forms import missing
from emoharbor.web.progress import admin_data
from emoharbor.web.study import Study, token_hash
from web_helpers import COMPETITORS, HISTORIES, PAIR_COUNT, emoharbor_run, heart_run, make_study, pair_form

DIMS = ["human_alignment", "empathic_responsiveness", "attunement", "resonance", "task_following", "overall"]


def test_create_copies_blinded_items(tmp_path: Path) -> None:
    study, summary = create_study(tmp_path / "s", heart_run=heart_run(tmp_path / "h"),
                                  emoharbor_run=emoharbor_run(tmp_path / "e"), overlap=2, attention=3)  # fmt: skip
    assert summary["pair_items"] == PAIR_COUNT and summary["pairs_candidate_unusable"] == 2
    assert summary["conversation_items"] == 2 and summary["conversations_ended_in_error"] == 1
    items = study.items()
    rated = Counter((it.rated, it.attention) for it in items)
    # three checks alternate over what the study's items rate: pair, conversation, pair
    assert rated == {("pair", False): 7, ("conversation", False): 2, ("pair", True): 2, ("conversation", True): 1}
    for it in items:
        assert it.id.startswith("i") and len(it.id) == 13
        blob = json.dumps(it.content)
        assert set(it.content) <= {"turns", "situation", "replies"}
        assert "omega-bot" not in blob and "zeta-bot" not in blob and "competitor" not in blob and "p1|" not in blob
    pairs = {(it.source["history_id"], it.source["competitor_a"], it.source["competitor_b"])
             for it in items if it.rated == "pair" and not it.attention}  # fmt: skip
    assert ("regular:2", "human", "zeta-bot") in pairs and ("regular:2", "human", "omega-bot") not in pairs
    assert study.heart_dimensions() == DIMS[:-1]
    with pytest.raises(EmoharborError, match="already exists"):
        create_study(tmp_path / "s", heart_run=tmp_path / "h", emoharbor_run=None, overlap=1)
    with pytest.raises(EmoharborError, match="at most 4 are available"):
        create_study(tmp_path / "s2", heart_run=tmp_path / "h", emoharbor_run=None, overlap=1, attention=5)
    with pytest.raises(EmoharborError, match="holds a 'heart' run, not a 'emoharbor' run"):
        create_study(tmp_path / "s3", heart_run=None, emoharbor_run=tmp_path / "h", overlap=1)


def test_assignments_meet_the_overlap_and_balance_the_load(tmp_path: Path) -> None:
    setup = make_study(tmp_path, raters=3, overlap=2, attention=2)
    study = setup.study
    items = {it.id: it for it in study.items()}
    per_item = Counter(a.item_id for a in study.assignments())
    assert all(per_item[i] == (3 if it.attention else 2) for i, it in items.items())
    load = Counter(a.rater_id for a in study.assignments() if not items[a.item_id].attention)
    assert sum(load.values()) == 9 * 2 and max(load.values()) - min(load.values()) <= 1
    for r in study.raters():
        queue = study.queue(r.id)
        assert [a.position for a in queue] == list(range(1, len(queue) + 1))
        assert {a.first for a in queue} <= {"a", "b"}
    # a later rater gets the attention checks; every item already has its overlap
    (late, _), = study.add_raters(["late"])  # fmt: skip
    summary = assign(study, 2, 1)
    assert summary == {"new_assignments": 2, "items_short_of_overlap": 0}
    assert all(items[a.item_id].attention for a in study.queue(late.id))
    short = assign(make_study(tmp_path / "short", raters=2, overlap=3).study, 3, 1)
    assert short["items_short_of_overlap"] == 9


def test_tokens_are_stored_hashed_and_compared(tmp_path: Path) -> None:
    setup = make_study(tmp_path)
    study, token = setup.study, setup.tokens["rater-1"]
    raw = (tmp_path / "study" / "study.sqlite").read_bytes()
    assert token.encode() not in raw and setup.admin.encode() not in raw
    with sqlite3.connect(tmp_path / "study" / "study.sqlite") as db:
        hashes = {r[0] for r in db.execute("SELECT token_hash FROM raters")}
    assert token_hash(token) in hashes
    found = study.rater_by_token(token)
    assert found is not None and found.name == "rater-1"
    assert study.rater_by_token(token[:-1]) is None and study.rater_by_token("") is None
    assert study.is_admin(setup.admin) and not study.is_admin(token)
    assert study.csrf_token(found.id) != study.csrf_token(study.raters()[1].id)


def test_answers_can_be_revised_until_submitted(tmp_path: Path) -> None:
    setup = make_study(tmp_path, conversations=False)
    study = setup.study
    rater = study.raters()[0]
    a = study.queue(rater.id)[0]
    dims = study.heart_dimensions()
    assert study.save(rater.id, a.item_id, {"choice.overall": "A"}) == (True, None)
    assert study.save(rater.id, a.item_id, {"choice.overall": "B", "reason": "first try"}) == (True, None)
    assert study.answers(rater.id, a.item_id) == {"choice.overall": "B", "reason": "first try"}

    def gaps(have: dict[str, str]) -> list[str]:
        return missing("pair", dims, have)

    ok, todo = study.save(rater.id, a.item_id, {"strength.overall": "5"}, submit_if=gaps)
    assert ok and len(todo) == 5 and todo[0] == "Human alignment: choose A, B or tie"
    assert study.queue(rater.id)[0].status == "open"
    form = pair_form(dict.fromkeys(DIMS, "tie") | {"overall": "a"}, a.first, reason="final")
    assert study.save(rater.id, a.item_id, form, submit_if=gaps) == (True, [])
    assert study.queue(rater.id)[0].status == "submitted"
    assert study.save(rater.id, a.item_id, {"reason": "too late"}) == (False, None)
    assert study.answers(rater.id, a.item_id)["reason"] == "final"
    log = [r for r in study.all_answers() if r["field"] == "choice.overall"]
    assert log[0]["revisions"] == 3


def _submit_all(study: Study, name: str, sides: dict[str, str], reason: str, score: str = "4") -> None:
    rater = next(r for r in study.raters() if r.name == name)
    dims = study.heart_dimensions()
    for a in study.queue(rater.id):
        item = study.item(a.item_id)
        if item.rated == "pair":
            form = pair_form(sides, a.first, strength="2", reason=reason)
        else:
            form = {f"score.{k}": score for k in conversation_keys()}
        ok, todo = study.save(rater.id, a.item_id, form, submit_if=lambda have, k=item.rated: missing(k, dims, have))
        assert ok and todo == []


def test_export_writes_what_heart_humans_reads(tmp_path: Path) -> None:
    setup = make_study(tmp_path, attention=2)
    study = setup.study
    _submit_all(study, "rater-1", dict.fromkeys(DIMS, "a") | {"resonance": "tie"}, 'A felt warmer, "really", more')
    export_csv = tmp_path / "out" / "humans.csv"
    summary = export_study(study, export_csv)
    assert summary["pair_rows"] == PAIR_COUNT * 6 and summary["conversation_rows"] == 2 * 10
    assert summary["attention_checks_left_out"] == 2 and summary["unsubmitted_drafts_left_out"] == 0
    with export_csv.open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == PAIR_COLUMNS
    items = {it.id: it for it in study.items()}
    rater = study.raters()[0]
    expected = set()
    for a in study.queue(rater.id):
        src = items[a.item_id].source
        if items[a.item_id].rated != "pair" or items[a.item_id].attention:
            continue
        first = src["competitor_a"] if a.first == "a" else src["competitor_b"]
        for d in DIMS:
            winner, strength = ("tie", "") if d == "resonance" else (src["competitor_a"], "2")
            expected.add((src["history_id"], src["competitor_a"], src["competitor_b"], "rater-1", d, winner, strength,
                          'A felt warmer, "really", more', first))  # fmt: skip
    assert {tuple(r[c] for c in PAIR_COLUMNS) for r in rows} == expected and len(rows) == len(expected)

    imported, report = read_human_judgments(export_csv, set(HISTORIES), COMPETITORS)
    assert report.imported == len(rows) == len(imported) and not report.skipped
    jsonl = tmp_path / "humans.jsonl"
    export_study(study, jsonl, tmp_path / "conv.jsonl")
    again, report2 = read_human_judgments(jsonl, set(HISTORIES), COMPETITORS)
    assert sorted(map(str, again)) == sorted(map(str, imported)) and not report2.skipped

    conv_csv = tmp_path / "out" / "humans-conversations.csv"
    with conv_csv.open(encoding="utf-8") as f:
        conv = list(csv.DictReader(f))
    assert list(conv[0]) == CONVERSATION_COLUMNS
    assert {r["conversation_id"] for r in conv} == {"p1|sup-alpha|0", "p2|sup-beta|0"}
    assert {r["score"] for r in conv} == {"4"} and all(r["time"].endswith("+00:00") for r in conv)
    lines = [json.loads(x) for x in (tmp_path / "conv.jsonl").read_text().splitlines()]
    assert len(lines) == 20 and lines[0]["score"] == 4
    with pytest.raises(EmoharborError, match=r"\.csv or \.jsonl"):
        export_study(study, tmp_path / "x.txt")


def test_export_leaves_out_drafts(tmp_path: Path) -> None:
    study = make_study(tmp_path, conversations=False).study
    rater = study.raters()[0]
    study.save(rater.id, study.queue(rater.id)[0].item_id, {"choice.overall": "A"})
    summary = export_study(study, tmp_path / "h.csv")
    assert summary["pair_rows"] == 0 and summary["unsubmitted_drafts_left_out"] == 1
    assert "conversation_rows" not in summary


def test_agreement_so_far_and_attention_checks(tmp_path: Path) -> None:
    setup = make_study(tmp_path, conversations=False, limit=2, attention=2)
    study = setup.study
    r1, r2 = study.raters()
    items = {it.id: it for it in study.items()}
    plain = sorted(i for i, it in items.items() if not it.attention)
    dims = study.heart_dimensions()
    # rater-1: all "a" on the first item, all "b" on the second; rater-2: all "a", then all ties
    plan = {(r1.id, plain[0]): "a", (r1.id, plain[1]): "b", (r2.id, plain[0]): "a", (r2.id, plain[1]): "tie"}
    for rater in (r1, r2):
        for a in study.queue(rater.id):
            if items[a.item_id].attention:  # rater-1 picks the good reply both times, rater-2 once
                good = "b" if rater is r2 and a.item_id == min(i for i in items if items[i].attention) else "a"
                sides = dict.fromkeys(DIMS, good)
            else:
                sides = dict.fromkeys(DIMS, plan[(rater.id, a.item_id)])
            ok, todo = study.save(rater.id, a.item_id, pair_form(sides, a.first),
                                  submit_if=lambda have: missing("pair", dims, have))  # fmt: skip
            assert ok and todo == []
    data = admin_data(study)
    between = data["agreement"]["between_raters"]
    assert len(between) == 1 and between[0]["shared_items"] == 2 and between[0]["labels_compared"] == 12
    # p_o = 6/12; rater-1 a 1/2 b 1/2, rater-2 a 1/2 tie 1/2: p_e = 1/4; kappa = (1/2 - 1/4) / (3/4) = 1/3
    assert between[0]["percent_agreement"] == 50.0 and between[0]["kappa"] == pytest.approx(0.333, abs=1e-3)
    overall = next(r for r in data["agreement"]["per_dimension"] if r["dimension"] == "overall")
    assert overall["items_with_several_raters"] == 2 and overall["labels_compared"] == 2
    assert overall["percent_agreement"] == 50.0 and overall["kappa"] == pytest.approx(0.333, abs=1e-3)
    by_name = {r["rater"]: r for r in data["raters"]}
    assert (by_name["rater-1"]["attention_passed"], by_name["rater-1"]["attention_failed"]) == (2, 0)
    assert (by_name["rater-2"]["attention_passed"], by_name["rater-2"]["attention_failed"]) == (1, 1)
    assert by_name["rater-1"]["submitted"] == 4 and by_name["rater-1"]["assigned"] == 4
    assert {r["submitted"] for r in data["items"]} == {2}


def test_attention_bank_is_well_formed() -> None:
    bank = attention_bank()
    assert len(bank["pair"]) == 4 and len(bank["conversation"]) == 3
    for spec in bank["pair"]:
        assert spec["good"] != spec["bad"] and spec["turns"][-1][0] == "seeker"
    for spec in bank["conversation"]:
        assert {s for s, _ in spec["turns"]} == {"user", "supporter"}
