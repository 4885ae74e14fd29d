"""``--set KEY=VALUE`` on ``run``, ``validate``, the ``heart`` stages and ``evolve``: one option, one parser
(``commands.options``); a setting changed where it belongs, and an unknown key or a bad value refused in one
line that names the ``--set``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from cli_helpers import run_main
from emoharbor.cli import cli
from emoharbor.config import RunConfig
from emoharbor.errors import ConfigError
from emoharbor.overrides import parse_sets, with_sets
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer
from report_helpers import invented_record, write_jsonl
from test_heart_cli import write_config as write_heart_config


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def stored(folder: Path) -> dict[str, Any]:
    store = RunStore.open_existing(folder)
    try:
        return store.config()
    finally:
        store.close()


def error_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, _, err = run_main(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_parse_sets() -> None:
    assert parse_sets(["a=1", "b.c=[x, y]", "d = {m: 2}", "e=", "a=true"]) == {
        "a": True, "b.c": ["x", "y"], "d": {"m": 2}, "e": None}  # fmt: skip
    for bad in ("a", "=1", "a..b=1"):
        with pytest.raises(ConfigError, match=re.escape(f"--set '{bad}': write KEY=VALUE, e.g. --set concurrency=4")):
            parse_sets([bad])
    with pytest.raises(ConfigError, match=r"--set a: '\[1' is not a YAML value"):
        parse_sets(["a=[1"])


def test_with_sets_on_a_run_config() -> None:
    cfg = RunConfig.model_validate({"roles": {"supporter": ["scripted", "scripted"]}, "max_turns": 1})
    got = with_sets(cfg, {"repeats": 3, "roles.judge.temperature": 0, "roles.supporter.1.max_tokens": 9}, "c.yaml")
    assert (got.repeats, got.roles.judge.temperature, got.roles.supporter[1].max_tokens) == (3, 0.0, 9)
    assert got.max_turns == 1 and got.roles.supporter[0].max_tokens == 256  # the rest as it was (min_turns unset)
    assert with_sets(cfg, {}, "c.yaml") is cfg
    cases = {
        "concurency": "--set concurency: field 'concurency': no such setting (the settings are: name, roles,",
        "roles.judge.temprature": "field 'roles.judge.temprature': no such setting (roles.judge has: model, base_url",
        "repeats": "--set repeats: field 'repeats': Input should be a valid integer",
        "roles.supporter.5.model": "'roles.supporter' is a list of 2 in c.yaml: give an item's number (0 to 1)",
        "name.x": "--set name.x: 'name' is a single setting in c.yaml, not a group of settings",
    }
    for key, message in cases.items():
        with pytest.raises(ConfigError) as e:
            with_sets(cfg, {key: "lots"}, "c.yaml")
        assert message in str(e.value), str(e.value)
    with pytest.raises(ConfigError, match=r"with --set user_agent.min_turns: field '\(top level\)': user_agent.min_"):
        with_sets(cfg, {"user_agent.min_turns": 5}, "c.yaml")
    # the user_agent: block is checked by its agent's own settings class
    steps = with_sets(cfg, {"user_agent.intensity_step": 10}, "c.yaml").user_agent
    assert (steps.agent, steps.intensity_step, steps.trust_step) == ("chain", 10, 20)
    assert with_sets(cfg, {"user_agent": "simple"}, "c.yaml").user_agent.agent == "simple"
    with pytest.raises(ConfigError, match=r"--set user_agent.steps.*steps: Extra inputs are not permitted \(the sett"):
        with_sets(cfg, {"user_agent.steps": 3}, "c.yaml")


def test_run_with_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as srv:
        fake = {"model": "fake", "base_url": srv.base_url, "max_retries": 1, "timeout_s": 10}
        cfg = tmp_path / "c.yaml"
        roles = {"supporter": [{**fake, "name": "a"}], "user": fake, "judge": fake}
        cfg.write_text(yaml.safe_dump({"name": "t", "roles": roles, "profiles": ["builtin:p001*"], "max_turns": 3}))
        sets = ["--set", "max_turns=1", "--set", "roles.user.max_tokens=99", "--set", "judges=[user]"]
        r = CliRunner().invoke(cli, ["run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet", *sets])
    assert r.exit_code == 0, r.output
    got = stored(tmp_path / "r")
    assert got["max_turns"] == 1 and got["roles"]["user"]["max_tokens"] == 99 and got["judges"] == ["user"]
    line = error_of(["run", str(cfg), "--set", "max_turn=1"], capsys)
    assert "--set max_turn: field 'max_turn': no such setting (the settings are: name, roles, profiles" in line
    line = error_of(["run", str(cfg), "--set", "roles.user.temperature=-1"], capsys)
    assert "--set roles.user.temperature: field 'roles.user.temperature': Input should be greater than" in line


def test_validate_with_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(e) for e in (1, 4, 5)])
    with FakeOpenAIServer() as srv:
        args = ["validate", "--esconv", str(path), "--model", "fake", "--base-url", srv.base_url, "--judge", "user",
                "--run-dir", str(tmp_path / "v"), "--quiet"]  # fmt: skip
        sets = ["--set", "limit=2", "--set", "max_supporter_turns=1", "--set", "user.max_tokens=77"]
        r = CliRunner().invoke(cli, [*args, *sets])
    assert r.exit_code == 0, r.output
    got = stored(tmp_path / "v")
    assert (got["limit"], got["max_supporter_turns"], got["user"]["max_tokens"]) == (2, 1, 77)
    assert "2 conversations (2 new" in r.output
    line = error_of([*args, "--set", "limits=2"], capsys)
    assert "--set limits: field 'limits': no such setting (the settings are: esconv, limit, sample, seed" in line
    line = error_of([*args, "--set", "user.tempratur=1"], capsys)
    assert "--set user.tempratur: field 'user.tempratur': no such setting (user has: model" in line
    assert "--limit must be at least 1, not 0" in error_of([*args, "--set", "limit=0"], capsys)


def test_heart_stages_with_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, run = write_heart_config(tmp_path), tmp_path / "run"
    gen = ["heart", "generate", str(cfg), "--run", str(run), "--quiet"]
    sets = ["--set", "concurrency=2", "--set", "candidates.0.replies=[Hello there.]", "--set", "bootstrap=7"]
    r = CliRunner().invoke(cli, [*gen, *sets])
    assert r.exit_code == 0, r.output
    got = stored(run)
    assert got["concurrency"] == 2 and got["candidates"][0]["replies"] == ["Hello there."] and got["bootstrap"] == 7
    assert "field 'judges.0.modle': no such setting (judges.0 has: model" in error_of(
        [*gen, "--set", "judges.0.modle=x"], capsys
    )
    r = CliRunner().invoke(cli, ["heart", "judge", str(run), "--quiet", "--set", "judges.0.timeout_s=5"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["heart", "ratings", str(run), "--set", "bootstrap=3"])
    assert r.exit_code == 0 and "3 bootstrap resamples" in r.output, r.output
    for stage in (["judge"], ["ratings"], ["agreement"], ["strategies", "--no-label"]):
        line = error_of(["heart", *stage, str(run), "--set", "judges.0.model=other"], capsys)
        assert "--set judges.0.model: a HEART run keeps the settings it was started with" in line
        assert "only these can change: bootstrap, bt_prior, concurrency" in line
    line = error_of(["heart", "judge", str(run), "--set", "concurrency=0"], capsys)
    assert "--set concurrency: field 'concurrency': Input should be greater than or equal to 1" in line
    esconv = write_jsonl(tmp_path / "e.jsonl", [invented_record(3)])
    check = ["heart", "strategy-check", str(esconv), "--model", "scripted", "--quiet"]
    line = error_of([*check, "--set", "max_sentence=3"], capsys)
    assert "--set max_sentence: field 'max_sentence': no such setting (the settings are: labeller, seed" in line


def test_evolve_uses_the_same_parser(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from emoharbor.commands import evolve

    assert evolve.parse_sets is parse_sets
    with pytest.raises(ConfigError, match=re.escape("write KEY=VALUE, e.g. --set dpo.train_args.beta=0.2")):
        evolve._config(None, ("sft.train_args.max_steps",))
    assert evolve._config(None, ("sft.train_args.max_steps=3",)).sft.train_args == {"max_steps": 3}


@pytest.mark.parametrize(
    ("command", "old"),
    [("seekers", "--user-model"), ("realism", "--user-model"), ("reward", "--user"), ("chat", "--user")],
)
def test_the_models_options_are_named_alike_and_an_old_spelling_still_works_unseen(
    command: str, old: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_helpers import run_main

    code, out, _ = run_main([command, "--help"], capsys)
    assert code == 0 and "--model TEXT" in out and f"{old} " not in out and "--base-url" in out
    # the old spelling is read into --model, and --model alone keeps its default
    cmd = cli.get_command(cli.make_context("emoharbor", [], resilient_parsing=True), command)
    assert cmd is not None
    args = {"seekers": ["x.json"], "realism": ["x.json"], "reward": ["x.jsonl", "--out", "o.jsonl"],
            "chat": ["--profile", "builtin:p001*"]}[command]  # fmt: skip
    assert cmd.make_context(command, [*args, old, "m1"]).params["user_model"] == "m1"
    assert cmd.make_context(command, [*args, "--model", "m2"]).params["user_model"] == "m2"
    assert cmd.make_context(command, [*args, old, "m1", "--model", "m2"]).params["user_model"] == "m2"
    assert cmd.make_context(command, [*args]).params["user_model"] == "local:qwen1.5b"
    # an error names the spelling typed
    code, _, err = run_main([command, *args, old, "gpt-x"], capsys)
    assert code == 2 and f"error: {old} gpt-x: " in err and "needs base_url" in err
