"""A worked example of adding a kind of run: ``EchoKind`` (``echo_kind.py``, the module a user writes: the
kind's class and one ``kinds.register(EchoKind())`` line) asks a model for a reply to each of a few prompts and
counts the words. Its name is ``echo_kind:echo``, its module's and its own, and its runs store that name: the
shared run command (``commands.runs.run_kind``) runs it end to end on the scripted backend, resumes it, and
``emoharbor leaderboard``, ``report`` (its HTML section, its rows of the runs side by side, and
``--format md``), ``export`` and ``judges`` (its model's answers as judgments, with a column of its own)
show it through the table of kinds, in this process and (``report``, ``export``, ``judges``) in a fresh one,
which imports ``echo_kind`` to read the run.

Files touched to add it: its module (its kind and the one ``register`` line); a kind that ships with
emoharbor is its own module (``<package>/kind.py``, its section beside it if long) and one line in
``kind_table.BUILT_IN``. Before the table of kinds was one object per kind, the same kind touched 9-11 files
(kinds.py, its run and render modules, a command, cli.py, report/runs.py, report/build.py, results.py,
preflight.py, settings_files.py, report/judges_table.py); before each kind owned its rows of ``emoharbor judges``,
its rows of the runs side by side and its view's data, it still touched report/judges_table.py (the unit kind's
judge position, a rows function and its branch, the header, the cells), commands/judges.py (the note under the
table), report/build.py (the side-by-side table named the one kind it showed) and report/runs.py (a field of
``RunView`` for its data, or borrowing another kind's). docs/extending.md walks through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from cli_helpers import run_main
from emoharbor import kinds
from emoharbor.commands.runs import run_kind
from emoharbor.errors import ConfigError
from emoharbor.kinds import RunKind
from emoharbor.store.run_store import RunStore

ECHO = "echo_kind:echo"
TESTS = Path(__file__).parent


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The module ``echo_kind``, imported afresh when its kind is asked for by name, as a command reading one
    of its runs does (into a copy of the table of kinds: the table as it was, after the test)."""
    monkeypatch.setattr(kinds, "TABLE", dict(kinds.TABLE))
    sys.modules.pop("echo_kind", None)
    kinds.of(ECHO)
    yield sys.modules["echo_kind"]
    sys.modules.pop("echo_kind", None)


