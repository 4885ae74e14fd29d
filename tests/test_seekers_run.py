"""``emoharbor seekers`` end to end against the fake OpenAI server: the command's table in every format, the
report, ``emoharbor judges`` and ``export``; a finished run reprinted with no server; parse failures counted
as unscored; a run SIGKILLed mid-way resumed without losing or redoing a finished point."""

from __future__ import annotations

import asyncio
import csv
import html
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import count, emoharbor, run_main, written
from emoharbor import measurements
from emoharbor.errors import DataError
from emoharbor.models.spec import ModelSpec
from emoharbor.report.health import health_html
from emoharbor.run_view import RunView
from emoharbor.seekers.analysis import seekers_table
from emoharbor.seekers.run import SeekersOptions, load_points, run_seekers
from emoharbor.stats.correlation import spearman
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer, default_reply
from seekers_helpers import (
    bakery_talk,
    breakup_talk,
    multiesc_record,
    rated_files,
    raw_record,
    write_lines,
    write_raw,
)

POINTS, TALKS = 15, 6  # rated_files(3): 3 raw talks of 3 rated blocks, 3 MultiESC talks of 2
SCORES = 2 * POINTS  # the simulated user and third_party_reply on each


def command(files: tuple[Path, Path], run_dir: Path, url: str, *more: str) -> list[str]:
    return ["seekers", *map(str, files), "--user-model", "fake", "--base-url", url, "--run-dir", str(run_dir),
            "--quiet", *more]  # fmt: skip


