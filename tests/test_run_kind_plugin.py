"""A worked example of adding a kind of run: ``EchoKind`` asks a model for a reply to each of a few prompts and
counts the words. It is defined here, and registered with one line (``kinds.register(EchoKind())``); the
shared run command (``commands.runs.run_kind``) runs it end to end on the scripted backend, resumes it, and
``emoharbor leaderboard``, ``report`` and ``export`` show it through the table of kinds.

Files touched to add it: this module (its kind) and the one ``register`` line; a kind that ships with
emoharbor is its own module (``<package>/kind.py``) and one line in ``kinds.TABLE``. Before the table of
kinds was one object per kind, the same kind touched 9-11 files (kinds.py, its run and render modules, a
command, cli.py, report/runs.py, report/build.py, results.py, preflight.py, config_kinds.py,
report/judges_table.py). docs/extending.md walks through it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_main
from emoharbor import kinds
from emoharbor.commands.runs import run_kind
from emoharbor.errors import ConfigError
from emoharbor.kinds import Rows, RunKind, Summary
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.report.html import esc, table
from emoharbor.report.runs import RunView
from emoharbor.store.record import open_run
from emoharbor.store.run_store import RunStore, call_sink
from emoharbor.store.units import Events, Work, ended_in_error, finished, run_stage
from emoharbor.tables import text_table


@dataclass(frozen=True)
class EchoPlan:
    prompts: list[str]
    model: ModelSpec = field(default_factory=lambda: ModelSpec(model="scripted", replies=["I hear you, truly."]))


def words(store: RunStore) -> Rows:
    return [{"run": store.folder.name, "prompt": k[0], "reply": d["reply"], "words": d["words"]}
            for k, d in sorted(store.items("echo"))]  # fmt: skip


class EchoKind(RunKind):
    name = "echo"
    title = "an echo run (the worked example)"

    def check(self, plan: EchoPlan, *, new: bool) -> None:
        if not plan.prompts:
            raise ConfigError("echo: give at least one prompt")

    async def execute(self, plan: EchoPlan, folder: Path, *, progress: bool = True) -> Summary:
        store = open_run(folder, self.name, {"prompts": plan.prompts, "model": plan.model.model_dump(mode="json")})
        try:
            had = len(finished(store, "echo"))
            async with ModelPool(cache_path=None, sink=call_sink(store)) as pool:
                model = await pool.get(plan.model, "echo")

                def ask(prompt: str) -> Work:
                    async def work() -> tuple[dict[str, Any], Events]:
                        r = await model.chat([{"role": "user", "content": prompt}])
                        return {"reply": r.text, "words": len(r.text.split()), "status": "ok"}, []

                    return work

                await run_stage(store, "echo", [((p,), ask(p)) for p in plan.prompts], workers=2, progress=progress)
            store.set_meta("status", "complete")
            n = len(plan.prompts)
            return Summary("answer", n, n - had, ended_in_error(store, "echo", [(p,) for p in plan.prompts]))
        finally:
            store.close()

    def board(self, store: RunStore, fmt: str, *, judge: str = "user", scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        rows = words(store)
        if fmt == "json":
            return json.dumps(rows), rows
        return text_table(["prompt", "words"], [[r["prompt"], str(r["words"])] for r in rows], fmt == "md"), rows

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        view.analysis = {"rows": words(store)}

    def html(self, view: RunView, rid: str, seed: int) -> str:
        assert view.analysis is not None
        rows = [[esc(r["prompt"]), str(r["words"])] for r in view.analysis["rows"]]
        return table(["prompt", "words"], rows, tid=f"{rid}-echo")

    def export(self, store: RunStore) -> dict[str, Rows]:
        return {"echo_words": words(store)}

    def tidy(self, store: RunStore) -> Rows:
        return words(store)


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> RunKind:
    monkeypatch.setattr(kinds, "TABLE", dict(kinds.TABLE))  # the table as it was, after the test
    kinds.register(EchoKind())  # the one line that adds the kind
    return kinds.of("echo")


def test_a_kind_defined_outside_emoharbor_runs_resumes_and_is_read_by_every_command(
    echo: RunKind, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "echo-run"
    plan = EchoPlan(["I lost my job.", "My sister will not call me back.", "I cannot sleep."])
    run_kind(echo, plan, folder, fmt="text", progress=False)
    out = capsys.readouterr()
    assert f"run folder: {folder}" in out.err and "3 answers (3 new, 0 already done, 0 ended in error)" in out.err
    assert [line.split()[-1] for line in out.out.splitlines()[2:]] == ["4", "4", "4"]
    run_kind(echo, plan, folder, fmt="text", progress=False)  # resumed: nothing left to do
    assert "(0 new, 3 already done, 0 ended in error)" in capsys.readouterr().err

    code, out_text, err = run_main(["leaderboard", str(folder), "--format", "json"], capsys)
    assert code == 0, err
    assert {r["prompt"]: r["words"] for r in json.loads(out_text)} == dict.fromkeys(plan.prompts, 4)

    code, out_text, err = run_main(["report", str(folder)], capsys)
    html = (folder / "report.html").read_text("utf-8")
    assert code == 0 and out_text.strip() == str(folder / "report.html"), err
    assert 'id="run0-echo-run-echo"' in html and "My sister will not call me back." in html

    code, out_text, err = run_main(["export", str(folder), "--format", "csv"], capsys)
    assert code == 0, err
    exported = {Path(p).name for p in out_text.split()}
    assert {"results.csv", "echo_words.csv"} <= exported
    assert (folder / "export" / "echo_words.csv").read_text("utf-8").count("\n") == 1 + 3


def test_a_kind_without_a_part_is_refused_by_the_commands_that_need_it(
    echo: RunKind, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "echo-run"
    run_kind(echo, EchoPlan(["Hello."]), folder, fmt="text", progress=False)
    capsys.readouterr()
    assert kinds.with_part("rejudge") == ["emoharbor", "validate"]
    code, _, err = run_main(["assess", str(folder), "--judge", "user"], capsys)
    assert code == 2 and f"{folder} holds an echo run (the worked example), not an EmoHarbor run" in err
    with pytest.raises(ConfigError, match="give at least one prompt"):
        run_kind(echo, EchoPlan([]), tmp_path / "none", fmt="text", progress=False)
    assert not (tmp_path / "none").exists()
