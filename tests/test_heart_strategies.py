"""Strategy labels: sentence splitting, the strategy list, labelling (and unparseable labels), profiles, the
degenerate-labelling signs, and the labeller checked against ESConv's annotators (``heart strategy-check``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from emoharbor.cli import cli
from emoharbor.data.esconv import load_esconv
from emoharbor.errors import DataError
from emoharbor.heart.analysis import reports
from emoharbor.heart.section import heart_html
from emoharbor.heart.stages import pipeline, strategy_check
from emoharbor.heart.stages.strategies import (
    builtin_strategies,
    builtin_strategy_file,
    label_patterns,
    load_strategies,
    load_strategy_file,
    split_sentences,
)
from emoharbor.models.base import Message
from emoharbor.models.spec import ModelSpec
from emoharbor.testing.fake_server import FakeOpenAIServer
from heart_helpers import models, plan_of, preferring, run_all, scripted

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
METADATA = SHARED / "heart" / "strategy_metadata.json"
ESCONV = SHARED / "esconv"


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("That sounds hard. I'm here for you!", ["That sounds hard.", "I'm here for you!"]),
        (
            "Have you talked to Dr. Lee about it? It might help.",
            ["Have you talked to Dr. Lee about it?", "It might help."],
        ),
        ('She said "enough." Then left.', ['She said "enough."', "Then left."]),
        ("Hmm... okay. :)", ["Hmm...", "okay. :)"]),
        ("one line\nsecond line", ["one line", "second line"]),
        ("e.g. walking helps", ["e.g. walking helps"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


@pytest.mark.skipif(not METADATA.is_file(), reason=f"{METADATA} is absent")
def test_builtin_strategies_have_the_heart_names_and_our_own_definitions() -> None:
    theirs = json.loads(METADATA.read_text(encoding="utf-8"))
    ours = builtin_strategies()
    assert sorted(ours) == sorted(theirs) and len(ours) == 15
    for name, definition in ours.items():
        assert definition not in theirs[name] and "Examples:" not in definition


def test_strategy_file_errors(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("Affirmation: ''\n", encoding="utf-8")
    with pytest.raises(DataError, match="non-empty"):
        load_strategies(p)
    with pytest.raises(DataError, match="not found"):
        load_strategies(tmp_path / "none.yaml")


def labeller(messages: list[Message], schema: dict[str, Any] | None) -> str:
    """Labels every sentence "Chit Chat" except "Just move on." (Suggest Options); refuses the exam history."""
    assert schema is not None
    text = messages[0]["content"]
    if "Exams next week" in text:
        return "I cannot label this."
    out = {}
    for key in schema["required"]:
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key}: "))
        out[key] = "Suggest Options" if "move on" in line else "Chit Chat"
    return json.dumps(out)


async def test_labels_and_profiles(tmp_path: Path) -> None:
    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    table = {"scripted": scripted(labeller)}
    summary = await pipeline.label(store, plan_of(config, tmp_path), models(table), progress=False)
    # usable candidates: kind x5, blunt x4, human x2 (regular:0 and regular:1)
    assert summary["replies"] == 11 and summary["candidates_unusable"] == 4
    assert summary["replies_by_status"] == {"ok": 9, "unscored": 2}  # the exam history, twice
    rec = store.get("strategy", ("regular:0", "human"))
    assert rec is not None and rec["sentences"] == ["I'm sorry, that must be a shock.", "How are you holding up?"]
    assert rec["labels"] == ["Chit Chat", "Chit Chat"]
    assert store.event_counts()["strategy_unlabelled"] == 2
    data = reports.strategies_report(store, config, tmp_path)
    prof = {(r["subset"], r["competitor"]): r for r in data["profiles"]}
    blunt = prof[("all", "blunt")]
    assert blunt["replies"] == 4 and blunt["sentences"] == 4 and blunt["unlabelled"] == 0
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert blunt["Suggest Options"] == pytest.approx(1.0) and blunt["Chit Chat"] == pytest.approx(0.0)
    kind = prof[("all", "kind")]
    assert kind["sentences"] == 5 and kind["unlabelled"] == 1 and kind["Chit Chat"] == pytest.approx(1.0)
    assert prof[("adversarial", "kind")]["replies"] == 2 and ("adversarial", "human") not in prof
    again = await pipeline.label(store, plan_of(config, tmp_path), models({}), progress=False)
    assert again["done_now"] == 0
    patterns = label_patterns([d for _, d in store.items("strategy")], list(builtin_strategies()))
    assert patterns["most_common_first"] == "Chit Chat" and patterns["first_sentences"] == 9
    # the code rounds shares and kappas to 4 places: a value that lands on a rounding boundary may differ by 1e-4
    assert (
        patterns["most_common_first_share"] == pytest.approx(round(5 / 9, 4), abs=1e-4) and patterns["warnings"] == []
    )
    store.close()
    md = CliRunner().invoke(cli, ["heart", "strategies", str(tmp_path / "run"), "--no-label"])
    assert md.exit_code == 0 and "## Degenerate labelling" in md.output and "'Chit Chat', 0.556 of 9" in md.output
    assert "Most common label of first sentences: Chit Chat" in heart_html(tmp_path / "run")


def test_degenerate_patterns_one_label_and_list_order() -> None:
    names = list(builtin_strategies())
    walk = [{"labels": names[:4]} for _ in range(3)]  # Affirmation, Avoid Judgment..., Clarification, ...
    p = label_patterns(
        [*walk, {"labels": ["Affirmation", None]}, {"labels": [None]}, {"labels": ["Affirmation"]}], names
    )
    assert (
        p["most_common_first"] == "Affirmation"
        and p["most_common_first_share"] == pytest.approx(1.0)
        and p["first_sentences"] == 5
    )
    assert p["adjacent_pairs"] == 9 and p["next_in_list_share"] == pytest.approx(1.0)
    assert p["next_in_list_by_chance"] == pytest.approx(round(1 / 15, 4), abs=1e-4)
    assert len(p["warnings"]) == 2 and "'Affirmation' on 5 of 5" in p["warnings"][0]
    assert "9 of 9 adjacent sentences" in p["warnings"][1]
    mixed = label_patterns([{"labels": ["Chit Chat", "Affirmation"]}, {"labels": ["Offer Hope"]}] * 3, names)
    assert mixed["warnings"] == [] and mixed["next_in_list_share"] == pytest.approx(0.0)


# -- the labeller against ESConv's annotators ------------------------------------------------------------

MARK = {"#C": "Clarification", "#R": "Reflective Statements", "#S": "Suggest Options", "#V": "Emotional Validation"}


def marked_labeller(messages: list[Message], schema: dict[str, Any] | None) -> str:
    """Labels each sentence by the mark it carries (#C, #R, #S, #V); refuses a message marked #X."""
    assert schema is not None
    text = messages[0]["content"]
    if "#X" in text:
        return "no idea"
    out = {}
    for key in schema["required"]:
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key}: "))
        out[key] = next(label for mark, label in MARK.items() if mark in line)
    return json.dumps(out)


