"""The validate run (``emoharbor validate``) as a kind of run (``kinds.py``): its checks and run, its
validation table, its report section and its export tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import Rows, RunKind, Summary

if TYPE_CHECKING:
    from ..models.spec import ModelSpec
    from ..report.runs import RunView
    from ..store.run_store import RunStore
    from .run import ValidatePlan


class ValidateKind(RunKind):
    name = "validate"
    title = "a validate run"

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        """The validation table (every judge and scoring): rendered, and its data."""
        from .analysis import validation_table
        from .render import render_validation

        table = validation_table(store, seed=seed)
        return render_validation(table, fmt), table

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from ..profiles.schema import Profile
        from ..report.runs import by_conversation
        from ..simulate.conversation import Conversation
        from ..store.records import assessments
        from .analysis import score_rows, validation_table

        records = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
        view.conversations = [Conversation.model_validate(d) for d in records.values()]
        view.assessments = by_conversation(assessments(store))
        view.extras = {k: d["esconv"] for k, d in records.items()}
        view.profiles = {d["profile_id"]: Profile.model_validate(d["profile"]) for d in records.values()}
        view.validation = validation_table(store, seed=seed)
        view.validation_scores = score_rows(store)
        lived = [d["chain_prompts"] for d in records.values() if d.get("perceived") and d.get("chain_prompts")]
        if lived:  # replayed through the chain: the user whose reactions a sensitivity run measures
            view.user_model = (store.config().get("user") or {}).get("model")
            view.user_prompts = dict(lived[0])

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from ..report.health import health_html
        from ..report.html import section
        from ..report.leaderboard_html import trajectories_html
        from ..report.other_sections import validation_html, validation_scatters
        from ..report.transcripts import transcripts_html
        from .replay import SUPPORTER

        assert view.validation is not None
        scatters = validation_scatters(view.validation_scores, seed)
        intensity = trajectories_html(view.conversations, [SUPPORTER], seed)
        return "".join([
            section("Agreement with real help-seekers", validation_html(view.validation, rid), level=3),
            section("Judge scores against the seekers' ratings", scatters, level=3),
            section("Simulated intensity while hearing the real supporter", intensity, level=3),
            section("Run health", health_html(view), level=3),
            section(f"Replayed conversations ({len(view.conversations)})", transcripts_html(view, rid), level=3),
        ])  # fmt: skip

    def export(self, store: RunStore) -> dict[str, Rows]:
        from .analysis import export_tables

        return export_tables(store)

    async def rejudge(self, run_dir: Path, cards: list[str], judge: ModelSpec | None, *,
                      scoring: str | None = None, progress: bool = True) -> int:  # fmt: skip
        from .run import rejudge

        return await rejudge(run_dir, cards, judge, scoring=scoring, progress=progress)

    def tidy(self, store: RunStore) -> Rows:
        from ..results import validate_rows

        return validate_rows(store)

    def check(self, plan: ValidatePlan, *, new: bool) -> None:
        """The plan read the user's files and the judges' cards; a new run's models are built and reached."""
        from ..preflight import check_scorers

        if new:
            check_scorers(
                ("--model", plan.opts.user) if plan.chain else None, [(j.card.name, j.model) for j in plan.judges]
            )

    async def execute(self, plan: ValidatePlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_validation

        return await run_validation(plan, folder, progress=progress)