def elsewhere(*args: str, path: Path | None) -> subprocess.CompletedProcess[str]:
    """``emoharbor ARGS`` in a fresh process, where no kind of one's own is registered (``path``: its
    PYTHONPATH; None: none)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | ({"PYTHONPATH": str(path)} if path else {})
    return subprocess.run([sys.executable, "-m", "emoharbor.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_a_kind_defined_outside_emoharbor_runs_resumes_and_is_read_by_every_command(
    echo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "echo-run"
    kind = kinds.of(ECHO)
    plan = echo.EchoPlan(["I lost my job.", "My sister will not call me back.", "I cannot sleep."])
    run_kind(kind, plan, folder, fmt="text", progress=False)
    out = capsys.readouterr()
    assert f"run folder: {folder}" in out.err and "3 answers (3 new, 0 already done, 0 ended in error)" in out.err
    assert [line.split()[-1] for line in out.out.splitlines()[2:]] == ["4", "4", "4"]
    run_kind(kind, plan, folder, fmt="text", progress=False)  # resumed: nothing left to do
    assert "(0 new, 3 already done, 0 ended in error)" in capsys.readouterr().err

    code, out_text, err = run_main(["leaderboard", str(folder), "--format", "json"], capsys)
    assert code == 0, err
    assert {r["prompt"]: r["words"] for r in json.loads(out_text)} == dict.fromkeys(plan.prompts, 4)

    code, out_text, err = run_main(["report", str(folder), str(folder)], capsys)  # twice: side by side
    html = (folder / "report.html").read_text("utf-8")
    assert code == 0 and out_text.strip() == str(folder / "report.html"), err
    assert 'id="run0-echo-run-echo"' in html and "My sister will not call me back." in html
    compared = html[html.index('id="runs-compared"') :].split("</table>")[0]
    assert compared.count("<td>scripted</td><td>3</td>") == 2  # its own row of the runs side by side, each time
    code, out_text, err = run_main(["report", str(folder), "--format", "md"], capsys)
    assert code == 0, err
    assert out_text.splitlines()[:3] == ["| prompt | words |", "|---|---|", "| I cannot sleep. | 4 |"]

    code, out_text, err = run_main(["export", str(folder), "--format", "csv"], capsys)
    assert code == 0, err
    exported = {Path(p).name for p in out_text.split()}
    assert {"results.csv", "echo_words.csv"} <= exported
    assert (folder / "export" / "echo_words.csv").read_text("utf-8").count("\n") == 1 + 3

    code, out_text, err = run_main(["judges", str(folder), "--format", "json"], capsys)
    assert code == 0, err
    (row,) = json.loads(out_text)
    assert row["judge"] == "echo:scripted" and row["judgments"] == 3 and row["unscored_rate"] == 0
    assert row["echo_words"] == pytest.approx(4.0) and row["card"] == "echo@1"
    code, out_text, err = run_main(["judges", str(folder)], capsys)
    head, _, first = out_text.splitlines()[:3]
    assert head.index("words / answer") > head.index("agrees with the seekers")  # after the kinds before it
    assert first.split()[:3] == ["echo:scripted", "argmax", "the"] and " 4.0 " in first
    assert out_text.rstrip().endswith("'words / answer' (an echo run): the mean length of the model's answers.")


def test_a_kind_without_a_part_is_refused_by_the_commands_that_need_it(
    echo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "echo-run"
    kind = kinds.of(ECHO)
    run_kind(kind, echo.EchoPlan(["Hello."]), folder, fmt="text", progress=False)
    capsys.readouterr()
    assert kinds.with_part("rejudge") == ["emoharbor", "validate", "ladder"]
    code, _, err = run_main(["assess", str(folder), "--judge", "user"], capsys)
    assert code == 2 and f"{folder} holds an echo run (the worked example), not an EmoHarbor run" in err
    with pytest.raises(ConfigError, match="give at least one prompt"):
        run_kind(kind, echo.EchoPlan([]), tmp_path / "none", fmt="text", progress=False)
    assert not (tmp_path / "none").exists()


def test_a_run_of_ones_own_kind_is_read_by_a_fresh_process(
    echo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "echo-run"
    run_kind(kinds.of(ECHO), echo.EchoPlan(["I lost my job.", "I cannot sleep."]), folder, fmt="text", progress=False)
    capsys.readouterr()
    store = RunStore.open_existing(folder)
    try:
        assert store.meta()["kind"] == ECHO  # the run names the kind's module
    finally:
        store.close()

    done = elsewhere("report", str(folder), path=TESTS)
    assert done.returncode == 0, done.stderr
    assert 'id="run0-echo-run-echo"' in (folder / "report.html").read_text("utf-8")  # its own section
    done = elsewhere("export", str(folder), "--format", "csv", path=TESTS)
    assert done.returncode == 0, done.stderr
    assert (folder / "export" / "echo_words.csv").read_text("utf-8").count("\n") == 1 + 2
    done = elsewhere("judges", str(folder), "--format", "json", path=TESTS)
    assert done.returncode == 0, done.stderr
    assert [(r["judge"], r["judgments"]) for r in json.loads(done.stdout)] == [("echo:scripted", 2)]
    done = elsewhere("leaderboard", str(folder), path=TESTS)
    assert done.returncode == 0, done.stderr
    assert "I lost my job." in done.stdout

    done = elsewhere("report", str(folder), path=None)  # its module cannot be imported there: one line
    assert done.returncode == 2
    assert done.stderr.startswith("error: run kind 'echo_kind:echo': cannot import echo_kind (No module named")


def test_a_kind_of_ones_own_is_named_after_its_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "TABLE", dict(kinds.TABLE))

    class Plain(RunKind):
        name = "plain"

    class Named(RunKind):
        name = "test_run_kind_plugin:named"

    with pytest.raises(ConfigError, match=r"run kind 'plain' of module test_run_kind_plugin: a kind of your own is "
                       r"named MODULE:NAME"):  # fmt: skip
        kinds.register(Plain())
    assert kinds.get("plain") is None
    named = Named()
    kinds.register(named)
    assert kinds.get("test_run_kind_plugin:named") is named
    with pytest.raises(ConfigError, match="run kind 'no_such_module:x': cannot import no_such_module"):
        kinds.get("no_such_module:x")
    assert kinds.title("no_such_module:x") == "a 'no_such_module:x' run"  # a message names it all the same
