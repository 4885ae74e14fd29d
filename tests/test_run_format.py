"""The run format: a version in every store, one migration of a format-1 store at open (by the store's own
facts of format 1, importing no kind of run), the refusal of a newer one, structured keys, the re-asks each unit
records, and the status that tells a unit from a record kept beside the units."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from emoharbor.errors import EmoharborError
from emoharbor.models.base import CallRecord
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.structured import ask_json
from emoharbor.store.keys import decode_key, encode_key
from emoharbor.store.migrate import FORMAT
from emoharbor.store.run_store import RunStore
from emoharbor.store.units import run_stage

FAILED = {"id": "p|a|0", "termination": "error", "events": [["model_error", "down"]]}
UNPARSED = {"id": "p|b|0", "termination": "error", "events": [["user_unparseable", "x"]]}
DONE = {"id": "p|a|1", "termination": "max_turns", "events": []}
JUDGED = {"judge": "user", "conversation": "p|a|1", "scores": {"warmth": 4}}
HISTORY = {"id": "regular:0", "turns": []}  # a record kept beside the units: it gets no status

FORMAT1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE results (kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (kind, key));
CREATE TABLE calls (id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, role TEXT, model TEXT,
    endpoint TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, latency_s REAL, cached INTEGER,
    retries INTEGER, error TEXT);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, event TEXT, detail TEXT);
"""


def format1_store(folder: Path, kind: str) -> None:
    """A run store as format 1 wrote it: no format version, "|"-joined keys, records without a status, calls
    without the superseded and attempt columns."""
    folder.mkdir(parents=True)
    db = sqlite3.connect(folder / "run.sqlite")
    db.executescript(FORMAT1)
    meta = {"kind": kind, "config": "{}", "config_hash": "h", "created": "1", "status": "complete"}
    db.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    rows = [("conversation", "p|a|0", FAILED), ("conversation", "p|b|0", UNPARSED), ("conversation", "p|a|1", DONE),
            ("assessment", "p|a|1|user", JUDGED), ("history", "regular:0", HISTORY)]  # fmt: skip
    db.executemany("INSERT INTO results VALUES (?, ?, ?, 1.0)", [(k, key, json.dumps(d)) for k, key, d in rows])
    db.execute(
        "INSERT INTO calls (unit_kind, unit_key, role, model, endpoint, prompt_tokens, completion_tokens, cost_usd,"
        " latency_s, cached, retries, error) VALUES ('assessment', 'p|a|1|user', 'judge', 'm', '', 3, 4, 0.5, 1, 0,"
        " 0, '')"
    )
    db.execute("INSERT INTO events (unit_kind, unit_key, event, detail) VALUES ('conversation', 'p|a|0', 'e', 'd')")
    db.commit()
    db.close()


def contents(store: RunStore) -> dict[str, Any]:
    results = {(k, key): d for k in store.tables() for key, d in store.items(k)}
    skip = ("id", "latency_s", "attempt")
    calls = [{k: v for k, v in c.items() if k not in skip} for c in store.calls()]
    return {"results": results, "calls": calls, "events": store.events()}


def test_a_format1_store_is_migrated_once_to_what_a_new_store_holds(tmp_path: Path) -> None:
    format1_store(tmp_path / "old", "heart")
    old = RunStore.open_existing(tmp_path / "old")
    assert old.meta()["format_version"] == str(FORMAT)

    new = RunStore.create_or_resume(tmp_path / "new", "heart", {}, "h")
    new.put("conversation", ("p", "a", "0"), {**FAILED, "status": "error"}, events=[("e", "d")])
    new.put("conversation", ("p", "b", "0"), {**UNPARSED, "status": "unscored"})
    new.put("conversation", ("p", "a", "1"), {**DONE, "status": "ok"})
    new.put("assessment", ("p", "a", "1", "user"), {**JUDGED, "status": "ok"})
    new.record_call(old_call(old), ("assessment", ("p", "a", "1", "user"), ""))
    new.put("history", ("regular:0",), HISTORY)
    assert contents(old) == contents(new)
    assert old.get("history", ("regular:0",)) == HISTORY  # kept beside HEART's units in format 1: no status
    assert old.unit_tables() == ["assessment", "conversation"]
    new.close()
    old.close()

    again = RunStore.open_existing(tmp_path / "old")  # migrated once: opened again, nothing changes
    assert again.get("conversation", ("p", "a", "0"))["status"] == "error"  # type: ignore[index]
    again.close()


