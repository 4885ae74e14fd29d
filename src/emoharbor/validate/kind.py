"""The validate run (``emoharbor validate``) as a kind of run (``kinds.py``): its checks and run, its
validation table, its report section and its export tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..models.spec import ModelSpec
    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .run import ValidatePlan


class ValidateKind(RunKind):
    name = "validate"
    title = "a validate run"
    judges_note = (
        "A judge whose 'AUROC minus best baseline' interval does not lie above 0 has not shown that it measures "
        "more than what a word count or a similarity score already tells."
    )

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        """The validation table (every judge and scoring): rendered, and its data."""
        from .analysis import validation_table
        from .render import render_validation

        table = validation_table(store, seed=seed)
        return render_validation(table, fmt), table

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from .section import load_view

        load_view(store, view, seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid, seed)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """Its judges' judgments and cost, and the overall score's AUROC (success vs failed) and rho with the
        seeker's empathy, and its AUROC margin over the best baseline: from the run with the most
        conversations."""
        import json

        from ..report.judges_table import cell, judged_rows
        from .analysis import validation_table

        judged_rows(store, "assessment", -1, json.loads(store.meta().get("judges", "{}")), rows)
        data = validation_table(store)
        margins = {(r["judge"].removesuffix(" - best baseline"), r["score"], r["scoring"]): r for r in data["margins"]}
        n_convs = data["counts"]["conversations"]
        for r in data["rows"]:
            if r["score"] != "overall" or not r.get("scoring"):
                continue
            row = rows[(r["judge"], r["scoring"])]
            if row.get("validate_n", -1) >= n_convs:
                continue
            m = margins.get((r["judge"], "overall", r["scoring"]))
            row.update(
                validate_run=str(folder),
                validate_n=n_convs,
                auroc=cell(r["cells"]["not_failed"]),
                rho_empathy=cell(r["cells"]["empathy"]),
                auroc_margin=cell(m["cells"]["not_failed"]) if m else None,
            )

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        from ..report.judges_table import interval_text

        return [
            ("AUROC success vs failed", lambda r: interval_text(r.get("auroc"))),
            ("rho vs seeker empathy", lambda r: interval_text(r.get("rho_empathy"))),
            ("AUROC minus best baseline", lambda r: interval_text(r.get("auroc_margin"))),
        ]

    def export(self, store: RunStore) -> dict[str, Rows]:
        from .analysis import export_tables

        return export_tables(store)

    async def rejudge(self, run_dir: Path, cards: list[str], judge: ModelSpec | None, *,
                      scoring: str | None = None, progress: bool = True) -> int:  # fmt: skip
        from .run import rejudge

        return await rejudge(run_dir, cards, judge, scoring=scoring, progress=progress)

    def tidy(self, store: RunStore) -> Rows:
        """One row per assessment and dimension of its replays (``results.assessment_rows``)."""
        from ..profiles.schema import Profile
        from ..results import assessment_rows

        replays = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
        profiles = {
            str(d["profile_id"]): Profile.model_validate(d["profile"]) for d in replays.values() if "profile" in d
        }
        return assessment_rows(store, replays, profiles)

    def check(self, plan: ValidatePlan, *, new: bool) -> None:
        """The plan read the user's files and the judges' cards; the models are built, and reached for a new
        run."""
        from ..preflight import check_run_models, scorer_models

        user = plan.opts.user if plan.chain else None
        check_run_models(scorer_models(user, [(j.card.name, j.model) for j in plan.judges]), new=new)

    async def execute(self, plan: ValidatePlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_validation

        return await run_validation(plan, folder, progress=progress)
