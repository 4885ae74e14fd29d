"""The EmoHarbor run (``emoharbor run``) as a kind of run (``kinds.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from ..models.spec import ModelSpec
    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .plan import Plan


class EmoharborKind(RunKind):
    name = "emoharbor"
    title = "an EmoHarbor run (emoharbor run)"

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        """The leaderboard by ``judge`` (None: the simulated user's if the run has it, else its first judge):
        rendered, and its data. A judge the run never used, or a scoring its card does not give, is refused
        rather than shown as a table of n/a."""
        import json

        from ..assess.leaderboard import RunResults, leaderboard
        from ..assess.render import render
        from ..errors import EmoharborError

        cards: dict[str, Any] = json.loads(store.meta().get("judges", "{}"))
        if judge is None:
            judge = "user" if "user" in cards or not cards else next(iter(cards))
        try:
            data = leaderboard(RunResults.read(store), judge, seed=seed, scoring=scoring, baseline=baseline)
        except ValueError as e:
            raise EmoharborError(f"{store.folder}: {e}") from None
        known = sorted(set(cards) | set(data["judges"]))
        if known and judge not in known:
            raise EmoharborError(f"{store.folder}: no judge '{judge}' in this run; its judges: {', '.join(known)}")
        if scoring == "expected" and judge in cards and cards[judge].get("scoring") != "expected":
            raise EmoharborError(
                f"{store.folder}: judge '{judge}' has no probability-weighted scores (its card's scoring is "
                f"{cards[judge].get('scoring')}): use --scoring argmax, or a card with scoring: expected"
            )
        return render(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from .section import load_view

        load_view(store, view, seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid, seed)

    def side_by_side(self, view: RunView) -> list[list[Any]]:
        from .section import side_by_side

        return side_by_side(view)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """Its judge cards' assessments: judgments and cost (the figures are validate's)."""
        import json

        from ..report.judges_table import judged_rows

        judged_rows(store, "assessment", -1, json.loads(store.meta().get("judges", "{}")), rows)

    async def rejudge(self, run_dir: Path, cards: list[str], judge: ModelSpec | None, *,
                      scoring: str | None = None, progress: bool = True) -> int:  # fmt: skip
        from .run import rejudge

        return await rejudge(run_dir, cards, judge, scoring=scoring, progress=progress)

    def tidy(self, store: RunStore) -> Rows:
        """One row per assessment and dimension of its conversations (``results.assessment_rows``)."""
        from ..results import conversation_rows

        return conversation_rows(store)

    def check(self, plan: Plan, *, new: bool) -> None:
        from .plan import check_plan

        check_plan(plan, reach=new)

    async def execute(self, plan: Plan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_evaluation

        return await run_evaluation(plan, folder, progress=progress)