def sys(text: str, strategy: str | None) -> dict[str, Any]:
    return {"speaker": "sys", "text": text, **({"strategy": strategy} if strategy else {})}


def usr(text: str) -> dict[str, Any]:
    return {"speaker": "usr", "text": text}


def write_esconv(folder: Path, extra: list[list[dict[str, Any]]] | None = None) -> Path:
    """Made-up conversations in the usr/sys format (no ESConv text). Annotators' labels (mapped) against the
    marks the labeller follows, first sentences: C-C, C-C, C-R, C-S, R-R, R-C, S-S, S-C; one refused."""
    one = [
        sys("Hi, what brings you here #C?", "Question"),  # before any seeker message: left out
        usr("I lost my job."),
        sys("What happened #C?", "Question"),
        sys("When was that #C?", "[Question]"),
        usr("Last week."),
        usr("I feel useless."),
        sys("How long were you there #R?", "Questions"),
        sys("Could you try a temp agency #S?", "Question"),
        sys("I was laid off once too #V.", "Self-disclosure"),  # no HEART counterpart
    ]
    two = [
        usr("My exams went badly."),
        sys("You sound worn out #R.", "Reflection of feelings"),
        usr("I am."),
        sys("So the results let you down #C?", "Restatement or Paraphrasing"),
        sys("Maybe plan the next one with a tutor #S. And rest #R.", "Providing Suggestions"),
        usr("Maybe."),
        sys("Did you ask for a resit #C?", "Providing Suggestions"),
        sys("Take care #V!", "Other"),  # the raw format's spelling of Others: no counterpart
        sys("Good luck #X.", "Affirmation and Reassurance"),  # the labeller refuses: unscored
        sys("Bye #C", None),  # no label
    ]
    rows = [{"dialog": one}, {"dialog": two}, *({"dialog": d} for d in (extra or []))]
    path = folder / "esconv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def check_setup(tmp_path: Path) -> tuple[Any, ...]:
    path = write_esconv(tmp_path)
    table = builtin_strategy_file()
    items, counts = strategy_check.esconv_items(load_esconv(path), table)
    settings = strategy_check.CheckSettings(labeller=ModelSpec(model="scripted"), bootstrap=200)
    store = strategy_check.open_check(tmp_path / "check", strategy_check.check_config(path, table, settings))
    return path, table, items, counts, settings, store


