"""Replies rated by people as a HEART run (``emoharbor heart import-rated``): the generic format and the
welivita preset on small invented files, the pairs the ratings imply, every bad input as one line, the
seeker's choice, the judges, agreement and ratings on an imported run against the fake server, a killed judge
stage resumed. No real data: every file here is made up."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from cli_helpers import count, emoharbor, run_main
from emoharbor.cli import cli
from emoharbor.heart.analysis import reports
from emoharbor.heart.config import HeartConfig, HistorySource
from emoharbor.heart.histories import History, Rating, Turn
from emoharbor.heart.rated import read_rated
from emoharbor.heart.rated_pairs import pair_rows
from emoharbor.heart.stages import pipeline
from emoharbor.heart.stages.sources import load_histories
from emoharbor.models.base import ChatResult, Message, TokenLogprob
from emoharbor.models.scripted import ScriptedModel
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer
from heart_helpers import models, plan_of

WELIVITA_COLUMNS = ["dialog_id", "emotion", "situation", "speaker_uttr", "extra_note",
                    *(f"{k}_{c}" for c in ("human", "chatgpt", "chatgpt_empathy")
                      for k in ("response", "rating", "annotator"))]  # fmt: skip
WELIVITA_ROWS = [  # invented prompts and replies
    {"dialog_id": "p1", "emotion": "lonely", "situation": "I moved to a new city",
     "speaker_uttr": "I know nobody here.", "response_human": "That's tough.", "rating_human": "1",
     "annotator_human": "h1", "response_chatgpt": "Moving somewhere new can feel so isolating.",
     "rating_chatgpt": "3", "annotator_chatgpt": "c1",
     "response_chatgpt_empathy": "I'm sorry, it sounds lonely; what did you enjoy back home?",
     "rating_chatgpt_empathy": "3", "annotator_chatgpt_empathy": "e1", "extra_note": "x"},
    {"dialog_id": "p2", "emotion": "proud", "situation": "I ran a marathon",
     "speaker_uttr": "I finished my first marathon!",
     "response_human": "Wow, well done you!", "rating_human": "2", "annotator_human": "h2",
     "response_chatgpt": "Congratulations.", "rating_chatgpt": "1", "annotator_chatgpt": "c1",
     "response_chatgpt_empathy": "That is a huge achievement, you must be proud.", "rating_chatgpt_empathy": "2",
     "annotator_chatgpt_empathy": "e2", "extra_note": ""},
]  # fmt: skip
GENERIC = [  # two raters on one history (r1, r2), one on another; the competitors a, b, c
    {"history": "I failed my driving test.", "reply": "Oh no.", "competitor": "a", "rater": "r1", "score": "2"},
    {"history": "I failed my driving test.", "reply": "That stings; many pass the second time.", "competitor": "b",
     "rater": "r1", "score": "4"},
    {"history": "I failed my driving test.", "reply": "Oh no.", "competitor": "a", "rater": "r2", "score": "3"},
    {"history": "I failed my driving test.", "reply": "That stings; many pass the second time.", "competitor": "b",
     "rater": "r2", "score": "3"},
    {"history": "My sister stopped calling me.", "reply": "Why?", "competitor": "a", "rater": "r1", "score": "1"},
    {"history": "My sister stopped calling me.", "reply": "That must hurt. Do you know what changed?",
     "competitor": "c", "rater": "r1", "score": "5"},
]  # fmt: skip


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def write_csv(path: Path, rows: list[dict[str, str]], columns: list[str] | None = None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns or list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    return path


def welivita(tmp_path: Path, rows: list[dict[str, str]] | None = None, name: str = "w.csv") -> Path:
    return write_csv(tmp_path / name, rows or WELIVITA_ROWS, WELIVITA_COLUMNS)


def generic_source(path: Path, **extra: Any) -> HistorySource:
    return HistorySource.model_validate({"path": str(path), "format": "rated", "scale": [1, 5],
                                         "competitors": ["a", "b", "c"], **extra})  # fmt: skip


def import_run(tmp_path: Path, file: Path, *args: str, judges: list[dict[str, Any]] | None = None) -> Path:
    """``heart import-rated FILE ARGS`` into tmp_path/run, with ``judges`` (default: one scripted judge)."""
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump({"judges": judges or [{"model": "scripted", "name": "j"}], "bootstrap": 50}))
    run = tmp_path / "run"
    r = CliRunner().invoke(cli, ["heart", "import-rated", str(file), *args, "--config", str(config), "--run", str(run),
                                 "--quiet"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return run


# -- the two importers ---------------------------------------------------------------------------------------------
def test_the_welivita_preset_makes_histories_candidates_and_the_pairs_people_implied(tmp_path: Path) -> None:
    run = import_run(tmp_path, welivita(tmp_path), "--preset", "welivita")
    store, config, _ = pipeline.read_run(run)
    try:
        assert config.competitors() == ["human", "chatgpt", "chatgpt_empathy"]
        hs = pipeline.histories(store)
        assert sorted(hs) == ["welivita:p1", "welivita:p2"]
        h = hs["welivita:p1"]
        assert [(t.speaker, t.text) for t in h.turns] == [("seeker", "I know nobody here.")]
        assert (h.situation, h.emotion_type) == ("I moved to a new city", "lonely")
        cands = pipeline.candidates(store)
        assert len(cands) == 6 and all(c["status"] == "ok" and c["source"] == "rated" for c in cands.values())
        assert cands[("welivita:p2", "chatgpt")]["text"] == "Congratulations."
        rows = {(d["history_id"], d["a"], d["b"]): d for _, d in store.items("human_judgment")}
        assert len(rows) == 6
        one = rows[("welivita:p1", "human", "chatgpt")]
        assert (one["winner"], one["rater"], one["dimension"]) == ("chatgpt", "h1+c1", "overall")
        assert rows[("welivita:p1", "chatgpt", "chatgpt_empathy")]["winner"] == "tie"  # 3 and 3: the people's tie
        assert rows[("welivita:p2", "human", "chatgpt_empathy")]["winner"] == "tie"
        assert rows[("welivita:p2", "human", "chatgpt")]["winner"] == "human"
        assert store.get("stage", ("import",))["human_ties"] == 2
    finally:
        store.close()


def test_the_generic_format_csv_with_several_raters(tmp_path: Path) -> None:
    run = import_run(tmp_path, write_csv(tmp_path / "g.csv", GENERIC), "--scale", "1-5")
    store, config, _ = pipeline.read_run(run)
    try:
        assert config.competitors() == ["a", "b", "c"]  # in the order they first appear in the file
        rows = sorted(
            (d["history_id"], d["a"], d["b"], d["rater"], d["winner"]) for _, d in store.items("human_judgment")
        )
        assert rows == [("rated:0", "a", "b", "r1", "b"), ("rated:0", "a", "b", "r2", "tie"),
                        ("rated:1", "a", "c", "r1", "c")]  # fmt: skip
        # a competitor with no reply to a history is missing there, never judged
        assert pipeline.candidates(store)[("rated:0", "c")]["reason"] == "missing"
        data = reports.agreement_report(store, config, tmp_path)
        overall = next(r for r in data["human_human"] if r["dimension"] == "overall")
        assert overall["items_with_several_raters"] == 1 and overall["pairs"] == 1  # r1 and r2 on one item
        assert math.isclose(overall["agree_with_ties"], 0.0)  # r1: b, r2: tie
    finally:
        store.close()


def test_the_generic_format_jsonl_with_turns_ids_and_dimensions(tmp_path: Path) -> None:
    lines = [
        {"history_id": "t1", "history": ["I can't sleep.", "What keeps you up?", "Work."], "situation": "stress",
         "emotion": "anxious", "reply": "Work worries can follow us to bed.", "competitor": "a", "score": 4,
         "dimension": "Empathic responsiveness"},
        {"history_id": "t1", "history": ["I can't sleep.", "What keeps you up?", "Work."], "reply": "Try tea.",
         "competitor": "b", "score": 2.5, "dimension": "empathic_responsiveness"},
    ]  # fmt: skip
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    histories, report = read_rated(generic_source(path, competitors=["a", "b"]), path)
    assert report.examined == 2 and report.usable == 1
    h = histories[0]
    assert h.id == "rated:t1" and [t.speaker for t in h.turns] == ["seeker", "supporter", "seeker"]
    assert (h.situation, h.emotion_type) == ("stress", "anxious")
    assert [(r.competitor, r.rater, r.dimension, r.score) for r in h.ratings] == [
        ("a", "unnamed", "empathic_responsiveness", 4.0), ("b", "unnamed", "empathic_responsiveness", 2.5)]  # fmt: skip


def test_limit_and_sample_keep_a_part_of_the_histories(tmp_path: Path) -> None:
    rows = [{**WELIVITA_ROWS[i % 2], "dialog_id": f"p{i}"} for i in range(8)]
    src = {"path": str(welivita(tmp_path, rows)), "format": "rated", "preset": "welivita"}
    first = read_rated(HistorySource.model_validate(src), Path(src["path"]))[0]
    cfg = HeartConfig.model_validate({"histories": [{**src, "sample": 3, "seed": 4}], "judges": ["scripted"]})
    loaded = load_histories(cfg, tmp_path)[0]
    assert len(first) == 8 and len(loaded) == 3 and {h.id for h in loaded} <= {h.id for h in first}
    cfg = HeartConfig.model_validate({"histories": [{**src, "first": 2}], "judges": ["scripted"]})
    assert [h.id for h in load_histories(cfg, tmp_path)[0]] == ["welivita:p0", "welivita:p1"]


# -- how ratings become pairs --------------------------------------------------------------------------------------
def history(*ratings: tuple[str, str, float]) -> History:
    return History("h", "regular", "f", [Turn("seeker", "hi")], replies={c: c for c, _, _ in ratings},
                   ratings=[Rating(c, rater, "overall", s) for c, rater, s in ratings])  # fmt: skip


def test_pairs_same_rater_and_across_raters() -> None:
    h = history(("b", "r1", 2.0), ("a", "r1", 2.0), ("b", "r2", 1.0), ("a", "r2", 3.0), ("c", "r3", 5.0))
    same = [(r["a"], r["b"], r["rater"], r["winner"]) for r in pair_rows(h, ["a", "b", "c"], "same_rater")]
    assert same == [("a", "b", "r1", "tie"), ("a", "b", "r2", "a")]  # r3 rated one reply: no pair of its own
    g = history(("a", "x", 1.0), ("b", "y", 3.0), ("c", "x", 1.0))
    across = [(r["a"], r["b"], r["rater"], r["winner"], r["scores"]) for r in pair_rows(g, ["c", "b", "a"],
                                                                                         "across_raters")]  # fmt: skip
    assert across == [("c", "b", "x+y", "b", {"c": 1.0, "b": 3.0}), ("c", "a", "x", "tie", {"c": 1.0, "a": 1.0}),
                      ("b", "a", "y+x", "b", {"b": 3.0, "a": 1.0})]  # fmt: skip


# -- bad input: one line naming the file, the row and the field; nothing written ---------------------------------
def generic_rows(**change: Any) -> list[dict[str, str]]:
    rows = [dict(r) for r in GENERIC]
    for k, v in change.items():
        rows[1][k] = v
    return rows


BAD = [
    ("w.csv", lambda: [{**WELIVITA_ROWS[0], "rating_chatgpt": "4"}], ["--preset", "welivita"],
     ["w.csv: row 2: field 'score' (column 'rating_chatgpt') '4' is outside the scale 1-3"]),
    ("w.csv", lambda: [{**WELIVITA_ROWS[0], "response_human": "  "}], ["--preset", "welivita"],
     ["w.csv: row 2: field 'reply' (column 'response_human') is empty"]),
    ("g.csv", lambda: generic_rows(score="high"), ["--scale", "1-5"],
     ["g.csv: row 3: field 'score' 'high' is not a number"]),
    ("g.csv", lambda: generic_rows(score="0"), ["--scale", "1-5"],
     ["row 3: field 'score' '0' is outside the scale 1-5"]),
    ("g.csv", lambda: generic_rows(reply=""), ["--scale", "1-5"], ["g.csv: row 3: field 'reply' is empty"]),
    ("g.csv", lambda: generic_rows(history=""), ["--scale", "1-5"], ["g.csv: row 3: field 'history' is empty"]),
    ("g.csv", lambda: GENERIC[4:5] + GENERIC[:2], ["--scale", "1-5"],
     ["g.csv: row 2: history 'rated:0' has one reply (competitor a): a pair needs two replies"]),
    ("g.csv", lambda: [{**GENERIC[4], "rater": "x"}, {**GENERIC[5], "rater": "y"}], ["--scale", "1-5"],
     ["g.csv: row 2: history 'rated:0': its ratings imply no pair: no rater rated two of its replies"]),
    ("g.csv", lambda: generic_rows(reply="Oh no.", competitor="a", rater="r1"), ["--scale", "1-5"],
     ["g.csv: row 3: field 'score' rates a's reply on overall again (first in row 2): rater r1 rated it before"]),
    ("g.csv", lambda: generic_rows(competitor="a"), ["--scale", "1-5"],
     ["g.csv: row 3: field 'reply' is not the reply a gave to this history in row 2"]),
    ("g.csv", lambda: generic_rows(dimension="warmth"), ["--scale", "1-5"],
     ["g.csv: row 3: field 'dimension' 'warmth' is not overall nor a HEART dimension"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "rows", "args", "needles"), BAD)
def test_bad_rows_are_one_line_and_leave_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                rows: Any, args: list[str], needles: list[str]) -> None:  # fmt: skip
    data = rows()
    path = write_csv(tmp_path / name, data, WELIVITA_COLUMNS if name == "w.csv" else None)
    code, out, err = run_main(["heart", "import-rated", str(path), *args, "--run", str(tmp_path / "run")], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert all(n in err for n in needles), err
    assert not (tmp_path / "run").exists()


def test_bad_files_are_one_line_and_leave_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = write_csv(tmp_path / "m.csv", [{k: v for k, v in WELIVITA_ROWS[0].items() if k != "rating_chatgpt"}])
    extra = write_csv(tmp_path / "e.csv", [{**r, "ratr": "x"} for r in GENERIC])
    txt = tmp_path / "r.txt"
    txt.write_text("history,reply\n", encoding="utf-8")
    bad_json = tmp_path / "b.jsonl"
    bad_json.write_text(json.dumps({**GENERIC[0], "score": 2}) + "\n{not json\n", encoding="utf-8")
    not_object = tmp_path / "n.jsonl"
    not_object.write_text("[1, 2]\n", encoding="utf-8")
    cases = [
        ([str(missing), "--preset", "welivita"],
         "m.csv: the header lacks the columns ['rating_chatgpt'], which the welivita preset reads"),
        ([str(extra), "--scale", "1-5"], "e.csv: the header has the column 'ratr': the generic format's columns are"),
        ([str(txt), "--scale", "1-5"], "r.txt: neither a CSV (.csv) nor a JSON-lines (.jsonl) file"),
        ([str(bad_json), "--scale", "1-5"], "b.jsonl: line 2: not valid JSON"),
        ([str(not_object), "--scale", "1-5"], "n.jsonl: line 1: not a JSON object"),
        ([str(tmp_path / "absent.csv"), "--scale", "1-5"], "absent.csv not found"),
        ([str(extra)], "--scale LOW-HIGH: a generic file of rated replies needs the scale"),
        ([str(extra), "--scale", "five"], "--scale five: give the lowest and highest rating as LOW-HIGH"),
        ([str(extra), "--limit", "1", "--sample", "1", "--scale", "1-5"], "give --limit N"),
    ]  # fmt: skip
    for args, needle in cases:
        code, out, err = run_main(["heart", "import-rated", *args, "--run", str(tmp_path / "run")], capsys)
        assert code == 2 and out == "" and needle in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert not (tmp_path / "run").exists()


def test_rated_settings_are_checked_in_a_config(tmp_path: Path) -> None:
    path = welivita(tmp_path)
    with pytest.raises(ValueError, match="settings of a file of rated replies"):
        HistorySource.model_validate({"path": "x.json", "scale": [1, 5]})
    with pytest.raises(ValueError, match="needs 'scale'"):
        HistorySource.model_validate({"path": "x.csv", "format": "rated", "competitors": ["a", "b"]})
    with pytest.raises(ValueError, match="the welivita preset's scale"):
        HistorySource.model_validate({"path": str(path), "format": "rated", "preset": "welivita", "scale": [1, 5]})
    with pytest.raises(ValueError, match="give no other source, no candidates"):
        HeartConfig.model_validate({"histories": [{"path": str(path), "format": "rated", "preset": "welivita"}],
                                    "candidates": ["scripted"]})  # fmt: skip
    with pytest.raises(ValueError, match="'humans' and 'pooled' name the people"):
        HeartConfig.model_validate({"histories": [{"path": "x.json"}], "candidates": ["scripted"],
                                    "judges": [{"model": "scripted", "name": "humans"}]})  # fmt: skip
    # a config without a rated source keeps the stored shape (and hash) it had before rated sources existed
    plain = HeartConfig.model_validate({"histories": [{"path": "x.json"}], "candidates": ["scripted"]})
    assert not {"preset", "scale", "dimension", "pairing", "competitors"} & set(plain.resolved()["histories"][0])


# -- the seeker's choice -------------------------------------------------------------------------------------------
def seeker_answer(word: str) -> Any:
    """A scripted seeker: the reply holding ``word`` helps it more."""

    def fn(messages: list[Message], schema: dict[str, Any] | None) -> str:
        text = messages[-1]["content"]
        if "Reply 1:" not in text:  # the check that the model gives log-probabilities
            return '{"score": 2}'
        first = text.split("Reply 1:")[1].split("Reply 2:")[0]
        return json.dumps({"overall": 1 if word in first else 2})

    return fn


class ProbableSeeker(ScriptedModel):
    """A scripted seeker whose answer comes with token log-probabilities: 0.8 on the digit it writes, 0.2 on the
    other choice."""

    async def chat(self, messages: list[Message], **kw: Any) -> ChatResult:
        r = await super().chat(messages, **kw)
        i = next(i for i, ch in enumerate(r.text) if ch.isdigit())
        digit, other = r.text[i], "2" if r.text[i] == "1" else "1"
        top = ((digit, math.log(0.8)), (other, math.log(0.2)))
        tokens = (
            TokenLogprob(r.text[:i], 0.0),
            TokenLogprob(digit, math.log(0.8), top),
            TokenLogprob(r.text[i + 1 :], 0.0),
        )
        return ChatResult(text=r.text, usage=r.usage, model=r.model, logprobs=tokens)


async def test_the_seeker_chooses_in_both_orders_with_probabilities(tmp_path: Path) -> None:
    path = welivita(tmp_path)
    cfg = HeartConfig.model_validate({
        "histories": [{"path": str(path), "format": "rated", "preset": "welivita"}],
        "judges": [{"model": "scripted", "name": "seeker", "card": "seeker_choice"}], "bootstrap": 20})  # fmt: skip
    seeker = ProbableSeeker(seeker_answer("sorry"))  # p1's chatgpt_empathy reply only
    store = pipeline.open_run(tmp_path / "run", plan_of(cfg, tmp_path))
    try:
        await pipeline.generate(store, plan_of(cfg, tmp_path), models({}), progress=False)
        summary = await pipeline.judge(store, plan_of(cfg, tmp_path), models({"seeker": seeker}), progress=False)
        assert summary["judgements"] == 12 and summary["judgements_by_status"] == {"ok": 12}
        prompt = next(c[-1]["content"] for c in seeker.calls if "Reply 1:" in c[-1]["content"])
        assert "How you feel: lonely." in prompt and "What happened, as you told it before the chat: I moved" in prompt
        assert "Seeker: I know nobody here." in prompt and "Reply 2:" in prompt
        got = {(d["history_id"], d["a"], d["b"], d["order"]): d for _, d in store.items("comparison")}
        ab = got[("welivita:p1", "human", "chatgpt_empathy", "ab")]["verdicts"]["overall"]
        ba = got[("welivita:p1", "human", "chatgpt_empathy", "ba")]["verdicts"]["overall"]
        assert ab["winner"] == ba["winner"] == "chatgpt_empathy"  # both orders: the reply, not the place
        assert math.isclose(ab["p_first"], 0.2) and math.isclose(ba["p_first"], 0.8)
        data = reports.agreement_report(store, cfg, tmp_path)
        rows = {(r["scorer"], r["reading"]): r for r in data["people_pairs"]}
        # the people decided 4 pairs; the seeker names p1's chatgpt_empathy reply in both orders (the people's
        # choice there) and elsewhere the reply shown second: a flip, 0.5, a tie
        written = rows[("seeker", "verdicts, both orders")]
        assert written["pairs"] == 4 and written["ties"] == 3 and math.isclose(written["agreement"], 0.625)
        soft = rows[("seeker", "probability, both orders")]  # P(the people's choice): 0.8 both orders on that pair
        assert math.isclose(soft["agreement"], (0.8 + 0.5 + 0.5 + 0.5) / 4)
        longer = rows[("longer reply", "more words")]
        assert longer["baseline"] is True and math.isclose(longer["agreement"], 1.0)  # the people's longer reply won
        # the margin over the baseline on the same pairs: 2 histories, so no interval and no verdict
        assert math.isclose(written["minus_baseline"], 0.625 - 1.0) and written["beats_baseline"] == "n/a"
        assert longer["minus_baseline"] is None and written["not_asked"] == 0
    finally:
        store.close()


async def test_a_pair_the_judge_was_not_given_is_not_asked_not_unscored(tmp_path: Path) -> None:
    cfg = HeartConfig.model_validate({
        "histories": [{"path": str(welivita(tmp_path)), "format": "rated", "preset": "welivita"}],
        "judges": [{"model": "scripted", "name": "seeker", "card": "seeker_choice"}], "pairs": "with_human",
        "bootstrap": 20})  # fmt: skip
    store = pipeline.open_run(tmp_path / "run", plan_of(cfg, tmp_path))
    try:
        await pipeline.generate(store, plan_of(cfg, tmp_path), models({}), progress=False)
        seeker = ProbableSeeker(seeker_answer("sorry"))
        summary = await pipeline.judge(store, plan_of(cfg, tmp_path), models({"seeker": seeker}), progress=False)
        assert summary["judgements"] == 8  # the human against each model, on 2 histories, both orders
        rows = {(r["scorer"], r["reading"]): r for r in reports.agreement_report(store, cfg, tmp_path)["people_pairs"]}
    finally:
        store.close()
    # of the people's 4 decided pairs, p2's chatgpt against chatgpt_empathy was never put to the judge
    seeker_row = rows[("seeker", "verdicts, both orders")]
    assert (seeker_row["pairs"], seeker_row["unscored"], seeker_row["not_asked"]) == (3, 0, 1)
    assert rows[("longer reply", "more words")]["pairs"] == 3  # every scorer on the same pairs


# -- judge, agreement, ratings and a reply card on an imported run, against the fake server ----------------------
def test_judge_agreement_ratings_and_a_reply_card_on_an_imported_run(tmp_path: Path) -> None:
    rows = [{**WELIVITA_ROWS[i % 2], "dialog_id": f"p{i}"} for i in range(6)]
    with FakeOpenAIServer() as srv:
        fake = {"model": "fake", "base_url": srv.base_url, "temperature": 0}
        judges = [{**fake, "name": "judge"}, {**fake, "name": "seeker", "card": "seeker_choice"}]
        run = import_run(tmp_path, welivita(tmp_path, rows), "--preset", "welivita", judges=judges)
        runner = CliRunner()
        r = runner.invoke(cli, ["heart", "judge", str(run), "--quiet"])
        assert r.exit_code == 0, r.output
        assert "judged 18 pairs in both orders by every judge: 72 judgements (72 ok, 0 unscored, 0 errors)" in r.output
        card = ["--judge", "third_party_reply", "--judge-model", "fake", "--base-url", srv.base_url, "--quiet"]
        r = runner.invoke(cli, ["heart", "score-replies", str(run), *card])
        assert r.exit_code == 0 and "scored 18 replies with third_party_reply" in r.output, r.output
        agreement = json.loads(runner.invoke(cli, ["heart", "agreement", str(run), "--format", "json"]).output)
        ratings = json.loads(runner.invoke(cli, ["heart", "ratings", str(run), "--format", "json"]).output)
        md = runner.invoke(cli, ["heart", "agreement", str(run)]).output
        r = runner.invoke(cli, ["report", str(run), "--out", str(tmp_path / "r.html")])
        assert r.exit_code == 0, r.output
    judge_all = next(x for x in agreement["judge_human"] if x["judge"] == "judge" and x["dimension"] == "overall")
    assert judge_all["pairs"] == 18  # every pair of every history, one human judgment each
    assert agreement["human_judgments"] == 18
    scorers = {(x["scorer"], x["reading"]) for x in agreement["people_pairs"]}
    assert {("judge", "verdicts, both orders"), ("seeker", "verdicts, both orders"),
            ("seeker", "probability, both orders"), ("third_party_reply:fake", "higher score (expected)"),
            ("longer reply", "more words")} <= scorers  # fmt: skip
    assert len({x["pairs"] for x in agreement["people_pairs"]}) == 1  # every scorer on the same pairs
    spearman = {(x["scorer"], x["reading"]): x for x in agreement["people_ratings"]}
    assert spearman[("words", "word count")]["replies"] == 18 and spearman[("words", "word count")]["histories"] == 6
    assert spearman[("third_party_reply:fake", "expected")]["low"] is not None  # 6 histories: an interval
    check_margins(agreement)
    humans = [x for x in ratings["ratings"] if x["judge"] == "humans" and x["dimension"] == "overall"]
    assert {x["competitor"] for x in humans} == {"human", "chatgpt", "chatgpt_empathy"}
    assert {x["judge"] for x in ratings["order_consistency"]} == {"judge", "seeker"}  # people are not judged twice
    assert "## Scorers against the people's pairs" in md and "longer reply (baseline)" in md
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Scorers against the people's pairs" in page and "beats_baseline" in page


def check_margins(agreement: dict[str, Any]) -> None:
    """Each scorer's margin is its figure minus the baseline's on the same items, and its verdict reads the
    margin's interval."""
    for table, stat, base in (("people_pairs", "agreement", "longer reply"), ("people_ratings", "spearman", "words")):
        rows = agreement[table]
        [baseline] = [r for r in rows if r["scorer"] == base]
        for r in rows:
            if r["baseline"]:
                assert r["minus_baseline"] is None and r["beats_baseline"] is None
                continue
            assert r["minus_baseline"] == pytest.approx(r[stat] - baseline[stat], abs=1e-3)  # figures are rounded
            lo, hi = r["minus_baseline_low"], r["minus_baseline_high"]
            assert lo is not None and lo <= r["minus_baseline"] <= hi
            assert r["beats_baseline"] == ("yes" if lo > 0 else "below" if hi < 0 else "no")