def old_call(store: RunStore) -> CallRecord:
    """The migrated store's one call, as the code records a call."""
    (c,) = store.calls()
    return CallRecord(role=c["role"], model=c["model"], endpoint=c["endpoint"], prompt_tokens=c["prompt_tokens"],
                      completion_tokens=c["completion_tokens"], cost_usd=c["cost_usd"], latency_s=c["latency_s"],
                      cached=bool(c["cached"]), retries=c["retries"], error=c["error"])  # fmt: skip


def test_a_store_newer_than_the_code_or_too_old_is_refused_naming_the_folder_and_both_formats(
    tmp_path: Path,
) -> None:
    RunStore.create_or_resume(tmp_path / "r", "emoharbor", {}, "h").close()
    db = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    db.execute("UPDATE meta SET value=? WHERE key='format_version'", (str(FORMAT + 1),))
    db.commit()
    with pytest.raises(EmoharborError, match=rf"{tmp_path / 'r'} holds a run of format {FORMAT + 1}, newer than "
                       rf"this emoharbor reads \(format {FORMAT}\)"):  # fmt: skip
        RunStore.open_existing(tmp_path / "r")
    db.execute("UPDATE meta SET value='0' WHERE key='format_version'")
    db.commit()
    db.close()
    with pytest.raises(EmoharborError, match=r"holds a run of format 0, older than this emoharbor can bring up"):
        RunStore.open_existing(tmp_path / "r")


def test_a_key_holds_any_character_and_reads_back_as_its_parts() -> None:
    key = ("a|b", 'say "hi"', "ü", "")
    assert decode_key(encode_key(key)) == key and decode_key("") == () and encode_key(()) == ""


async def test_a_unit_records_the_reasks_it_needed(tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "r", "test", {}, "h")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    def work(model: ScriptedModel):  # type: ignore[no-untyped-def]
        async def w():  # type: ignore[no-untyped-def]
            got = await ask_json(model, [{"role": "user", "content": "n?"}], schema)
            return {"status": "ok" if got.ok else "unscored", "n": (got.data or {}).get("n")}, []

        return w

    flaky, clean = ScriptedModel(["not json", '{"n": 1}']), ScriptedModel(['{"n": 2}'])
    units = [(("flaky",), work(flaky)), (("clean",), work(clean))]
    await run_stage(store, "u", units, workers=2, progress=False)
    assert store.get("u", ("flaky",)) == {"status": "ok", "n": 1, "reasks": 1}
    assert store.get("u", ("clean",)) == {"status": "ok", "n": 2, "reasks": 0}
    store.close()


MIGRATE = """
import sys
from pathlib import Path
from emoharbor.store.run_store import RunStore
store = RunStore.open_existing(Path(sys.argv[1]))
print(store.get("history", ("regular:0",)), store.unit_tables())
print(sorted(m for m in sys.modules if m.endswith(".kind") or m.startswith("emoharbor.heart")))  # no kind module
"""


def test_a_format1_store_is_migrated_without_importing_any_kind_of_run(tmp_path: Path) -> None:
    format1_store(tmp_path / "old", "heart")
    p = subprocess.run([sys.executable, "-c", MIGRATE, str(tmp_path / "old")], capture_output=True, text=True,
                       timeout=120, check=False)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines() == [f"{HISTORY} ['assessment', 'conversation']", "[]"]


async def test_a_unit_record_without_a_status_is_refused_at_write(tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "r", "emoharbor", {}, "h")

    async def no_status():  # type: ignore[no-untyped-def]
        return {"id": "p|a|0"}, []

    with pytest.raises(ExceptionGroup) as e:  # the stage runner's workers are a task group
        await run_stage(store, "conversation", [(("p", "a", "0"), no_status)], workers=1, progress=False)
    assert e.group_contains(RuntimeError, match=r"conversation \('p', 'a', '0'\): its record has status None")
    with pytest.raises(RuntimeError, match=r"its record has status 'done', not one of"):
        store.put("conversation", ("p", "a", "0"), {"id": "p|a|0", "status": "done"})
    store.put("profile", ("p",), {"id": "p"})  # a record kept beside the units: it has no status
    assert store.keys("conversation") == set() and store.unit_tables() == []
    store.close()
