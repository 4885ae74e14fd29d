"""HEART histories: recorded speakers, inferred speakers, skips with reasons, ESConv cuts, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor.errors import DataError
from emoharbor.heart.config import HistorySource
from emoharbor.heart.histories import History, Skip, infer_speakers, parse_heart_item
from emoharbor.heart.stages.sources import esconv_histories, load_esconv_source, load_heart_source

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
HEART = DATA / "heart"
ESCONV = DATA / "esconv"
needs_heart = pytest.mark.skipif(not HEART.is_dir(), reason=f"HEART data folder {HEART} is absent")
needs_esconv = pytest.mark.skipif(not ESCONV.is_dir(), reason=f"ESConv data folder {ESCONV} is absent")


def item(lines: list[str], speakers: list[str] | None, reply: str | None = "ok") -> dict[str, object]:
    return {"dialogue_history": lines, "prev_speakers": speakers, "emotion_type": "sadness", "problem_type": "x",
            "situation": "s", "vanilla_completion": reply}  # fmt: skip


def parse(it: object, unknown: str = "infer", opener: str = "supporter") -> History:
    return parse_heart_item(it, "t:0", "regular", "f.json", unknown, opener)


def test_speakers_are_the_recorded_roles_not_positions() -> None:
    # the seeker speaks twice in a row: a positional labelling would call turn 2 the supporter
    h = parse(item(["hi", "I am sad", "I lost my job", "that is hard", "yes"],
                   ["seeker", "seeker", "seeker", "supporter", "seeker"]))  # fmt: skip
    assert [t.speaker for t in h.turns] == ["seeker", "seeker", "seeker", "supporter", "seeker"]
    assert h.speakers_inferred is False
    assert h.human_reply == "ok"


def test_unknown_speakers_inferred_by_alternation_ending_on_the_seeker() -> None:
    h = parse(item(["hello", "hi", "what is up?", "meh"], None, None))
    assert [t.speaker for t in h.turns] == ["supporter", "seeker", "supporter", "seeker"]
    assert h.speakers_inferred is True
    assert h.human_reply is None


def test_partial_speakers_filled_in_when_consistent() -> None:
    h = parse(item(["a", "b", "c"], ["seeker", None, "seeker"]))
    assert [t.speaker for t in h.turns] == ["seeker", "supporter", "seeker"]


@pytest.mark.parametrize(
    ("it", "opts", "reason"),
    [
        (item(["a", "b", "c"], None), {}, "speakers_not_inferable"),  # odd length would open with the seeker
        (item(["a", "b", "c"], ["seeker", "seeker", None]), {}, "speakers_not_inferable"),
        (item(["a", "b"], None), {"unknown": "skip"}, "speakers_unknown"),
        (item(["a", "b"], ["seeker", "supporter"]), {}, "ends_on_supporter"),
        (item(["a", "b"], ["seeker"]), {}, "speakers_length_mismatch"),
        (item([], None), {}, "empty_history"),
        (item(["a", 3], ["supporter", "seeker"]), {}, "bad_turn"),
        (item(["a", "  "], ["supporter", "seeker"]), {}, "bad_turn"),
        ({"dialogue_history": "a"}, {}, "bad_field"),
        ("not an object", {}, "not_an_object"),
        (item(["a", "b"], ["supporter", "seeker"], reply=5), {}, "bad_field"),  # type: ignore[arg-type]
    ],
)
def test_unusable_items_raise_skip_with_a_reason(it: object, opts: dict[str, str], reason: str) -> None:
    with pytest.raises(Skip) as e:
        parse(it, **opts)
    assert e.value.reason == reason


def test_opener_any_allows_odd_unknown_histories() -> None:
    assert infer_speakers(3, [None, None, None], "any") == ["seeker", "supporter", "seeker"]


def test_unusable_items_are_counted_and_the_rest_loaded(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    good = item(["hey", "I feel low"], ["supporter", "seeker"])
    lines = [json.dumps(good), json.dumps(item([], None)), json.dumps(item(["a", "b"], ["seeker", "supporter"])),
             json.dumps(good)]  # fmt: skip
    p.write_text("\n".join(lines), encoding="utf-8")
    hs, rep = load_heart_source(HistorySource(path=str(p)), p)
    assert [h.id for h in hs] == ["regular:0", "regular:3"]
    assert rep.examined == 4 and rep.usable == 2 and rep.used == 2
    assert dict(rep.skipped) == {"empty_history": 1, "ends_on_supporter": 1}
    assert any("line 2" in n for n in rep.notes)


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("{not json", "line 2: not valid JSON"),
        (json.dumps("text"), "line 2: the item is not a JSON object"),
        (json.dumps({"dialogue_history": "a"}), "line 2: field 'dialogue_history' must be a list"),
        (json.dumps(item(["a", 3], ["supporter", "seeker"])), "line 2: field 'dialogue_history': turns [2]"),
        (json.dumps(item(["a", "b"], ["seeker"])), "line 2: field 'prev_speakers' has 1 entries for 2 turns"),
    ],
)
def test_an_item_that_breaks_the_format_is_an_error_naming_file_item_and_field(
    tmp_path: Path, bad: str, said: str
) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text(json.dumps(item(["hey", "I feel low"], ["supporter", "seeker"])) + "\n" + bad, encoding="utf-8")
    with pytest.raises(DataError) as e:
        load_heart_source(HistorySource(path=str(p)), p)
    assert str(e.value).startswith(f"{p}: {said}") and str(e.value).endswith("fix the file")


def test_unreadable_files_are_clear_data_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"dialogue_history": ["a"]', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.json: not valid JSON"):
        load_heart_source(HistorySource(path=str(bad)), bad)
    num = tmp_path / "num.json"
    num.write_text("42", encoding="utf-8")
    with pytest.raises(DataError, match="expected a JSON array"):
        load_heart_source(HistorySource(path=str(num)), num)
    with pytest.raises(DataError, match="not found"):
        load_heart_source(HistorySource(path="x"), tmp_path / "missing.json")


def test_first_and_sample_limits(tmp_path: Path) -> None:
    p = tmp_path / "h.json"
    p.write_text(json.dumps([item([f"s{i}", "x"], ["supporter", "seeker"]) for i in range(10)]), encoding="utf-8")
    first, rep = load_heart_source(HistorySource(path=str(p), first=3), p)
    assert [h.id for h in first] == ["regular:0", "regular:1", "regular:2"] and rep.examined == 3
    s1, _ = load_heart_source(HistorySource(path=str(p), sample=4, seed=7), p)
    s2, _ = load_heart_source(HistorySource(path=str(p), sample=4, seed=7), p)
    s3, _ = load_heart_source(HistorySource(path=str(p), sample=4, seed=8), p)
    assert [h.id for h in s1] == [h.id for h in s2] and len(s1) == 4
    assert [h.id for h in s1] != [h.id for h in s3]


@needs_heart
def test_real_heart_files() -> None:
    reg = HEART / "dialogues_regular.json"
    hs, rep = load_heart_source(HistorySource(path=str(reg)), reg)
    assert rep.examined == 280 and rep.usable == 279
    assert dict(rep.skipped) == {"ends_on_supporter": 1} and "index 82" in rep.notes[0]
    assert all(h.turns[-1].speaker == "seeker" and h.human_reply for h in hs)
    adv = HEART / "dialogues_adversarial.json"
    ha, rep_a = load_heart_source(HistorySource(path=str(adv), subset="adversarial"), adv)
    assert rep_a.usable == 20 and rep_a.inferred == 20 and not rep_a.skipped
    assert all(h.turns[0].speaker == "supporter" and h.human_reply is None for h in ha)


@needs_esconv
def test_esconv_cuts_give_the_human_next_reply() -> None:
    path = ESCONV / "valid.jsonl"
    src = HistorySource(path=str(path), format="esconv", first=5, seed=3, min_history_turns=3)
    hs, rep = load_esconv_source(src, path)
    assert len(hs) == 5 and rep.used == 5
    for h in hs:
        assert h.turns[-1].speaker == "seeker" and len(h.turns) >= 3 and h.human_reply
        assert h.id.startswith("esconv:valid:")


def test_esconv_dialog_without_a_cut_is_skipped() -> None:
    from emoharbor.data.esconv import parse_record

    rec = {"dialog": [{"speaker": "sys", "text": "hi"}, {"speaker": "usr", "text": "hey"}]}
    d = parse_record(rec, "x.jsonl", 0)
    with pytest.raises(Skip) as e:
        esconv_histories(d, HistorySource(path="x", format="esconv"))
    assert e.value.reason == "no_cut"
