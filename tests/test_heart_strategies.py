"""Strategy labels: sentence splitting, the strategy list, labelling (and unparseable labels), profiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emoharbor.errors import DataError
from emoharbor.heart import pipeline, reports
from emoharbor.heart.strategies import builtin_strategies, load_strategies, split_sentences
from emoharbor.models.base import Message
from heart_helpers import models, preferring, run_all, scripted

METADATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "heart" / "strategy_metadata.json"


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
    summary = await pipeline.label(store, config, tmp_path, models(table), progress=False)
    # usable candidates: kind x5, blunt x4, human x2 (regular:0 and regular:1)
    assert summary["replies"] == 11 and summary["candidates_unusable"] == 4
    assert summary["replies_by_status"] == {"labelled": 9, "unlabelled": 2}  # the exam history, twice
    rec = store.get("strategy", "regular:0|human")
    assert rec is not None and rec["sentences"] == ["I'm sorry, that must be a shock.", "How are you holding up?"]
    assert rec["labels"] == ["Chit Chat", "Chit Chat"]
    assert store.event_counts()["strategy_unlabelled"] == 2
    data = reports.strategies_report(store, config, tmp_path)
    prof = {(r["subset"], r["competitor"]): r for r in data["profiles"]}
    blunt = prof[("all", "blunt")]
    assert blunt["replies"] == 4 and blunt["sentences"] == 4 and blunt["unlabelled"] == 0
    assert blunt["Suggest Options"] == 1.0 and blunt["Chit Chat"] == 0.0
    kind = prof[("all", "kind")]
    assert kind["sentences"] == 5 and kind["unlabelled"] == 1 and kind["Chit Chat"] == 1.0
    assert prof[("adversarial", "kind")]["replies"] == 2 and ("adversarial", "human") not in prof
    again = await pipeline.label(store, config, tmp_path, models({}), progress=False)
    assert again["done_now"] == 0