def test_the_command_scores_every_point_and_shows_it_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    files, run = rated_files(tmp_path), tmp_path / "run"
    with FakeOpenAIServer() as srv:
        code, out, err = run_main(command(files, run, srv.base_url), capsys)
        assert code == 0, err
        assert f"{POINTS} points in {TALKS} talks, {SCORES} scores ({SCORES} new" in err
        assert f"Seekers: {POINTS} rated reply blocks in {TALKS} talks (3 failed_mine, 3 feedback_mine)" in out
        for row in ("user reward", "user fit (expected)", "user trust", "third_party_reply:fake (expected)",
                    "words", "position", "echo"):  # fmt: skip
            assert f"\n{row} " in out, row
        code, out, _ = run_main(command(files, run, srv.base_url, "--format", "json"), capsys)
        data = json.loads(out)
    assert data["points"] == POINTS and data["talks"] == TALKS and data["unfinished"] == 0
    rows = {r["scorer"]: r for r in data["rows"]}
    assert [r["scorer"] for r in data["rows"] if r["baseline"]] == ["words", "position", "echo"]
    card = rows["third_party_reply:fake (expected)"]
    assert card["scored"] == POINTS and card["unscored"] == 0 and card["rho"]["talks"] == TALKS
    assert card["rho_beats"] in ("yes", "no", "below") and card["pairs_best"] in ("words", "position", "echo")
    assert rows["user reward"]["usage"]["calls"] == 2 * POINTS  # the Appraiser and the Feeler on each point
    # a finished run is reprinted with no model: the server is gone
    code, out, err = run_main(command(files, run, srv.base_url, "--format", "md"), capsys)
    assert code == 0, err
    assert f"(0 new, {SCORES} already done" in err and "| user reward |" in out
    assert "By file (failed_mine: 9 points" in out and "| failed_mine: rho |" in out

    code, _, err = run_main(["report", str(run), "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Agreement with the seekers&#x27; own ratings of each reply" in html and '-seekers"' in html
    assert "On <b>feedback_mine</b> alone: 6 points" in html

    code, out, err = run_main(["judges", str(run), "--format", "json"], capsys)
    assert code == 0, err
    judged = {(r["judge"], r["scoring"]): r for r in json.loads(out)}
    for key in (("user", "argmax"), ("user", "expected"), ("third_party_reply:fake", "expected")):
        assert judged[key]["seekers_n"] == POINTS and judged[key]["judgments"] == POINTS, key
        assert judged[key]["seekers_rho"]["n"] == POINTS and judged[key]["seekers_beats"]["pairs"] != "", key
    code, out, _ = run_main(["judges", str(run)], capsys)
    assert "agrees with the seekers" in out and "beats baselines:" in out

    code, _, err = run_main(["export", str(run), "--format", "csv", "--out", str(tmp_path / "x")], capsys)
    assert code == 0, err
    with (tmp_path / "x" / "seekers_points.csv").open(encoding="utf-8") as f:
        flat = list(csv.DictReader(f))
    assert len(flat) == POINTS and {"rating", "words", "position", "echo", "user reward"} <= set(flat[0])
    assert (tmp_path / "x" / "seekers.csv").exists()
    check_by_file(data, flat)
    check_record(tmp_path, run)


def check_by_file(data: dict[str, Any], flat: list[dict[str, str]]) -> None:
    """Each file's table stands on that file's points alone: its words baseline is their Spearman's rho (the
    function tested by hand in test_seekers_figures.py), from the exported points."""
    parts = {p["source"]: p for p in data["by_source"]}
    assert {s: p["points"] for s, p in parts.items()} == {"failed_mine": 9, "feedback_mine": 6}
    for src, part in parts.items():
        mine = [r for r in flat if r["talk"].startswith(src + ":")]
        rho = spearman([float(r["words"]) for r in mine], [float(r["rating"]) for r in mine])
        rows = {r["scorer"]: r for r in part["rows"]}
        assert rows["words"]["rho"]["value"] == pytest.approx(rho) and rows["words"]["rho"]["n"] == len(mine)
        assert rows["user reward"]["rho"]["talks"] == 3 and set(rows) == {r["scorer"] for r in data["rows"]}


def check_record(tmp_path: Path, run: Path) -> None:
    """The run's record of the user's agreement with the seekers, and the health of another run that quotes it."""
    [path] = (tmp_path / "cache" / "seekers").glob("fake-*.json")
    rec = json.loads(path.read_text(encoding="utf-8"))
    store = RunStore.open_existing(run)
    try:
        versions = store.config()["prompt_versions"]
        want = {r["scorer"]: r for r in seekers_table(store)["rows"]}["user reward (expected)"]
    finally:
        store.close()
    assert rec["user_model"] == "fake" and rec["size"] == POINTS and rec["talks"] == TALKS
    assert rec["headline"] == "user reward (expected)" and rec["run"] == str(run.resolve())
    assert rec["row"]["pairs"]["value"] == pytest.approx(want["pairs"]["value"])
    assert rec["row"]["pairs_beats"] == want["pairs_beats"] and rec["prompt_versions"] == measurements.chain_versions(
        versions
    )
    assert f"(emoharbor seekers, {POINTS} points in {TALKS} talks, " in rec["line"]
    assert f"in {want['pairs']['value']:.2f} [" in rec["line"]
    # an EmoHarbor run with the same user model and prompts states it in its health; another model's does not
    view = RunView(folder=tmp_path, kind="emoharbor", meta={}, user_model="fake", user_prompts=dict(versions))
    assert html.escape(rec["line"]) in health_html(view)
    view.user_model = "other"
    assert "agreement with the seekers" not in health_html(view)


def test_the_rule_user_alone_calls_no_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = rated_files(tmp_path)
    args = ["seekers", *map(str, files), "--user-model", "scripted", "--set", "reward.user_agent=rules", "--judge",
            "none", "--run-dir", str(tmp_path / "run"), "--quiet", "--format", "json"]  # fmt: skip
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    assert f"{POINTS} points in {TALKS} talks, {POINTS} scores" in err
    rows = {r["scorer"]: r for r in json.loads(out)["rows"]}
    assert set(rows) == {"user reward", "user reaction", "user fit", "user relief", "user trust", "words", "position",
                         "echo"}  # fmt: skip
    assert rows["user fit"]["scored"] == POINTS and rows["user fit"]["usage"] is None  # no call was made


def test_a_reply_the_judge_cannot_answer_is_unscored_not_a_score(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))

    def reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
        text = messages[0]["content"]  # the judge's prompt (a re-ask adds messages after it)
        if "the one you rate" in text and "Take your time." in text.split("the one you rate", 1)[1]:
            return "I would rather not say."  # not the JSON asked for, every time it is asked
        return default_reply(messages, schema)

    files = rated_files(tmp_path)
    with FakeOpenAIServer(reply=reply) as srv:
        fake = ModelSpec(model="fake", base_url=srv.base_url, max_retries=1)
        opts = SeekersOptions(files=list(files), user=fake, judge=fake, judges=["third_party_reply"])
        summary = asyncio.run(run_seekers(opts, tmp_path / "run", progress=False, cache_path=None))
    assert summary.units == SCORES and summary.errors == 0
    store = RunStore.open_existing(tmp_path / "run")
    try:
        records = [d for _, d in store.items("score") if d["scorer"] != "user"]
        data = seekers_table(store, n_boot=100)
    finally:
        store.close()
    unscored = [d for d in records if d["status"] == "unscored"]
    assert len(unscored) == 3 and all(
        v is None for d in unscored for v in d["scores"].values()
    )  # block 2 of each raw talk
    rows = {r["scorer"]: r for r in data["rows"]}
    for name in ("third_party_reply:fake (written)", "third_party_reply:fake (expected)"):
        assert (rows[name]["scored"], rows[name]["unscored"]) == (POINTS - 3, 3)
        assert rows[name]["rho"]["n"] == POINTS - 3
    assert rows["user reward"]["unscored"] == 0 and data["points"] == POINTS  # the points stay, for the others


def test_a_killed_run_resumes_without_losing_or_redoing_a_finished_point(tmp_path: Path) -> None:
    files, run = rated_files(tmp_path), tmp_path / "run"
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(latency_s=0.05) as srv:
        args = command(files, run, srv.base_url, "--concurrency", "1")
        p = emoharbor(*args, env=env)
        deadline = time.monotonic() + 120
        while count(run, "score") < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)  # no chance to run its finally: only what each finished unit wrote
        p.wait()
        before = written(run, "score")
        assert 4 <= len(before) < SCORES, "the kill should land mid-run"
        store = RunStore.open_existing(run)
        try:
            assert store.meta().get("status") != "complete" and len(store.keys("point")) == POINTS
            killed_wall = float(store.meta()["wall_s"])
        finally:
            store.close()
        again = emoharbor(*args, env=env)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"{SCORES} scores ({SCORES - len(before)} new, {len(before)} already done, 0 ended in error)" in err
    after = written(run, "score")
    assert len(after) == SCORES
    assert all(after[k] == v for k, v in before.items())  # the finished ones were kept, not written again
    store = RunStore.open_existing(run)
    try:
        assert len(store.keys("point")) == POINTS and float(store.meta()["wall_s"]) >= killed_wall
        assert store.meta()["status"] == "complete"
    finally:
        store.close()
    assert f"Seekers: {POINTS} rated reply blocks" in out


