"""A ladder run's section of ``emoharbor report``: each scorer against the known order, the goals, the spread of
the judges' ratings, and the run's health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.health import units_section
from ..report.html import esc, note, table
from .render import goal_rows, scorer_rows

if TYPE_CHECKING:
    from ..run_view import RunView


def ladder_html(data: dict[str, Any], rid: str) -> str:
    parts = [f"<p>The <b>{esc(data['user_agent'])}</b> user on <b>{esc(data['user_model'])}</b>; known order, best "
             f"first: <b>{esc(' > '.join(data['rungs']))}</b>; {data['profiles']} profiles. Intervals: 95%, "
             "resampling profiles.</p>"]  # fmt: skip
    if not data["rows"]:
        return parts[0] + note("no talk has been finished yet")
    head, rows = scorer_rows(data)
    parts.append(table(head, [[esc(c) for c in r] for r in rows], tid=f"{rid}-ladder", cls="ladder"))
    goals = [[esc(c) if i < 2 else (f"<b>{esc(c)}</b>" if c == "not met" else esc(c)) for i, c in enumerate(r)]
             for r in goal_rows(data)]  # fmt: skip
    parts.append("<h4>Goals</h4>" + table(["goal", "figure", "verdict"], goals, tid=f"{rid}-ladder-goals"))
    return "".join(parts)


def section_html(view: RunView, rid: str) -> str:
    return units_section(view, rid, "Ladder: supporters of known quality, in order?", ladder_html, "ladder")
