"""The server's own timings of each call (llama.cpp's ``timings``): recorded with the call, summed per role,
shown where a run ends and in its report; absent where a server sends none; a format-2 store migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from emoharbor.report.timings import by_step, timing_rows, timings_html, timings_text
from emoharbor.store.migrate import FORMAT
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer
from report_helpers import small_run


async def test_each_call_records_what_the_server_evaluated_and_reused_and_the_roles_sum_it(tmp_path: Path) -> None:
    with FakeOpenAIServer(timings=True) as srv:
        run = await small_run(tmp_path / "eh", srv)
    store = RunStore.open_existing(run)
    calls = store.calls()
    steps = by_step(store.calls())
    store.close()
    assert calls and all(c["prompt_ms"] is not None for c in calls)
    for c in calls:  # the fake server reads 1 ms a word and writes 2 ms a word
        assert c["prompt_ms"] == pytest.approx(c["prompt_evaluated"])
        assert c["generated_ms"] == pytest.approx(2.0 * c["completion_tokens"])
        assert c["prompt_evaluated"] + c["prompt_reused"] == c["prompt_tokens"]

    def step(c: dict[str, Any]) -> str:
        return f"{c['role']}: {c['prompt']}" if c["prompt"] else c["role"]

    chain = {"user_appraise", "user_feel", "user_voice_open", "user_voice_note", "user_decide"}  # named by prompt
    assert {f"user: {p}" for p in chain} <= set(steps)
    assert {s.split(":")[0] for s in steps} == {"user", "judge", "supporter"}
    assert sum(u["calls"] for u in steps.values()) == len(calls)
    for name, u in steps.items():
        mine = [c for c in calls if step(c) == name]
        assert u["prompt_evaluated"] == sum(c["prompt_evaluated"] for c in mine)
        assert u["prompt_s"] == pytest.approx(sum(c["prompt_ms"] for c in mine) / 1000)
    rows = timing_rows(steps)
    assert rows[-1][0] == "all" and rows[-1][1] == len(calls)
    text = timings_text(steps)
    assert "evaluated" in text and "reused" in text and "judge" in text
    assert "<table" in timings_html(steps)


async def test_a_server_without_timings_leaves_them_out_and_no_table_is_shown(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv)
    store = RunStore.open_existing(run)
    assert all(c["prompt_ms"] is None and c["prompt_evaluated"] is None for c in store.calls())
    assert by_step(store.calls()) == {}
    store.close()
    assert timings_text({}) == "" and "only the embedded" in timings_html({})


def test_a_format2_store_gets_the_timing_columns_with_nothing_in_them(tmp_path: Path) -> None:
    RunStore.create_or_resume(tmp_path / "r", "emoharbor", {}, "h").close()
    db = sqlite3.connect(tmp_path / "r" / "run.sqlite")
    db.executescript(  # the calls table as format 2 made it
        "DROP TABLE calls; CREATE TABLE calls (id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT,"
        " role TEXT, model TEXT, endpoint TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL,"
        " latency_s REAL, cached INTEGER, retries INTEGER, error TEXT, superseded INTEGER NOT NULL DEFAULT 0,"
        " attempt TEXT NOT NULL DEFAULT '');"
        "INSERT INTO calls (unit_kind, unit_key, role, model, endpoint, prompt_tokens, completion_tokens, cost_usd,"
        " latency_s, cached, retries, error) VALUES ('', '', 'judge', 'm', '', 3, 4, 0.0, 1.0, 0, 0, '');"
        "UPDATE meta SET value='2' WHERE key='format_version';"
    )
    db.commit()
    db.close()
    store = RunStore.open_existing(tmp_path / "r")
    assert store.meta()["format_version"] == str(FORMAT) == "3"
    (c,) = store.calls()
    assert c["prompt_tokens"] == 3 and c["prompt_evaluated"] is None and c["prompt_ms"] is None
    assert by_step(store.calls()) == {}
    store.close()
