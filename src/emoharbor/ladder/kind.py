"""The ladder run (``emoharbor ladder``) as a kind of run (``kinds.py``): ``emoharbor leaderboard`` and ``report
--format`` print its table, ``emoharbor report`` shows it (``section.py``), ``emoharbor export`` writes one row per
scorer and pair of rungs (``ladder``) and the talks' ratings (the tidy table), ``emoharbor judges`` adds each
judge's mean tau against the known order, ``emoharbor assess`` rates its talks with more judge cards."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..models.spec import ModelSpec
    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .run import LadderPlan


def orders_ladder(r: dict[str, Any]) -> str:
    """The cell of ``emoharbor judges``: the judge's mean tau against the ladder's known order."""
    from ..tables import interval

    t = r.get("ladder")
    return "-" if not t else f"tau {interval(t['value'], t['lo'], t['hi'])} ({r['ladder_n']} profiles)"


class LadderKind(RunKind):
    name = "ladder"
    title = "a ladder run (emoharbor ladder)"
    judges_note = ("orders the ladder: the judge's overall score against supporters of known order (Kendall's tau "
                   "averaged over profiles, 1 the right order, 0 none), from the ladder run with the most "
                   "profiles")  # fmt: skip

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        from .analysis import ladder_table
        from .render import render_ladder

        data = ladder_table(store, seed=seed)
        return render_ladder(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from .analysis import ladder_table

        view.data = ladder_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        import json

        from ..report.judges_table import judged_rows, takes
        from .analysis import ladder_table

        cards = json.loads(store.meta().get("judges", "{}"))
        judged_rows(store, "assessment", -1, cards, rows)
        data = ladder_table(store, n_boot=500)
        for r in data["rows"]:
            row = rows.get((r["group"], "argmax"))
            if r["scorer"] == "overall" and row is not None and takes(row, "ladder", data["profiles"]):
                row.update(ladder=r["tau"], ladder_n=data["profiles"], ladder_run=str(folder))

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        return [("orders the ladder", orders_ladder)]

    def export(self, store: RunStore) -> dict[str, Rows]:
        from .analysis import ladder_table
        from .render import csv_rows

        return {"ladder": csv_rows(ladder_table(store))}

    async def rejudge(self, run_dir: Path, cards: list[str], judge: ModelSpec | None, *,
                      scoring: str | None = None, progress: bool = True) -> int:  # fmt: skip
        from .run import rejudge

        return await rejudge(run_dir, cards, judge, scoring=scoring, progress=progress)

    def tidy(self, store: RunStore) -> Rows:
        """One row per rating and dimension of its talks (``results.assessment_rows``), the rung as supporter."""
        from ..results import conversation_rows

        return conversation_rows(store)

    def check(self, plan: LadderPlan, *, new: bool) -> None:
        """The plan read the profiles, prompts and cards; the models are built, and reached for a new run."""
        from ..preflight import check_run_models

        named = [("--model", plan.opts.user)]
        named += [("--supporter-model", plan.opts.supporter_model)] if any(not r.scripted for r in plan.rungs) else []
        named += [(f"--judge {j.card.name}", j.model) for j in plan.judges]
        check_run_models(named, new=new)

    async def execute(self, plan: LadderPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_ladder

        return await run_ladder(plan, folder, progress=progress)
