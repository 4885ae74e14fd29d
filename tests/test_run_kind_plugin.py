"""A worked example of adding a kind of run: ``EchoKind`` asks a model for a reply to each of a few prompts and
counts the words. It is defined here, and registered with one line (``kinds.register(EchoKind())``); the
shared run command (``commands.runs.run_kind``) runs it end to end on the scripted backend, resumes it, and
``emoharbor leaderboard``, ``report`` (its HTML section, its rows of the runs side by side, and
``--format md``), ``export`` and ``judges`` (its model's answers as judgments, with a column of its own)
show it through the table of kinds.

Files touched to add it: this module (its kind) and the one ``register`` line; a kind that ships with
emoharbor is its own module (``<package>/kind.py``, its section beside it if long) and one line in
``kinds.TABLE``. Before the table of kinds was one object per kind, the same kind touched 9-11 files (kinds.py,
its run and render modules, a command, cli.py, report/runs.py, report/build.py, results.py, preflight.py,
config_kinds.py, report/judges_table.py); before each kind owned its rows of ``emoharbor judges``, its rows of
the runs side by side and its view's data, it still touched report/judges_table.py (the unit kind's judge
position, a rows function and its branch, the header, the cells), commands/judges.py (the note under the
table), report/build.py (the side-by-side table named the one kind it showed) and report/runs.py (a field of
``RunView`` for its data, or borrowing another kind's). docs/extending.md walks through it.
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
from emoharbor.kinds import JudgeRows, Rows, RunKind, Summary
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.report.html import esc, table
from emoharbor.report.judges_table import add
from emoharbor.run_view import RunView
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
    judges_note = "'words / answer' (an echo run): the mean length of the model's answers."

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
        view.data = {"rows": words(store), "model": store.config()["model"]["model"]}

    def html(self, view: RunView, rid: str, seed: int) -> str:
        rows = [[esc(r["prompt"]), str(r["words"])] for r in view.data["rows"]]
        return table(["prompt", "words"], rows, tid=f"{rid}-echo")

    def side_by_side(self, view: RunView) -> list[list[Any]]:
        # supporter, conversations, overall, generic, personal, gap, intensity change
        return [[esc(view.data["model"]), str(len(view.data["rows"])), *["-"] * 5]]

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        # its model's answers as the judgments of "echo:MODEL" (a kind whose units name their judge counts
        # them and their calls' cost with ``judges_table.counts``)
        got = words(store)
        judge = "echo:" + store.config()["model"]["model"]
        row = add(rows, judge, "argmax", {"version": "echo@1", "sees": "the prompt"}, {"judgments": len(got)})
        row["echo_words"] = sum(r["words"] for r in got) / len(got) if got else None

    def judge_columns(self) -> list[tuple[str, Any]]:
        return [("words / answer", lambda r: "-" if r.get("echo_words") is None else f"{r['echo_words']:.1f}")]

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