async def test_accuracy_kappa_and_the_majority_baseline_on_a_hand_made_case(tmp_path: Path) -> None:
    path, table, items, counts, settings, store = check_setup(tmp_path)
    assert counts == {
        "supporter_messages": 13,
        "no_esconv_label": 1,
        "before_the_first_seeker_message": 1,
        "no_heart_counterpart": {"Self-disclosure": 1, "Others": 1},
        "eligible": 9,
    }
    summary = await strategy_check.label_items(
        store, items, table, settings, models({"scripted": scripted(marked_labeller)})
    )
    assert summary == {"messages": 9, "done_now": 9, "resumed": 0}
    data = strategy_check.check_report(store, path, items, counts, table, settings)
    assert data["messages"]["scored"] == 8 and data["messages"]["unlabelled"] == 1 and data["scored"] == 8
    # p_o = 4/8; gold C4 R2 S2, labeller C4 R2 S2: p_e = (16 + 4 + 4) / 64 = 0.375; kappa = 0.125 / 0.625
    assert data["accuracy"]["value"] == pytest.approx(0.5) and data["kappa"]["value"] == pytest.approx(0.2)
    assert data["accuracy"]["low"] is not None and data["accuracy"]["low"] <= 0.5 <= data["accuracy"]["high"]
    base = data["baseline"]
    assert (
        base["label"] == "Clarification"
        and base["accuracy"]["value"] == pytest.approx(0.5)
        and base["kappa"] == pytest.approx(0.0)
    )
    assert data["accuracy_minus_baseline"]["value"] == pytest.approx(0.0)
    assert data["verdict"].startswith("The labeller does NOT beat the majority-class baseline")
    dist = {r["strategy"]: (r["annotators"], r["labeller"]) for r in data["distribution"]}
    assert dist == {"Clarification": (4, 4), "Reflective Statements": (2, 2), "Suggest Options": (2, 2)}
    conf = {r["esconv"]: r for r in data["confusion"]}
    assert conf["Question"]["n"] == 4 and conf["Question"]["Clarification"] == 2  # three spellings of Question
    assert conf["Providing Suggestions"]["Suggest Options"] == 1 and conf["Providing Suggestions"]["Clarification"] == 1
    assert conf["Affirmation and Reassurance"]["n"] == 0  # the refused message is not scored, not guessed
    rec = store.get("esconv_label", ("esconv:1#4",))
    assert rec is not None and rec["labels"] == ["Suggest Options", "Reflective Statements"]
    assert rec["esconv_label"] == "Providing Suggestions"
    md = strategy_check.check_md(data)
    assert "**The labeller does NOT beat the majority-class baseline" in md and "0 (by definition)" in md
    assert "unscored (never guessed): {'unlabelled': 1}" in md
    store.close()


def test_agreement_scores_beating_the_baseline() -> None:
    pairs = [("A", "A")] * 6 + [("B", "B")] * 3 + [("B", "A")]
    scores = strategy_check.agreement_scores(pairs, n_boot=200)
    # p_o = 0.9; gold A6 B4, labeller A7 B3: p_e = (42 + 12) / 100 = 0.54; kappa = 0.36 / 0.46
    assert scores["accuracy"]["value"] == pytest.approx(0.9) and scores["kappa"]["value"] == pytest.approx(
        round(0.36 / 0.46, 4), abs=1e-4
    )
    assert scores["baseline"]["accuracy"]["value"] == pytest.approx(0.6) and scores["accuracy_minus_baseline"][
        "value"
    ] == pytest.approx(0.3)
    assert strategy_check.verdict(scores).startswith("The labeller beats the majority-class baseline")
    empty = strategy_check.agreement_scores([])
    assert empty["accuracy"]["value"] is None and "Nothing was scored" in strategy_check.verdict(empty)


