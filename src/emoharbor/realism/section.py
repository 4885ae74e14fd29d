"""A realism run's section of ``emoharbor report``: the simulated seeker's messages beside real seekers', each
figure with its goal and verdict, an example or two, and the run's health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.health import units_section
from ..report.html import esc, note, table
from .render import HEAD, next_rows, next_text, whole_text

if TYPE_CHECKING:
    from ..run_view import RunView


def _table(rows: list[list[str]], tid: str) -> str:
    cells = [[esc(c) if i < 5 else (f"<b>{esc(c)}</b>" if c == "not met" else esc(c)) for i, c in enumerate(r)]
             for r in rows]  # fmt: skip
    return table(HEAD, cells, tid=tid, cls="realism")


def realism_html(data: dict[str, Any], rid: str) -> str:
    n = data["next"]
    parts = [f"<p>The <b>{esc(data['user_agent'])}</b> user on <b>{esc(data['user_model'])}</b>; model time so far "
             f"{data['wall_s']:.0f} s. Intervals: 95%, resampling talks.</p>"]  # fmt: skip
    lines = next_text(n, md=False)
    parts.append(f"<h4>Next message</h4><p>{esc(lines[0])}.</p>")
    if n["rows"]:
        parts.append(_table(next_rows(n), f"{rid}-realism-next"))
        parts += [f'<p class="hint">{esc(x)}</p>' for x in lines[2:]]
        examples = "".join(f"<li>simulated: {esc(e['sim'])}<br>the real seeker: {esc(e['real'])}</li>"
                           for e in n["examples"][:3])  # fmt: skip
        parts.append(f"<h4>Examples</h4><ul>{examples}</ul>")
    elif n["planned"]:
        parts.append(note("no cut has been finished yet"))
    whole = whole_text(data["whole"], md=False)
    if whole:
        parts.append("<h4>Whole talks</h4>" + "".join(f"<pre>{esc(x)}</pre>" for x in whole[1:]))
    return "".join(parts)


def section_html(view: RunView, rid: str) -> str:
    return units_section(view, rid, "Realism: the simulated seeker beside real seekers", realism_html, "realism")
