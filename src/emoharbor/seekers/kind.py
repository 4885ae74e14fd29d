"""The seekers run (``emoharbor seekers``) as a kind of run (``kinds.py``): ``emoharbor leaderboard`` and
``report --format`` print its table, ``emoharbor report`` shows it (``section.py``), ``emoharbor export`` writes
the table and one row per point (``seekers``, ``seekers_points``); ``emoharbor judges`` shows each judge's
agreement with the seekers' ratings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .run import SeekersPlan


def agreement(r: dict[str, Any]) -> str:
    """The cell of ``emoharbor judges``: rho and the within-talk pairwise agreement, each with whether it beats
    the best baseline."""
    from ..report.judges_table import interval_text

    if r.get("seekers_rho") is None:
        return "-"
    beats = r["seekers_beats"]
    return (f"rho {interval_text(r['seekers_rho'])} (beats baselines: {beats['rho']}); pairs "
            f"{interval_text(r['seekers_pairs'])} (beats baselines: {beats['pairs']})")  # fmt: skip


class SeekersKind(RunKind):
    name = "seekers"
    title = "a seekers run (emoharbor seekers)"

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        from .analysis import seekers_table
        from .render import render_seekers

        data = seekers_table(store, seed=seed)
        return render_seekers(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from .analysis import seekers_table

        view.data = seekers_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """How well each judge agrees with the seekers' own ratings of single replies: rho and the within-talk
        pairwise agreement, with whether each beats the best baseline; the simulated user's reward is the judge
        "user". From the run with the most points."""
        from ..report.judges_table import cell
        from ..scoring.judges import scorer_rows
        from .analysis import seekers_table

        data = seekers_table(store, by_file=False)
        for row, r in scorer_rows(store, ("score",), data["rows"], rows, "seekers", data["points"]):
            beats = {"rho": r["rho_beats"], "pairs": r["pairs_beats"]}
            row.update(seekers_run=str(folder), seekers_n=data["points"], seekers_rho=cell(r["rho"]),
                       seekers_pairs=cell(r["pairs"]), seekers_beats=beats)  # fmt: skip

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        return [("agrees with the seekers", agreement)]

    def export(self, store: RunStore) -> dict[str, Rows]:
        """``seekers``: the table as ``--format csv``; ``seekers_points``: one row per point, every value."""
        from .analysis import point_rows, seekers_table
        from .render import csv_rows

        return {"seekers": csv_rows(seekers_table(store)), "seekers_points": point_rows(store)}

    def check(self, plan: SeekersPlan, *, new: bool) -> None:
        """The plan read the files and the judges' cards; the models are built, and reached for a new run."""
        from ..preflight import check_run_models, scorer_models

        check_run_models(scorer_models(plan.opts.user, [(j.card.name, j.model) for j in plan.judges]), new=new)

    async def execute(self, plan: SeekersPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_seekers

        return await run_seekers(plan, folder, progress=progress)
