"""`emoharbor validate`: the replay through the chain, the store, the agreement table, the command."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import count, emoharbor
from emoharbor.data.esconv import load_esconv
from emoharbor.data.selection import select
from emoharbor.errors import ConfigError, DataError
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.spec import ModelSpec
from emoharbor.profiles.esconv_import import draft_profile
from emoharbor.simulate.chain_user import ChainUser
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer
from emoharbor.validate.analysis import score_rows, validation_table
from emoharbor.validate.render import render_validation
from emoharbor.validate.replay import plan_replay, replay
from emoharbor.validate.run import ValidateOptions, load_selection, replay_and_assess, run_validation
from report_helpers import SHARED_ESCONV, ValidateScript, fake_spec, invented_record, write_jsonl


def dialogs(tmp_path: Path, empathies: list[int], **kw: object) -> Path:
    return write_jsonl(tmp_path / "mine.jsonl", [invented_record(e, **kw) for e in empathies])  # type: ignore[arg-type]


def test_plan_keeps_turns_up_to_the_cap(tmp_path: Path) -> None:
    d = load_esconv(dialogs(tmp_path, [3], supporter_turns=5))[0]
    plan = plan_replay(d, 2)
    assert [t.speaker for t in plan.turns] == ["seeker", "supporter", "seeker", "supporter"]
    assert (plan.supporter_turns_total, plan.supporter_turns_replayed, plan.truncated) == (5, 2, True)
    whole = plan_replay(d, 0)
    assert len(whole.turns) == 10 and not whole.truncated
    assert not plan_replay(d, 9).truncated


async def test_replay_feeds_real_supporter_turns_to_the_appraiser_and_feeler(tmp_path: Path) -> None:
    d = load_esconv(dialogs(tmp_path, [4], supporter_turns=3))[0]
    profile = draft_profile(d, evaluation_only=True)
    model = ScriptedModel(ValidateScript())
    conv = await replay(ChainUser(model, profile), d, profile, plan_replay(d, 0), seed=1)
    assert [t.text for t in conv.turns] == [t.text for t in d.merged_turns()]  # the real words, nothing generated
    assert len(model.calls) == 6  # appraise + feel per supporter turn, no Expresser
    # initial intensity 5/5 -> 90; the "zest" message lowers it by 15, the two others raise it by 5
    assert [s.intensity for s in conv.states] == [90, 75, 80, 85]
    supporter_turns = [t for t in conv.turns if t.speaker == "supporter"]
    assert all(t.inner and t.inner["state"]["thought"] for t in supporter_turns)
    assert supporter_turns[0].inner["appraisal"]["fit"] == "mixed"  # type: ignore[index]
    assert conv.termination == "max_turns" and conv.supporter == "esconv-human"


async def test_table_from_scripted_judges_gives_the_expected_figures(tmp_path: Path) -> None:
    # seekers rate empathy = relevance = e and drop e-1; e <= 2 is failed; the user-judge scores e, the
    # third party 6-e: rho +1 and -1, AUROC 1 and 0. The user-judge cannot score the e=3 conversation.
    path = dialogs(tmp_path, [1, 2, 3, 4, 5, 5, 2])
    records = load_esconv(path)
    for r in records:  # make the e=3 transcript unparsable for the user-judge
        if r.survey["empathy"] == 3:
            r.turns[0] = type(r.turns[0])(r.turns[0].speaker, r.turns[0].text + " NOPE")
    opts = ValidateOptions(esconv=[path], judges=["user", "third_party"], max_supporter_turns=2)
    model = ScriptedModel(ValidateScript(unparsable_marker="NOPE"))
    store = RunStore.create_or_resume(tmp_path / "run", "validate", opts.resolved(), "h")
    judges = opts.make_judges()
    for r in records:
        assert await replay_and_assess(store, r, opts, model, judges, {j.name: model for j in judges})
    data = validation_table(store, n_boot=300)
    store.put("replay", ("late:0",), store.get("replay", ("mine:0",)))  # replayed, not judged yet
    flat = score_rows(store)
    store.close()
    assert len(flat) == 15  # 7 conversations x 2 judges, and one row without a judge
    assert [r["conversation"] for r in flat if "judge" not in r] == ["late:0"]
    unscored = next(r for r in flat if r["seeker_empathy"] == 3 and r["judge"] == "user")
    assert unscored["unscored"] is True and unscored["overall"] is None and unscored["validation"] is None
    five = [r for r in flat if r["seeker_empathy"] == 5]
    assert {(r["judge"], r["overall"], r["relief"]) for r in five} == {
        ("user", 5.0, 5),
        ("third_party:local:qwen1.5b", 1.0, 1),
    }
    assert all(r["failed"] is False and r["seeker_intensity_drop"] == 4 for r in five)
    rows = {(r["judge"], r["score"]): r["cells"] for r in data["rows"]}
    user, third = rows[("user", "overall")], rows[("third_party:local:qwen1.5b", "overall")]
    assert user["empathy"]["value"] == pytest.approx(1.0) and user["empathy"]["n"] == 6
    assert user["intensity_drop"]["value"] == pytest.approx(1.0)
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert user["not_failed"]["value"] == pytest.approx(1.0) and user["not_failed"]["n"] == 6
    assert third["empathy"]["value"] == pytest.approx(-1.0) and third["empathy"]["n"] == 7
    assert third["not_failed"]["value"] == pytest.approx(0.0)
    assert user["empathy"]["lo"] == pytest.approx(1.0) and user["empathy"]["hi"] == pytest.approx(1.0)
    assert data["counts"]["judges"]["user"] == {"scored": 6, "unscored": 1, "not_assessed": 0}
    assert data["counts"]["failed"] == 3
    diff = data["differences"][0]["cells"]["empathy"]
    assert diff["value"] == pytest.approx(2.0) and diff["n"] == 6
    # the simulated user's own intensity drop follows "zest": 15 down for every e >= 2, 5 up for e = 1
    sim = {(r["judge"], r["score"]): r["cells"] for r in data["rows"]}[
        ("user (inner state)", "simulated intensity drop")
    ]
    assert sim["not_failed"]["n"] == 7
    text = render_validation(data, "text")
    assert "rho vs seeker empathy" in text and "1.00 [1.00, 1.00] n=6" in text and "unscored 1" in text
    assert "user,overall,empathy,1.0,1.0,1.0,6" in render_validation(data, "csv")


def test_selection_and_option_errors(tmp_path: Path) -> None:
    path = dialogs(tmp_path, [1, 2, 3, 4, 5])
    ds = load_esconv(path)
    assert [d.index for d in select(ds, 2, None, 0)] == [0, 1]
    picked = [d.index for d in select(ds, None, 3, 5)]
    assert len(picked) == 3 and picked == sorted(picked) and picked == [d.index for d in select(ds, None, 3, 5)]
    with pytest.raises(ConfigError, match="not both"):
        ValidateOptions(esconv=[path], limit=2, sample=2)
    with pytest.raises(ConfigError, match="at least one ESConv file"):
        ValidateOptions(esconv=[])
    with pytest.raises(DataError, match="also in"):
        load_selection(ValidateOptions(esconv=[path, path]))
    raw = tmp_path / "failed_x.json"
    raw.write_text(json.dumps([invented_record(2, raw=True), invented_record(1, raw=True)]))
    order = [d.id for d in load_selection(ValidateOptions(esconv=[path, raw], limit=3))]
    assert order == ["mine:0", "failed_x:0", "mine:1", "failed_x:1", "mine:2"]  # interleaved across files


async def test_run_validation_resumes_in_its_store(tmp_path: Path) -> None:
    path = dialogs(tmp_path, [1, 3, 5])
    raw = tmp_path / "failed_mine.json"
    raw.write_text("[" + ",".join(json.dumps(invented_record(2, raw=True)) for _ in range(2)) + "]")
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(
            esconv=[path, raw], user=spec, judge=spec, judges=["user", "third_party"], max_supporter_turns=2
        )
        first = await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        requests = srv.requests
        store = RunStore.open_existing(tmp_path / "run")
        wall_first = float(store.meta()["wall_s"])
        store.set_meta("wall_s", f"{wall_first + 1000:.1f}")  # as if the first session had taken 1000 s more
        store.close()
        again = await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        assert srv.requests == requests  # nothing redone
    # the endpoint is gone: a finished run is read back without reaching (or starting) any model
    third = await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
    assert (first.units, first.done_now, again.done_now, third.done_now) == (5, 5, 0, 0)
    store = RunStore.open_existing(tmp_path / "run")
    assert store.keys("replay") == {("mine:0",), ("mine:1",), ("mine:2",), ("failed_mine:0",), ("failed_mine:1",)}
    assert len(store.keys("assessment")) == 10
    assert store.get("replay", ("failed_mine:1",))["esconv"]["from_failed_set"] is True  # type: ignore[index]
    assert wall_first > 0 and float(store.meta()["wall_s"]) >= wall_first + 1000  # summed over sessions
    store.close()


async def test_units_that_ended_on_a_failed_model_call_are_done_again(tmp_path: Path) -> None:
    path = dialogs(tmp_path, [1, 3, 5])
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(
            esconv=[path], user=spec, judge=spec, judges=["user", "third_party"], max_supporter_turns=2, concurrency=1
        )
        # a 400 is not retried: the first call (mine:0's Appraiser) fails, then mine:1's four chain calls
        # pass and its user-judge call fails
        srv.faults.extend(["400", "ok", "ok", "ok", "ok", "400"])
        first = await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        store = RunStore.open_existing(tmp_path / "run")
        assert store.get("replay", ("mine:0",))["termination"] == "error"  # type: ignore[index]
        failed = store.get("assessment", ("mine:1", "user"))
        assert failed is not None and failed["status"] == "error" and failed["attempts"] == 0
        assert store.get("assessment", ("mine:1", "third_party:fake"))["status"] == "ok"  # type: ignore[index]
        store.close()
        again = await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
    assert (first.errors, again.errors, again.done_now) == (1, 0, 1)
    store = RunStore.open_existing(tmp_path / "run")
    assert all(d["termination"] != "error" for _, d in store.items("replay"))
    assert [k for k, a in store.items("assessment") if a["status"] != "ok"] == []
    assert len(store.keys("assessment")) == 6
    # what was spent adds up after the redo: every request the server answered, the failed attempts' calls kept
    usage = store.usage_by_role().values()
    assert sum(u["requests"] for u in usage) == srv.requests
    assert sum(u["calls"] - u["cached"] - u["errors"] for u in usage) == srv.completed
    assert sum(u["superseded"] for u in usage) >= 2
    store.close()


@pytest.mark.skipif(not SHARED_ESCONV.is_dir(), reason="the ESConv data folder ../shared/data/esconv is absent")
def test_validate_command_on_real_records_with_the_fake_server(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer() as srv:
        args = [
            sys.executable,
            "-m",
            "emoharbor.cli",
            "validate",
            "--esconv",
            str(SHARED_ESCONV / "valid.jsonl"),
            "--esconv",
            str(SHARED_ESCONV / "failed_dev.json"),
            "--limit",
            "3",
            "--model",
            "fake",
            "--base-url",
            srv.base_url,
            "--max-supporter-turns",
            "2",
            "--run-dir",
            str(tmp_path / "v"),
            "--quiet",
            "--format",
            "md",
        ]
        p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "6 conversations (6 new" in p.stderr
    assert "| judge | score | scoring | rho vs seeker empathy" in p.stdout
    assert "valid 3" in p.stdout and "failed_dev 3" in p.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "emoharbor.cli", "validate", "--esconv", str(tmp_path / "none.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "not found" in bad.stderr and "Traceback" not in bad.stderr


def test_a_killed_validate_run_keeps_its_wall_time_and_resumes(tmp_path: Path) -> None:
    path = dialogs(tmp_path, [1, 2, 3, 4, 5, 2, 4, 3])
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    run_dir = tmp_path / "v"
    args = ["validate", "--esconv", str(path), "--concurrency", "1", "--run-dir", str(run_dir), "--quiet"]
    with FakeOpenAIServer(latency_s=0.05) as srv:
        args += ["--model", "fake", "--base-url", srv.base_url, "--max-supporter-turns", "2"]
        p = emoharbor(*args, env=env)
        deadline = time.monotonic() + 120
        while count(run_dir, "replay") < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)  # no chance to run its finally: only the per-conversation record
        p.wait()
        done = count(run_dir, "replay")
        assert 2 <= done < 8, "the kill should land mid-run"
        store = RunStore.open_existing(run_dir)
        killed_wall = float(store.meta()["wall_s"])
        assert store.meta().get("status") != "complete"
        store.close()
        assert killed_wall > 0
        again = emoharbor(*args, env=env)
        _out, err = again.communicate(timeout=180)
    assert again.returncode == 0, err
    assert f"{8 - done} new" in err
    store = RunStore.open_existing(run_dir)
    assert len(store.keys("replay")) == 8 and float(store.meta()["wall_s"]) > killed_wall
    store.close()
    exported = emoharbor("export", str(run_dir), "--format", "csv", "--out", str(tmp_path / "x"), env=env)
    out, err = exported.communicate(timeout=60)
    assert exported.returncode == 0, err
    with (tmp_path / "x" / "validate_scores.csv").open(encoding="utf-8") as f:
        flat = list(csv.DictReader(f))
    assert len(flat) == 24 and {r["judge"] for r in flat} == {"user", "profile_aware:fake", "third_party:fake"}
    assert "validate_scores.csv" in out


async def test_the_pace_of_relief_and_the_step_that_matches_people(tmp_path: Path) -> None:
    # three supporter turns each; the Feeler answers 7 (+15 at step 15: its whole bound) to the first, which says
    # "zest", and 3 (-5: a third of it the other way) to the other two; the seekers fell (e-1) survey steps
    path = dialogs(tmp_path, [2, 3, 4, 5, 5])
    opts = ValidateOptions(esconv=[path], judges=["user"], max_supporter_turns=0)
    model = ScriptedModel(ValidateScript())
    store = RunStore.create_or_resume(tmp_path / "run", "validate", opts.resolved(), "h")
    judges = opts.make_judges()
    for r in load_esconv(path):
        assert await replay_and_assess(store, r, opts, model, judges, {j.name: model for j in judges})
    data = validation_table(store, n_boot=300)
    store.close()
    p = data["pace"]
    assert p["talks"] == 5 and p["intensity_step"] == 15
    assert p["people"]["value"] == pytest.approx((1 + 2 + 3 + 4 + 4) * 20 / 3 / 5)
    assert p["simulated"]["value"] == pytest.approx((15 - 5 - 5) / 3)
    assert p["share"]["value"] == pytest.approx((1 - 1 / 3 - 1 / 3) / 3)
    assert p["fitted_step"]["value"] == pytest.approx(p["people"]["value"] / p["share"]["value"])
    assert p["fitted_step"]["lo"] <= p["fitted_step"]["value"] <= p["fitted_step"]["hi"]
    assert "the intensity_step that matches them: 168.0 [" in render_validation(data, "text")
    # replayed only up to a cap, a talk is not whole: no pace from it
    capped = ValidateOptions(esconv=[path], judges=["user"], max_supporter_turns=2)
    store = RunStore.create_or_resume(tmp_path / "capped", "validate", capped.resolved(), "h")
    for r in load_esconv(path):
        assert await replay_and_assess(store, r, capped, model, judges, {j.name: model for j in judges})
    assert validation_table(store, n_boot=300)["pace"]["talks"] == 0
    store.close()