# -- a killed judge stage resumes: nothing finished is lost or done again ------------------------------------------
def test_a_killed_judge_stage_on_an_imported_run_resumes(tmp_path: Path) -> None:
    rows = [{**WELIVITA_ROWS[i % 2], "dialog_id": f"p{i}"} for i in range(3)]
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(latency_s=0.15) as srv:
        fake = {"model": "fake", "base_url": srv.base_url, "temperature": 0, "max_retries": 0}
        run = import_run(tmp_path, welivita(tmp_path, rows), "--preset", "welivita", judges=[{**fake, "name": "j"}])
        p = emoharbor("heart", "judge", str(run), "--quiet", "--set", "concurrency=1", env=env)
        deadline = time.monotonic() + 60
        while count(run, "comparison") < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        with sqlite3.connect(run / "run.sqlite") as db:
            before = dict(db.execute("SELECT key, data FROM results WHERE kind='comparison'").fetchall())
        assert 3 <= len(before) < 18, "the kill should land mid-stage"
        again = emoharbor("heart", "judge", str(run), "--quiet", env=env)
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert f"{18 - len(before)} done now, {len(before)} already done" in out
    with sqlite3.connect(run / "run.sqlite") as db:
        after = dict(db.execute("SELECT key, data FROM results WHERE kind='comparison'").fetchall())
        calls = db.execute("SELECT unit_key, COUNT(*) FROM calls WHERE unit_kind='comparison' GROUP BY unit_key")
        per_unit = dict(calls.fetchall())
    assert len(after) == 18 and all(after[k] == v for k, v in before.items())  # none lost, none rewritten
    assert all(per_unit[k] == 1 for k in before)  # none asked again
    store = RunStore.open_existing(run)
    try:
        assert {d["status"] for _, d in store.items("comparison")} == {"ok"}
    finally:
        store.close()


