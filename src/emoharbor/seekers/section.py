"""A seekers run's section of ``emoharbor report``: how well each scorer agrees with the seekers' own ratings of
each reply (with its margin over the best baseline), and the run's health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.health import units_section
from ..report.html import Cell, esc, est, heat, note, table
from ..scoring.values import usage_text

if TYPE_CHECKING:
    from ..run_view import RunView


def _cell(c: dict[str, Any] | None, verdict: str = "") -> Cell:
    if c is None:
        return "-"
    shown = est(c, value_key="value")
    if verdict in ("yes", "below"):
        return shown, heat(c["value"], 0.5)
    return shown


def _row(r: dict[str, Any]) -> list[Cell]:
    name = esc(r["scorer"]) + (" <small>(baseline)</small>" if r["baseline"] else "")
    return [name, _cell(r["rho"]), _cell(r.get("rho_margin"), r.get("rho_beats", "")), _cell(r["pairs"]),
            _cell(r.get("pairs_margin"), r.get("pairs_beats", "")), str(r["unscored"])]  # fmt: skip


def seekers_html(data: dict[str, Any], rid: str) -> str:
    header = ["scorer", "rho vs rating", "minus best baseline", "pairs agree", "minus best baseline",
              "unscored", "calls, model time"]  # fmt: skip
    rows = [[*_row(r), esc(usage_text(r["usage"]))] for r in data["rows"]]
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
    for part in data.get("by_source", []):
        src_rows = [_row(r) for r in part["rows"]]
        parts.append(f"<p>On <b>{esc(part['source'])}</b> alone: {part['points']} points, {part['pairs']} "
                     "within-talk pairs (its talks resampled).</p>")  # fmt: skip
        parts.append(table(header[:-1], src_rows, tid=f"{rid}-seekers-{esc(part['source'])}", cls="seekers"))
    return "".join(parts)


def section_html(view: RunView, rid: str) -> str:
    return units_section(view, rid, "Agreement with the seekers' own ratings of each reply", seekers_html, "seekers")
