"""The seekers run (``emoharbor seekers``) as a kind of run (``kinds.py``): ``emoharbor leaderboard`` and
``report --format`` print its table, ``emoharbor report`` shows it, ``emoharbor export`` writes the table and
one row per point (``seekers``, ``seekers_points``); ``emoharbor judges`` reads its rows
(``report/judges_table.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import Rows, RunKind, Summary

if TYPE_CHECKING:
    from ..report.html import Cell
    from ..report.runs import RunView
    from ..store.run_store import RunStore
    from .run import SeekersPlan


def _cell(c: dict[str, Any] | None, verdict: str = "") -> Cell:
    from ..report.html import est, heat

    if c is None:
        return "-"
    shown = est(c, value_key="value")
    if verdict in ("yes", "below"):
        return shown, heat(c["value"], 0.5)
    return shown


def seekers_html(data: dict[str, Any], rid: str) -> str:
    from ..report.html import esc, note, table
    from ..sensitivity.render import usage_text

    header = ["scorer", "rho vs rating", "minus best baseline", "pairs agree", "minus best baseline",
              "unscored", "calls, model time"]  # fmt: skip
    rows: list[list[Cell]] = []
    for r in data["rows"]:
        name = esc(r["scorer"]) + (" <small>(baseline)</small>" if r["baseline"] else "")
        rows.append([name, _cell(r["rho"]), _cell(r.get("rho_margin"), r.get("rho_beats", "")), _cell(r["pairs"]),
                     _cell(r.get("pairs_margin"), r.get("pairs_beats", "")), str(r["unscored"]),
                     esc(usage_text(r["usage"]))])  # fmt: skip
    src = ", ".join(f"{n} {esc(s)}" for s, n in data["sources"].items()) or "none"
    left = f"; {data['unfinished']} points not finished yet are left out" if data["unfinished"] else ""
    parts = [
        f"<p>{data['points']} rated reply blocks in {data['talks']} talks ({src}{left}); {data['pairs']} within-talk "
        f"pairs with different ratings; simulated user <b>{esc(data['user_model'] or '(none)')}</b>; model time so "
        f"far {data['wall_s']:.0f} s.</p>",
        '<p class="hint">Each point is a reply block a help-seeker rated (1-5) during the talk. rho: Spearman with '
        "the rating over every point; pairs agree: the share of pairs of points of one talk with different "
        "ratings that the scorer orders as the seeker did (a tie counts half; 0.5 is chance). Intervals: 95%, "
        "resampling talks. Minus best baseline: the figure minus the best of the baselines that need no model "
        "(the block's words, its position in the talk, the seeker's words it echoes) on the same points and "
        "resamples; coloured where its interval lies wholly above (green) or below (red) 0.</p>",
    ]
    if not data["rows"] or not data["points"]:
        return "".join(parts) + note("no point has been scored by every scorer yet")
    parts.append(table(header, rows, tid=f"{rid}-seekers", cls="seekers"))
    return "".join(parts)


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

        view.analysis = seekers_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from ..report.health import units_health
        from ..report.html import note, section

        if view.analysis is None:
            return note("This seekers run could not be read.")
        return section("Agreement with the seekers' own ratings of each reply", seekers_html(view.analysis, rid),
                       level=3) + section("Run health", units_health(view), level=3)  # fmt: skip

    def export(self, store: RunStore) -> dict[str, Rows]:
        """``seekers``: the table as ``--format csv``; ``seekers_points``: one row per point, every value."""
        from .analysis import point_rows, seekers_table
        from .render import csv_rows

        return {"seekers": csv_rows(seekers_table(store)), "seekers_points": point_rows(store)}

    def check(self, plan: SeekersPlan, *, new: bool) -> None:
        """The plan read the files and the judges' cards; a new run's models are built and reached."""
        from ..preflight import check_scorers

        if new:
            user = ("--user-model", plan.opts.user) if plan.opts.user else None
            check_scorers(user, [(j.card.name, j.model) for j in plan.judges])

    async def execute(self, plan: SeekersPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_seekers

        return await run_seekers(plan, folder, progress=progress)
