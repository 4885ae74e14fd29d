"""`emoharbor run` end to end against the fake server: the leaderboard, and a run killed with SIGKILL
that resumes to exactly the store of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import yaml

from cli_helpers import count, emoharbor
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer


def write_config(path: Path, url: str, **extra: Any) -> Path:
    fake = {"model": "fake", "base_url": url, "max_retries": 2, "timeout_s": 10}
    cfg = {
        "name": "t",
        "roles": {
            "supporter": [{**fake, "name": "a"}, {**fake, "name": "b", "system_prompt": "builtin:personal"}],
            "user": fake,
            "judge": fake,
        },
        "profiles": ["builtin:p00[1-4]*"],
        "max_turns": 3,
        "concurrency": 4,
        **extra,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def snapshot(run_dir: Path) -> dict[str, Any]:
    """Everything in the store that must not depend on timing or on having been interrupted."""
    store = RunStore.open_existing(run_dir)
    try:
        results = {}
        for kind in store.tables():
            for key, data in store.items(kind):
                data.pop("wall_s", None)
                results[(kind, key)] = data
        skip = ("id", "latency_s", "cached", "attempt", "superseded")
        calls = sorted(
            json.dumps({k: v for k, v in c.items() if k not in skip}, sort_keys=True)
            for c in store.calls()
            if not c["superseded"]
        )
        events = sorted(json.dumps(e, sort_keys=True) for e in store.events())
        superseded = {(c["unit_kind"], c["unit_key"]) for c in store.calls() if c["superseded"]}
        return {"results": results, "calls": calls, "events": events, "superseded": superseded}
    finally:
        store.close()


def test_run_prints_a_leaderboard_and_stores_everything(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(latency_s=0.001) as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url)
        p = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
        out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "Leaderboard (judge: user" in out and "need_alignment" in out
    store = RunStore.open_existing(tmp_path / "r")
    assert len(store.keys("conversation")) == 8
    assert len(store.keys("assessment")) == 16  # the user's and the third-party judge's
    assert set(store.usage_by_role()) == {"supporter", "user", "judge"}
    store.close()


def under_way(run_dir: Path) -> bool:
    """Whether a conversation has made calls but has no record yet (0 while the store is busy)."""
    try:
        with sqlite3.connect(run_dir / "run.sqlite", timeout=5) as db:
            called = {k for (k,) in db.execute("SELECT DISTINCT unit_key FROM calls WHERE unit_kind='conversation'")}
            done = {k for (k,) in db.execute("SELECT key FROM results WHERE kind='conversation'")}
    except sqlite3.OperationalError:
        return False
    return bool(called - done)


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.03) as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url)
        env_a = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache-a")}
        env_b = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache-b")}
        whole = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "whole"), "--quiet", env=env_a)
        assert whole.wait(timeout=180) == 0

        killed_dir = tmp_path / "killed"
        p = emoharbor("run", str(cfg), "--run-dir", str(killed_dir), "--quiet", env=env_b)
        deadline = time.monotonic() + 120
        # at least 3 conversations stored and one more under way (its calls made, its record not written): the
        # kill lands mid-unit, whose calls the resumed run must keep and mark superseded
        while not (count(killed_dir, "conversation") >= 3 and under_way(killed_dir)) and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        done_before = count(killed_dir, "conversation")
        assert 3 <= done_before < 8, "the kill should land mid-run"

        again = emoharbor("run", str(cfg), "--run-dir", str(killed_dir), "--quiet", env=env_b)
        _out, err = again.communicate(timeout=180)
        assert again.returncode == 0, err
        assert f"{8 - done_before} new, {done_before} already done" in err

    a, b = snapshot(tmp_path / "whole"), snapshot(killed_dir)
    assert a["results"].keys() == b["results"].keys()
    assert a["results"] == b["results"]
    assert a["calls"] == b["calls"]  # the calls behind the records: none missing, none twice
    assert a["events"] == b["events"]
    # the killed session's calls for units it did not finish are kept, marked superseded: they were paid for
    assert not a["superseded"] and b["superseded"] and all(unit in b["results"] for unit in b["superseded"])


def test_more_concurrency_and_a_longer_time_out_are_allowed_on_a_resume(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url)
        assert emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env).wait(60) == 0
        raw = yaml.safe_load(cfg.read_text())
        raw["concurrency"] = 16
        raw["roles"]["judge"] = {**raw["roles"]["judge"], "timeout_s": 30, "max_retries": 6}
        cfg.write_text(yaml.safe_dump(raw))
        p = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    store = RunStore.open_existing(tmp_path / "r")
    history = json.loads(store.meta()["history"])
    assert store.config()["concurrency"] == 16
    store.close()
    assert history[0]["changed"] == ["concurrency", "roles.judge.max_retries", "roles.judge.timeout_s"]


def test_a_different_config_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url)
        assert emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env).wait(60) == 0
        other = write_config(tmp_path / "d.yaml", srv.base_url, max_turns=2)
        p = emoharbor("run", str(other), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 2
    assert "was started with a different config" in err and "Traceback" not in err
    assert "it differs in max_turns)" in err  # names what changed, and only that


def test_assess_with_another_judge_then_leaderboard_and_export(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    run_dir = str(tmp_path / "r")
    with FakeOpenAIServer(latency_s=0.001) as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url)
        assert emoharbor("run", str(cfg), "--run-dir", run_dir, "--quiet", env=env).wait(120) == 0
        before = srv.requests
        p = emoharbor(
            "assess", run_dir, "--judge", "third_party", "--judge-model", "other-judge",
            "--base-url", srv.base_url, "--quiet", env=env,
        )  # fmt: skip
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "made 8 assessments with third_party" in out
        assert srv.requests - before == 8  # one call per conversation: no new conversations
        assert all(b["model"] == "other-judge" for b in srv.bodies[before:])

    p = emoharbor("leaderboard", run_dir, "--judge", "third_party:other-judge", "--format", "json", env=env)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    board = json.loads(out)
    assert board["judge"] == "third_party:other-judge"
    assert {r["supporter"] for r in board["rows"]} == {"a", "b"}
    assert all(r["scored"] + r["unscored"] == 4 for r in board["rows"])
    p = emoharbor("leaderboard", run_dir, "--judge", "nobody", env=env)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "no judge 'nobody' in this run" in err

    for fmt in ("jsonl", "csv"):
        p = emoharbor("export", run_dir, "--format", fmt, "--out", str(tmp_path / fmt), env=env)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        files = {Path(line).name for line in out.split()}
        assert {f"conversation.{fmt}", f"assessment.{fmt}", f"calls.{fmt}", f"events.{fmt}"} <= files
    lines = (tmp_path / "jsonl" / "conversation.jsonl").read_text().splitlines()
    assert len(lines) == 8 and json.loads(lines[0])["turns"]
    import csv

    with (tmp_path / "csv" / "assessment.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 24 and {r["judge"] for r in rows} == {"user", "third_party:fake", "third_party:other-judge"}


def test_a_conversation_that_ended_on_a_failed_call_is_done_again(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as srv:
        cfg = write_config(tmp_path / "c.yaml", srv.base_url, concurrency=1)
        srv.faults.append("400")  # not retried: the first supporter call fails, and its conversation with it
        first = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        store = RunStore.open_existing(tmp_path / "r")
        errors = [k for k, c in store.items("conversation") if c["termination"] == "error"]
        store.close()
        assert len(errors) == 1
        again = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
        _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert "1 new, 7 already done" in err
    # the endpoint is gone: a finished run prints its leaderboard again without reaching any model
    third = emoharbor("run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", env=env)
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    assert "0 new, 8 already done" in err and "overall" in out
    store = RunStore.open_existing(tmp_path / "r")
    assert all(c["termination"] != "error" for _, c in store.items("conversation"))
    assert len(store.keys("assessment")) == 16 and store.get("assessment", (*errors[0], "user")) is not None
    store.close()