def test_options_are_checked(tmp_path: Path) -> None:
    from emoharbor.errors import ConfigError

    files = list(rated_files(tmp_path))
    with pytest.raises(ConfigError, match="at least one ESConv file"):
        SeekersOptions(files=[])
    with pytest.raises(ConfigError, match="not both"):
        SeekersOptions(files=files, limit=2, sample=2)
    with pytest.raises(ConfigError, match="no scorer"):
        SeekersOptions(files=files, user=None, judges=[])
    with pytest.raises(
        ConfigError, match=r"third_party \(third_party\) rates whole conversations; emoharbor seekers rates one reply"
    ):
        SeekersOptions(files=files, judges=["third_party"]).make_judges()
    with pytest.raises(ConfigError, match="rates two replies side by side"):
        SeekersOptions(files=files, judges=["heart_pairwise"]).make_judges()
    assert [j.name for j in SeekersOptions(files=files).make_judges()] == ["third_party_reply:local:qwen1.5b"]


def test_varied_chooses_among_the_talks_whose_ratings_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ratings = [(3, 3, 3), (2, 4, 4), (5, 5, 5), (1, 3, 2)]  # the first and third talks rate every block alike
    raw = write_raw(tmp_path / "failed_mix.json", [raw_record(bakery_talk(k, r)) for k, r in enumerate(ratings)])
    flat = write_lines(tmp_path / "feedback_flat.jsonl", [multiesc_record(breakup_talk(0, (4, 4)))])
    judge_only: dict[str, Any] = {"user": None, "judges": ["third_party_reply"]}
    every = load_points(SeekersOptions(files=[raw], **judge_only))
    varied = load_points(SeekersOptions(files=[raw], varied=True, **judge_only))
    assert len(every) == 12 and sorted({p.talk for p in every}) == [f"failed_mix:{k}" for k in range(4)]
    assert sorted({p.talk for p in varied}) == ["failed_mix:1", "failed_mix:3"] and len(varied) == 6
    sampled = load_points(SeekersOptions(files=[raw], varied=True, sample=1, seed=3, **judge_only))
    assert {p.talk for p in sampled} <= {"failed_mix:1", "failed_mix:3"} and len(sampled) == 3
    # the option is part of the run's record only when on: runs made before it still resume
    assert "varied" not in SeekersOptions(files=[raw], **judge_only).resolved()
    assert SeekersOptions(files=[raw], varied=True, **judge_only).resolved()["varied"] is True
    with pytest.raises(DataError, match=r"feedback_flat.jsonl: --varied: no talk has two different ratings"):
        load_points(SeekersOptions(files=[flat], varied=True, **judge_only))
    run_dir = tmp_path / "run"
    code, out, err = run_main(["seekers", str(flat), "--varied", "--user-model", "scripted", "--set",
                               "reward.user_agent=rules", "--judge", "none", "--run-dir", str(run_dir), "--quiet"],
                              capsys)  # fmt: skip
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [f"error: {flat}: --varied: no talk has two different ratings (no within-talk "
                                        "pair)"] and not run_dir.exists()  # fmt: skip
