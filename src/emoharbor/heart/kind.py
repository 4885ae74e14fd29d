"""HEART's kinds of run (``kinds.py``): a HEART run (``emoharbor heart generate|import-rated``: its checks and
its first stage, its report section, its rows of ``emoharbor judges`` and its tidy table) and a strategy
check (``emoharbor heart strategy-check``: named in messages only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .plan import HeartPlan


class HeartKind(RunKind):
    name = "heart"
    title = "a HEART run"

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from ..report.html import note
        from .section import heart_html

        return note(
            "A HEART run (human and model replies compared pairwise), not an EmoHarbor run: its ratings are shown "
            "below."
        ) + heart_html(view.folder)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """Its pairwise judges' comparisons (their card versions are in its config), and each one's order
        consistency (the share of pairs whose winner does not flip with the order shown) and length bias (the
        share of decided verdicts won by the longer reply; 0.5 = none)."""
        from ..report.judges_table import judged_rows
        from .analysis.reports import agreement_report, ratings_report
        from .stages.pipeline import read_run

        cards = {j: {"version": v} for j, v in store.config().get("judge_cards", {}).items()}
        judged_rows(store, "comparison", 3, cards, rows)  # a comparison's key: (history, a, b, judge, order)
        own, config, base = read_run(folder)
        try:
            report = ratings_report(own, config, bootstrap=0)["order_consistency"]
            consistency = {r["judge"]: r for r in report if r["dimension"] == "all"}
            bias = {r["rater"]: r for r in agreement_report(own, config, base)["bias"]}
        finally:
            own.close()
        for j in config.judges:
            c, b = consistency.get(j.name), bias.get(j.name)
            rows[(j.name, "argmax")].update(
                heart_run=str(folder),
                order_consistency=c["rate"] if c else None,
                order_pairs=c["pairs"] if c else 0,
                longer_wins=b["longer_wins"] if b else None,
            )

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        from ..report.judges_table import number

        return [
            ("HEART order consistency", lambda r: number(r.get("order_consistency"), ".2f")),
            ("HEART longer wins", lambda r: number(r.get("longer_wins"), ".2f")),
        ]

    def tidy(self, store: RunStore) -> Rows:
        """One row per comparison (history, pair, order, judge) and dimension: the winner and the strength."""
        from ..store import records

        run = store.folder.name
        out = []
        for c in records.comparisons(store):
            base = {"run": run, "history_id": c.history_id, "subset": c.subset, "a": c.a, "b": c.b,
                    "order": c.order, "first": c.first, "judge": c.judge, "status": c.status}  # fmt: skip
            if c.status != "ok":
                out.append({**base, "dimension": None, "winner": None, "strength": None, "strength_expected": None})
                continue
            for dim, v in c.verdicts.items():
                out.append({**base, "dimension": dim, "winner": v.get("winner"), "strength": v.get("strength"),
                            "strength_expected": v.get("strength_expected")})  # fmt: skip
        return out

    def check(self, plan: HeartPlan, *, new: bool) -> None:
        """The plan read the run's files (histories, prompts, strategy and lexicon files, cards); every model
        is built, and for a new run (``new``) the candidates' endpoints are reached (this command writes their
        replies; ``heart judge`` and ``label`` call the others)."""
        from ..preflight import check_run_models

        check_run_models(plan.models(), new=new, where=plan.where, reached=plan.cfg.candidates)

    async def execute(self, plan: HeartPlan, folder: Path, *, progress: bool = True) -> Summary:
        """The run's first stage: its histories kept and every competitor's candidate written (imported)."""
        from .stages.pipeline import generate_run

        done = await generate_run(folder, plan, progress=progress)
        return Summary("candidate", done["units"], done["done_now"], done["candidates_by_status"].get("error", 0),
                       lead=f"{done['histories']} histories, ")  # fmt: skip


class StrategyCheckKind(RunKind):
    name = "heart_strategy_check"
    title = "a strategy check (emoharbor heart strategy-check)"
