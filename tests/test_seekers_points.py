"""The rated points of ESConv files (``seekers.points``): both formats on invented files, and every kind of bad
input named in one line (file, record, field), by the library and by the command, with no run folder left."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_main
from emoharbor.errors import DataError
from emoharbor.seekers.points import file_points
from seekers_helpers import (
    bakery_talk,
    breakup_talk,
    multiesc_record,
    raw_record,
    write_lines,
    write_raw,
)


def test_the_raw_format_gives_a_point_per_rated_seeker_turn(tmp_path: Path) -> None:
    path = write_raw(tmp_path / "failed_a.json", [raw_record(bakery_talk(0, (2, 5, 3)), intensity=4)])
    [talk] = file_points(path, initial_trust=40)
    assert [(p.talk, p.block, p.rating, p.ratings) for p in talk] == [
        ("failed_a:0", 1, 2, 1), ("failed_a:0", 2, 5, 1), ("failed_a:0", 3, 3, 1),
    ]  # fmt: skip
    first, second, _ = talk
    assert first.reply == "That sounds painful, losing the bakery job 0."
    assert [t.text for t in first.case.context.turns] == ["I was let go from the bakery, day 0."]
    # the supporter's two messages before the rated turn are one block, joined by a space
    assert second.reply == "What did you like most about the bakery mornings? Take your time."
    assert [t.speaker for t in second.case.context.turns] == ["user", "supporter", "user"]
    assert second.case.context.turn == 1 and second.case.id == "failed_a:0#2"
    # the profile is drafted from the record: its intensity 4 -> 70 on the simulator's scale
    assert second.case.context.intensity == 70 and second.case.context.trust == 40
    assert second.case.context.profile.evaluation_only


def test_multiesc_feedback_on_usr_turns_and_an_opening_block(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "mine.jsonl", [multiesc_record(breakup_talk(1, (4, 2)), intensity=2)])
    [talk] = file_points(path, initial_trust=40)
    assert [(p.block, p.rating) for p in talk] == [(1, 4), (3, 2)]
    opening, later = talk
    assert opening.case.context.turns == [] and opening.reply == "Hello , what is on your mind today 1 ?"
    assert later.reply == "What do you miss most about your partner in the evenings ?"
    assert [t.speaker for t in later.case.context.turns] == ["supporter", "user", "supporter", "user"]
    assert later.case.context.intensity == 30  # MultiESC's init_intensity 2


def test_a_seeker_turn_of_several_rated_messages_is_one_point_with_its_last_rating(tmp_path: Path) -> None:
    turns = [("seeker", "I cannot sleep.", None), ("supporter", "", None), ("supporter", "That is hard.", None),
             ("seeker", "It is.", 5), ("seeker", "", None), ("seeker", "Every night.", 3)]  # fmt: skip
    [talk] = file_points(write_raw(tmp_path / "x.json", [raw_record(turns)]), initial_trust=40)
    [p] = talk
    assert (p.rating, p.ratings, p.reply) == (3, 2, "That is hard.")  # the empty message is left out


def test_records_without_a_rating_give_no_talk(tmp_path: Path) -> None:
    plain = raw_record([("seeker", "Hello.", None), ("supporter", "Hi there.", None)])
    path = write_raw(tmp_path / "x.json", [plain, raw_record(bakery_talk(2, (1, 2, 3)))])
    assert [t[0].talk for t in file_points(path, initial_trust=40)] == ["x:1"]


def _bad(rec: dict[str, Any], mutate: Any) -> dict[str, Any]:
    rec = json.loads(json.dumps(rec))
    mutate(rec["dialog"])
    return rec


def _set(i: int, key: str, value: Any) -> Any:
    def f(dialog: list[dict[str, Any]]) -> None:
        target = dialog[i]["annotation"] if key == "feedback" and "annotation" in dialog[i] else dialog[i]
        target[key] = value

    return f


GOOD_RAW = raw_record(bakery_talk(0, (2, 5, 3)))
GOOD_MULTI = multiesc_record(breakup_talk(0, (4, 2)))
BAD = [
    ("raw", _bad(GOOD_RAW, _set(2, "feedback", "7")),
     "record 2: dialog turn 3: field 'annotation.feedback': 7 is not a rating from 1 to 5"),
    ("multi", _bad(GOOD_MULTI, _set(1, "feedback", "0")),
     "record 2: dialog turn 2: field 'feedback': 0 is not a rating from 1 to 5"),
    ("raw", _bad(GOOD_RAW, _set(1, "feedback", "4")),
     "record 2: dialog turn 2: field 'annotation.feedback': a rating on a supporter turn"),
    ("multi", _bad(GOOD_MULTI, _set(2, "feedback", "3")),
     "record 2: dialog turn 3: field 'feedback': a rating on a supporter turn"),
    ("raw", _bad(GOOD_RAW, lambda d: [t.update(content="  ") for t in d[3:5]]),
     "record 2: dialog turns 4, 5: field 'content': the reply block the seeker rated at dialog turn 6 is empty"),
    ("multi", _bad(GOOD_MULTI, _set(4, "text", "")),
     "record 2: dialog turn 5: field 'text': the reply block the seeker rated at dialog turn 6 is empty"),
    ("raw", _bad(GOOD_RAW, _set(0, "feedback", "3")),
     "record 2: dialog turn 1: field 'annotation.feedback': a rating with no supporter turn before it"),
]  # fmt: skip


def _file(tmp_path: Path, fmt: str, bad: dict[str, Any]) -> Path:
    if fmt == "raw":
        return write_raw(tmp_path / "failed_bad.json", [GOOD_RAW, bad])
    return write_lines(tmp_path / "bad.jsonl", [GOOD_MULTI, bad])


@pytest.mark.parametrize(("fmt", "bad", "said"), BAD)
def test_bad_input_is_named_by_file_record_and_field(tmp_path: Path, fmt: str, bad: dict[str, Any], said: str) -> None:
    path = _file(tmp_path, fmt, bad)
    with pytest.raises(DataError) as e:
        file_points(path, initial_trust=40)
    assert str(e.value).startswith(f"{path}: {said}") and "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("x.json", '{"dialog": []}', "the top level must be a JSON array of ESConv records, not a JSON object"),
        ("x.txt", "hello\n", "line 1 is not valid JSON"),
        ("x.jsonl", '{"speaker": "usr"}\n', "record 1: field 'dialog' must be a list of turns"),
        ("x.jsonl", json.dumps(raw_record([("seeker", "Hi.", None), ("supporter", "Hello.", None)])) + "\n",
         "no seeker turn carries a rating"),
    ],
)  # fmt: skip
def test_a_file_in_neither_format_or_without_ratings_is_one_line(tmp_path: Path, name: str, text: str,
                                                                  said: str) -> None:  # fmt: skip
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as e:
        file_points(path, initial_trust=40)
    assert str(e.value).startswith(f"{path}: ") and said in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("fmt", "bad", "said"), [BAD[0], BAD[4]])
def test_the_command_says_it_in_one_line_and_writes_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, bad: dict[str, Any], said: str
) -> None:
    path = _file(tmp_path, fmt, bad)
    run_dir = tmp_path / "run"
    code, out, err = run_main(["seekers", str(path), "--user-model", "scripted", "--judge", "third_party_reply",
                               "--scoring", "argmax", "--run-dir", str(run_dir), "--quiet"], capsys)  # fmt: skip
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and said in err and "Traceback" not in err
    assert not run_dir.exists()  # found before any run folder is made
