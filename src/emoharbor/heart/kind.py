"""HEART's kinds of run (``kinds.py``): a HEART run (``emoharbor heart run``: its report section and its tidy
table) and a strategy check (``emoharbor heart strategy-check``: named in messages only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kinds import Rows, RunKind

if TYPE_CHECKING:
    from ..report.runs import RunView
    from ..store.run_store import RunStore


class HeartKind(RunKind):
    name = "heart"
    title = "a HEART run"

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


class StrategyCheckKind(RunKind):
    name = "heart_strategy_check"
    title = "a strategy check (emoharbor heart strategy-check)"