def test_importing_again_resumes_and_a_changed_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = welivita(tmp_path)
    run = import_run(tmp_path, path, "--preset", "welivita")
    args = ["heart", "import-rated", str(path), "--preset", "welivita", "--config", str(tmp_path / "judges.yaml"),
            "--run", str(run), "--quiet"]  # fmt: skip
    code, out, err = run_main(args, capsys)
    assert code == 0 and "0 done now, 6 already done" in out, err
    welivita(tmp_path, [WELIVITA_ROWS[1], WELIVITA_ROWS[0]])
    code, out, err = run_main(args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "w.csv" in err, err


def test_heart_generate_reads_a_rated_source_of_a_config(tmp_path: Path) -> None:
    welivita(tmp_path)
    config = tmp_path / "rated.yaml"
    config.write_text(yaml.safe_dump({"name": "w", "judges": ["scripted"],
                                      "histories": [{"path": "w.csv", "format": "rated", "preset": "welivita",
                                                     "dimension": "Empathic responsiveness"}]}))  # fmt: skip
    r = CliRunner().invoke(cli, ["heart", "generate", str(config), "--run", str(tmp_path / "run"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "imported 2 histories with 6 candidate replies (6 ok, 0 unscored, 0 errors) and 6 human pair" in r.output
    store = RunStore.open_existing(tmp_path / "run")
    try:
        assert {d["dimension"] for _, d in store.items("human_judgment")} == {"empathic_responsiveness"}
    finally:
        store.close()


def test_cluster_resampled_spearman_is_the_spearman_of_the_resample_written_out() -> None:
    from emoharbor.stats.clusters import item_draws, spearman_cluster_ci, weighted_spearman_rows
    from emoharbor.stats.correlation import spearman

    x = [1.0, 2.0, 2.0, 3.0, 1.0, 3.0, 2.0, 1.0, 3.0]
    y = [1.0, 1.0, 2.0, 3.0, 2.0, 3.0, 1.0, 1.0, 2.0]
    clusters = ["p0", "p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3"]
    w = item_draws(clusters, 40, 7)
    assert w.shape == (40, 9) and all(w[r, 0] == w[r, 1] == w[r, 2] for r in range(40))  # a prompt goes whole
    got = weighted_spearman_rows(np_array(x), np_array(y), w)
    for r in range(40):
        idx = [i for i in range(9) for _ in range(int(w[r, i]))]
        want = spearman([x[i] for i in idx], [y[i] for i in idx])
        assert (want is None and math.isnan(got[r])) or math.isclose(got[r], want or 0.0, abs_tol=1e-9)
    e = spearman_cluster_ci(x, y, clusters, seed=7, n_boot=200)
    assert e.n == 4 and e.value is not None and math.isclose(e.value, spearman(x, y) or 0.0, abs_tol=1e-12)
    assert e.lo is not None and e.hi is not None and e.lo <= e.value <= e.hi


def np_array(values: list[float]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=float)


def test_agreement_before_any_judge_says_what_was_measured(tmp_path: Path) -> None:
    run = import_run(tmp_path, write_csv(tmp_path / "g.csv", GENERIC), "--scale", "1-5")
    out = CliRunner().invoke(cli, ["heart", "agreement", str(run)]).output
    judge_human = out.split("## Judge-human agreement", 1)[1].split("##", 1)[0]
    assert judge_human.strip() == ("Nothing measured: no pair has both a judge's verdict and a person's yet: "
                                   "`emoharbor heart judge RUN` makes the judges' verdicts.")  # fmt: skip
    ceiling = out.split("## Human-human agreement (the ceiling)", 1)[1].split("##", 1)[0]
    assert "| overall | 1 | 1 |" in ceiling and "n/a | n/a | n/a" not in ceiling
    assert "(5 rows with nothing measured left out.)" in ceiling
    assert "Nothing measured: no rationale yet" in out
