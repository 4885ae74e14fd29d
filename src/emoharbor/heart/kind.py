"""HEART's kinds of run (``kinds.py``): a HEART run (``emoharbor heart generate|import-rated``: its checks and
its first stage, its report section and its tidy table) and a strategy check (``emoharbor heart
strategy-check``: named in messages only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..kinds import Rows, RunKind, Summary

if TYPE_CHECKING:
    from ..report.runs import RunView
    from ..store.run_store import RunStore
    from .plan import HeartPlan


class HeartKind(RunKind):
    name = "heart"
    title = "a HEART run"
    not_units = ("history", "load_report", "stage", "human_judgment", "human_import")

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from ..report.heart_section import heart_html
        from ..report.html import note

        return note(
            "A HEART run (human and model replies compared pairwise), not an EmoHarbor run: its ratings are shown "
            "below."
        ) + heart_html(view.folder)

    def tidy(self, store: RunStore) -> Rows:
        from ..results import heart_rows

        return heart_rows(store)

    def check(self, plan: HeartPlan, *, new: bool) -> None:
        """The plan read the run's files (histories, prompts, strategy and lexicon files, cards); every model
        can be built, and for a new run (``new``) the candidates' endpoints are reached."""
        from ..preflight import check_named_models, check_reach

        check_named_models(plan.models(), plan.where)
        if new:
            check_reach(plan.cfg.candidates)

    async def execute(self, plan: HeartPlan, folder: Path, *, progress: bool = True) -> Summary:
        """The run's first stage: its histories kept and every competitor's candidate written (imported)."""
        from .stages.pipeline import generate_run

        done = await generate_run(folder, plan, progress=progress)
        return Summary("candidate", done["units"], done["done_now"], done["candidates_by_status"].get("error", 0),
                       lead=f"{done['histories']} histories, ")  # fmt: skip


class StrategyCheckKind(RunKind):
    name = "heart_strategy_check"
    title = "a strategy check (emoharbor heart strategy-check)"
    not_units = ("stage",)
