"""An EmoHarbor run's section of ``emoharbor report``: the leaderboard of every judge, the dimensions, the
emotion intensity, the breakdowns by profile attribute, the run's health and the transcripts; and its rows
of the table of several runs side by side (the user-judge's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.breakdowns import breakdowns_html
from ..report.health import health_html
from ..report.html import esc, est, note, section
from ..report.leaderboard_html import dimensions_html, leaderboard_html, trajectories_html
from ..report.runs import by_conversation
from ..report.transcripts import transcripts_html
from ..store.record import user_model

if TYPE_CHECKING:
    from ..run_view import RunView
    from ..store.run_store import RunStore


def load_view(store: RunStore, view: RunView, seed: int) -> None:
    """The conversations, their assessments and profiles, and ``view.data``: every judge's leaderboard."""
    from ..assess.leaderboard import RunResults, leaderboard
    from ..simulate.agents import user_agent
    from . import config_of, stored_profiles

    results = RunResults.read(store)  # read once: the transcripts, the tables and every judge's leaderboard
    view.conversations = results.conversations
    view.assessments = by_conversation(results.assessments)
    view.data = {judge: leaderboard(results, judge, seed=seed) for judge in view.judges or ["user"]}
    cfg = config_of(store)
    if user_agent(cfg.user_agent.agent).reactions:  # the user whose reactions a sensitivity run measures
        view.user_model = user_model(store.config())
        view.user_prompts = dict(store.config().get("prompt_versions") or {})
        view.user_settings = store.config().get("user_agent")
    view.profiles = stored_profiles(store)
    if not view.profiles:
        view.notes.append("this run was made before runs kept their profiles, so there are no breakdowns by profile")


def section_html(view: RunView, rid: str, seed: int) -> str:
    boards: dict[str, dict[str, Any]] = view.data
    user_board = boards.get("user") or next(iter(boards.values()))
    supporters = [r["supporter"] for r in user_board["rows"]]
    parts = [note(n) for n in view.notes]
    parts.append(section("Leaderboard", leaderboard_html(boards, rid), level=3))
    parts.append(section("Dimensions: every supporter on one axis", dimensions_html(boards), level=3))
    parts.append(section("Emotion intensity", trajectories_html(view.conversations, supporters, seed), level=3))
    parts.append(section("Where personalisation fails: by profile attribute", breakdowns_html(view), level=3))
    parts.append(section("Run health", health_html(view), level=3))
    parts.append(section(f"Transcripts ({len(view.conversations)})", transcripts_html(view, rid), level=3))
    return "".join(parts)


def side_by_side(view: RunView) -> list[list[Any]]:
    """Every supporter by the user-judge (none without its leaderboard)."""
    board = view.data.get("user") if view.data else None
    if board is None:
        return []
    return [
        [esc(r["supporter"]), str(r["conversations"]), est(r["overall"]), est(r["generic"]), est(r["personal"]),
         est(r["gap"]), est(r["intensity_change"], 1)]
        for r in board["rows"]
    ]  # fmt: skip
