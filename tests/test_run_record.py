"""One run record for every kind: prompts and inputs recorded, settings that change no output allowed to
change on a resume (and written into the run's history), everything else refused naming what differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor import kinds
from emoharbor.errors import EmoharborError, WrongKind
from emoharbor.store.migrate import status_format1 as status_of
from emoharbor.store.record import open_run, outcome_part, read_run
from emoharbor.store.run_store import RunStore
from emoharbor.store.units import run_stage

SPEC = {"model": "m", "concurrency": 4, "timeout_s": 10, "max_retries": 2, "price": {"input_per_mtok": 1.0}}


def test_settings_that_change_no_output_leave_the_hash_and_go_into_the_history(tmp_path: Path) -> None:
    data = tmp_path / "profiles.yaml"
    data.write_text("a: 1\n")
    open_run(
        tmp_path / "r", "emoharbor", {"user": SPEC, "concurrency": 8}, prompts=["user_feel"], inputs=[data]
    ).close()
    faster = {**SPEC, "concurrency": 64, "timeout_s": 99, "max_retries": 9, "price": {"input_per_mtok": 3.0}}
    store = open_run(tmp_path / "r", "emoharbor", {"user": faster, "concurrency": 32}, prompts=["user_feel"],
                     inputs=[data])  # fmt: skip
    history = json.loads(store.meta()["history"])
    assert history[0]["changed"] == ["concurrency", "user.concurrency", "user.max_retries", "user.price.input_per_mtok",
                                     "user.timeout_s"]  # fmt: skip
    store.close()
    store, cfg = read_run(tmp_path / "r", "emoharbor")
    store.close()
    assert cfg["user"]["concurrency"] == 64 and "prompt_versions" not in cfg and "input_files" not in cfg
    assert outcome_part({"user": faster}) == {"user": {"model": "m"}}


def test_an_edited_input_file_or_another_model_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "profiles.yaml"
    data.write_text("a: 1\n")
    open_run(tmp_path / "r", "heart", {"user": SPEC}, inputs=[data]).close()
    data.write_text("a: 2\n")
    with pytest.raises(EmoharborError, match=r"differs in input_files\..*profiles\.yaml"):
        open_run(tmp_path / "r", "heart", {"user": SPEC}, inputs=[data])
    data.write_text("a: 1\n")
    with pytest.raises(EmoharborError, match=r"differs in user\.model"):
        open_run(tmp_path / "r", "heart", {"user": {**SPEC, "model": "other"}}, inputs=[data])
    with pytest.raises(WrongKind, match="holds a 'heart' run, not a 'emoharbor' run: use another folder") as e:
        open_run(tmp_path / "r", "emoharbor", {"user": SPEC}, inputs=[data])
    titled = f"{tmp_path / 'r'} holds a HEART run, not an EmoHarbor run (emoharbor run): use another folder"
    assert e.value.titled(kinds.title) == titled  # the command line says it so


def test_only_the_prompts_a_kind_uses_are_recorded(tmp_path: Path) -> None:
    store = open_run(tmp_path / "r", "evolve_refine", {}, prompts=["evolve_refine", "evolve_reflect"])
    assert set(store.config()["prompt_versions"]) == {"evolve_refine", "evolve_reflect"}
    store.close()


async def test_the_stage_runner_redoes_errors_and_keeps_unscored(tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "r", "test", {}, "h")
    made: list[str] = []

    def work(key: str, status: str):  # type: ignore[no-untyped-def]
        async def w():  # type: ignore[no-untyped-def]
            made.append(key)
            return {"status": status}, [("did", key)]

        return w

    units = [((k,), work(k, s)) for k, s in (("a", "ok"), ("b", "unscored"), ("c", "error"))]
    first = await run_stage(store, "u", units, workers=2, progress=False)
    assert first.statuses == {"error": 1, "ok": 1, "unscored": 1} and sorted(made) == ["a", "b", "c"]
    made.clear()
    again = await run_stage(store, "u", [((k,), work(k, "ok")) for k in "abc"], workers=2, progress=False)
    assert made == ["c"] and (again.resumed, again.done_now) == (2, 1) and again.statuses == {"ok": 2, "unscored": 1}
    store.close()


def test_format1_records_from_before_the_status_field_are_migrated_by_what_they_hold() -> None:
    failed = {"termination": "error", "events": [["model_error", "down"]]}
    assert status_of(failed) == "error"
    assert status_of({"termination": "error", "events": [["user_unparseable", "x"]]}) == "unscored"
    assert status_of({"unscored": True, "attempts": 0, "error": "timeout"}) == "error"
    assert status_of({"unscored": True, "attempts": 3, "error": "bad json"}) == "unscored"
    assert status_of({"status": "scored"}) == "ok" and status_of({"status": "missing"}) == "unscored"
    assert status_of({"status": "dropped", "reason": "model_error"}) == "error"


def test_every_kind_in_the_table_of_run_kinds_loads_under_its_name() -> None:
    from emoharbor import kinds

    found = {name: kinds.of(name) for name in list(kinds.TABLE)}
    assert all(k.name == name and k.title for name, k in found.items())
    parts = {name: [p for p in kinds.PARTS if kinds.has(name, p)] for name in found}
    assert parts["emoharbor"] == ["board", "view", "html", "side_by_side", "judges", "rejudge", "tidy", "check",
                                  "execute"]  # fmt: skip
    assert parts["validate"] == [p for p in kinds.PARTS if p != "side_by_side"]
    assert parts["heart"] == ["html", "judges", "tidy", "check", "execute"]
    assert kinds.with_part("judges") == ["emoharbor", "validate", "heart", "sensitivity", "seekers", "realism",
                                         "ladder"]  # fmt: skip
    assert parts["realism"] == ["board", "view", "html", "judges", "export", "check", "execute"]
    assert parts["ladder"] == [p for p in kinds.PARTS if p != "side_by_side"]
    assert parts["heart_strategy_check"] == parts["evolve_refine"] == []
    assert kinds.with_part("rejudge") == ["emoharbor", "validate", "ladder"]
    assert (
        kinds.get("nobody") is None and not kinds.has("nobody", "board") and kinds.title("nobody") == "a 'nobody' run"
    )


def test_a_changed_prompt_blocks_the_kinds_that_read_it_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.prompts import Prompt, load_prompt
    from emoharbor.store import record

    open_run(tmp_path / "h", "heart", {}, prompts=["heart_strategy"]).close()
    open_run(tmp_path / "e", "evolve_refine", {}, prompts=["evolve_refine"]).close()
    monkeypatch.setattr(
        record,
        "load_prompt",
        lambda n: Prompt(n, "edited") if n == "heart_strategy" else load_prompt(n),
    )
    with pytest.raises(EmoharborError, match=r"differs in prompt_versions\.heart_strategy"):
        open_run(tmp_path / "h", "heart", {}, prompts=["heart_strategy"])
    open_run(tmp_path / "e", "evolve_refine", {}, prompts=["evolve_refine"]).close()  # not a prompt it reads
