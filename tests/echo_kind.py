"""A kind of run of one's own, as a user writes it: a module with the kind's class and one line that registers
it (``kinds.register(EchoKind())``, at the end). ``EchoKind`` asks a model for a reply to each of a few prompts
and counts the words. Its name is ``echo_kind:echo``, this module's and its own: a run of it stores that name,
so a command reading the run in another process imports this module, which registers the kind as it loads.
``test_run_kind_plugin.py`` runs it and reads its runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emoharbor import kinds
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
    name = "echo_kind:echo"  # its module and its name: what a run of it stores, so a reader imports this module
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


kinds.register(EchoKind())  # the one line that adds the kind
