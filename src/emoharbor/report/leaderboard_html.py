"""The leaderboard, radar charts and emotion-intensity trajectories of an EmoHarbor run, as HTML."""

from __future__ import annotations

from typing import Any

from ..assess.dimensions import dimensions, keys
from ..simulate.conversation import Conversation
from ..stats.bootstrap import bootstrap_ci
from .html import color, esc, est, table
from .svg import Series, radar, trajectories


def summary_table(board: dict[str, Any], tid: str = "") -> str:
    header = [
        "supporter",
        "conversations",
        "scored",
        "unscored",
        "overall",
        "generic",
        "personal",
        "gap (generic - personal)",
        "intensity change (end - start)",
    ]
    rows = [
        [
            esc(r["supporter"]),
            str(r["conversations"]),
            str(r["scored"]),
            str(r["unscored"]),
            est(r["overall"]),
            est(r["generic"]),
            est(r["personal"]),
            est(r["gap"]),
            est(r["intensity_change"], 1),
        ]
        for r in board["rows"]
    ]
    return table(header, rows, tid=tid, cls="leaderboard")


def dimension_table(board: dict[str, Any]) -> str:
    groups = {d.key: d.group for d in dimensions()}
    header = ["dimension", "group", *[esc(r["supporter"]) for r in board["rows"]]]
    rows = [[esc(k), esc(groups[k]), *[est(r["dimensions"][k]) for r in board["rows"]]] for k in keys()]
    return table(header, rows, cls="dims")


def leaderboard_html(boards: dict[str, dict[str, Any]], run_id: str) -> str:
    parts = []
    for judge, board in boards.items():
        if not board["rows"]:
            parts.append('<p class="note">no conversations in this run yet</p>')
            continue
        who = "the simulated user (User-as-a-Judge)" if judge == "user" else judge
        parts.append(f"<h3>Judge: {esc(who)}</h3>")
        parts.append(
            '<p class="hint">mean [95% bootstrap interval] n; scores 1-5; click a column to sort. '
            "The gap is generic minus personal: a large gap is empathy that does not fit the person. "
            "The intensity change is the simulated user's emotion intensity (0-100) at the end minus at the "
            "start: below 0 is relief.</p>"
        )
        parts.append(summary_table(board, tid=f"{run_id}-lb-{judge}"))
        parts.append("<details open><summary>Every dimension</summary>" + dimension_table(board) + "</details>")
    return "".join(parts)


def radars_html(board: dict[str, Any]) -> str:
    charts = []
    for i, r in enumerate(board["rows"]):
        d = r["dimensions"]
        charts.append(
            '<div class="radarbox">'
            + radar(
                keys(),
                [d[k]["mean"] for k in keys()],
                [d[k]["lo"] for k in keys()],
                [d[k]["hi"] for k in keys()],
                colour=color(i),
                title=f"{r['supporter']} ({board['judge']} judge)",
            )
            + f'<div class="cap">{esc(r["supporter"])}: overall {est(r["overall"])}</div></div>'
        )
    return f'<div class="radars">{"".join(charts)}</div>'


def intensity_lines(convs: list[Conversation]) -> list[tuple[str, list[int]]]:
    return [(c.id, [s.intensity for s in c.states]) for c in convs if c.states]


def series_for(name: str, colour: str, convs: list[Conversation], seed: int = 0) -> Series:
    lines = intensity_lines(convs)
    longest = max((len(v) for _, v in lines), default=0)
    s = Series(name=name, colour=colour, mean=[], lines=lines)
    for t in range(longest):
        vals = [float(v[t]) for _, v in lines if len(v) > t]
        e = bootstrap_ci(vals, seed=seed, n_boot=500)
        s.mean.append(e.value)
        s.lo.append(e.lo)
        s.hi.append(e.hi)
        s.n.append(e.n)
    return s


def trajectories_html(convs: list[Conversation], supporters: list[str], seed: int = 0) -> str:
    series = [
        series_for(sup, color(i), [c for c in convs if c.supporter == sup], seed) for i, sup in enumerate(supporters)
    ]
    means = [Series(s.name, s.colour, s.mean, s.lo, s.hi, s.n, []) for s in series]
    parts = [trajectories(means, title="Mean emotion intensity with its 95% band, per supporter")]
    parts += [trajectories([s], title=f"{s.name}: every conversation (thin) and the mean") for s in series]
    return f'<div class="charts">{"".join(parts)}</div>'