async def test_resume_skips_the_labels_done(tmp_path: Path) -> None:
    path, table, items, _, settings, store = check_setup(tmp_path)
    labeller = scripted(marked_labeller)
    first = strategy_check.select(items, 4, seed=0)
    assert strategy_check.select(items, 6, seed=0)[:4] == first  # a larger limit keeps the smaller one's
    done = await strategy_check.label_items(store, first, table, settings, models({"scripted": labeller}))

    def asked() -> set[str]:  # the messages the labeller was asked about
        return {c[0]["content"] for c in labeller.calls}

    assert done["done_now"] == 4 and len(asked()) == 4
    store.close()  # as a killed run leaves it; the same config opens the same folder again
    store = strategy_check.open_check(tmp_path / "check", strategy_check.check_config(path, table, settings))
    rest = await strategy_check.label_items(store, items, table, settings, models({"scripted": labeller}))
    assert rest == {"messages": 9, "done_now": 5, "resumed": 4} and len(asked()) == 9  # each message once
    again = await strategy_check.label_items(store, items, table, settings, models({}))  # no model is built
    assert again == {"messages": 9, "done_now": 0, "resumed": 9}
    store.close()


def test_a_label_missing_from_the_table_names_file_record_and_label(tmp_path: Path) -> None:
    path = write_esconv(tmp_path, extra=[[usr("Hi."), sys("I hear you #R.", "Empathy")]])
    with pytest.raises(DataError) as e:
        strategy_check.esconv_items(load_esconv(path), builtin_strategy_file())
    msg = str(e.value)
    assert f"{path}: record 3, turn 2" in msg and "'Empathy'" in msg and "strategies.yaml (built in)" in msg
    flat = tmp_path / "flat.yaml"
    flat.write_text("Listening: Hears the person out.\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"flat\.yaml has no esconv: table"):
        strategy_check.esconv_items(load_esconv(path), load_strategy_file(flat))


def test_the_mapping_is_read_from_the_strategy_file(tmp_path: Path) -> None:
    table = builtin_strategy_file()
    assert table.esconv["Question"] == "Clarification" and table.esconv["Self-disclosure"] is None
    assert table.esconv["Others"] is None and table.esconv_spellings == {"Questions": "Question", "Other": "Others"}
    assert set(v for v in table.esconv.values() if v) <= set(table.strategies) and len(table.esconv) == 8
    own = tmp_path / "own.yaml"
    own.write_text(
        "strategies: {Asking: Asks a question., Other talk: Anything else.}\n"
        "esconv: {Question: Asking, Self-disclosure: null, Others: Other talk}\n",
        encoding="utf-8",
    )
    mine = load_strategy_file(own)
    assert list(mine.strategies) == ["Asking", "Other talk"] and mine.esconv["Others"] == "Other talk"
    assert strategy_check.heart_strategy(mine, " [Question] ", "here") == ("Question", "Asking")
    own.write_text("strategies: {Asking: Asks.}\nesconv: {Question: Clarification}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"own.yaml: esconv: entries \['Question'\] must map to"):
        load_strategy_file(own)
    own.write_text("strategies: {Asking: Asks.}\nmapping: {}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"unknown sections \['mapping'\]"):
        load_strategy_file(own)


@pytest.mark.skipif(not (ESCONV / "strategy.json").is_file(), reason=f"{ESCONV} is absent")
def test_the_built_in_table_covers_esconvs_labels_in_every_file() -> None:
    table = builtin_strategy_file()
    for label in json.loads((ESCONV / "strategy.json").read_text(encoding="utf-8")):
        strategy_check.heart_strategy(table, label, "strategy.json")
    for name in ("valid.jsonl", "failed_dev.json"):
        items, counts = strategy_check.esconv_items(load_esconv(ESCONV / name), table)
        assert items and counts["no_heart_counterpart"]["Others"] > 0


def test_strategy_check_command_on_the_fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    path = write_esconv(tmp_path)
    run = tmp_path / "check"
    args = ["heart", "strategy-check", str(path), "--model", "fake", "--run", str(run), "--quiet"]
    with FakeOpenAIServer(reply=marked_labeller) as srv:
        r = CliRunner().invoke(cli, [*args, "--base-url", srv.base_url, "--limit", "5"])
        assert r.exit_code == 0, r.output
        assert "labelled 5 ESConv messages; 5 done now, 0 already done; run folder:" in r.output
        assert "HEART strategy labeller against ESConv" in r.output
        r = CliRunner().invoke(cli, [*args, "--base-url", srv.base_url, "--format", "json"])
        assert r.exit_code == 0, r.output
        assert "labelled 9 ESConv messages; 4 done now, 5 already done" in r.output
        assert srv.requests == 10  # 9 messages, 1 re-ask of the refused one
    data = json.loads(r.output[r.output.index("{\n") :])
    assert data["accuracy"]["value"] == pytest.approx(0.5) and data["kappa"]["value"] == pytest.approx(0.2)
