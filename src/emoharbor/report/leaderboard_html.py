"""The leaderboard with the paired differences, the dimension and difference charts and the emotion-intensity
trajectories of an EmoHarbor run, as HTML."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..assess.dimensions import dimensions, keys
from ..assess.leaderboard import LENGTH
from ..assess.render import GROUP_MEANS, NOT_IN_HOLM
from ..simulate.conversation import Conversation
from ..stats.bootstrap import MIN_N, bootstrap_ci
from ..tables import num
from .html import Cell, color, esc, est, side_of_zero, table
from .svg import Dots, Series, forest, intervals, trajectories


def summary_table(board: dict[str, Any], tid: str = "") -> str:
    header = ["supporter", "conversations", "scored", "unscored", "overall", "generic", "personal",
              "gap (generic - personal)", "intensity change (end - start)", "words a message"]  # fmt: skip
    rows = [[esc(r["supporter"]), str(r["conversations"]), str(r["scored"]), str(r["unscored"]),
             *[est(r[k]) for k in ("overall", "generic", "personal", "gap")], est(r["intensity_change"], 1),
             est(r[LENGTH], 1)]
            for r in board["rows"]]  # fmt: skip
    return table(header, rows, tid=tid, cls="leaderboard")


def dimension_table(board: dict[str, Any]) -> str:
    groups = {d.key: d.group for d in dimensions()}
    header = ["dimension", "group", *[esc(r["supporter"]) for r in board["rows"]]]
    rows = [[esc(k), esc(groups[k]), *[est(r["dimensions"][k]) for r in board["rows"]]] for k in keys()]
    return table(header, rows, cls="dims")


def _names(board: dict[str, Any]) -> list[str]:
    """The rows of a board's charts and difference tables: its dimensions, then the group means."""
    return [*board.get("dimension_keys", keys()), *GROUP_MEANS]


def colours(boards: dict[str, dict[str, Any]]) -> dict[str, str]:
    """One colour per supporter for every chart of a run, in the user-judge's order (as the trajectories)."""
    board: dict[str, Any] = boards.get("user") or next(iter(boards.values()), {"rows": []})
    return {r["supporter"]: color(i) for i, r in enumerate(board["rows"])}


def difference_table(cells: dict[str, dict[str, Any]], names: list[str], tid: str = "") -> str:
    """One supporter minus the baseline, a row per score: pairs, the mean difference [95% interval] (green: the
    interval lies above 0, red: below; nothing coloured and no interval under ``MIN_N`` pairs), P(difference >
    0) and Holm's p across the dimensions ("-" for the group means and the words, which are not in that family)."""
    rows: list[list[Cell]] = []
    for d in names:
        if d not in cells:
            continue
        c = cells[d]
        side = side_of_zero(c)
        diff: Cell = (est(c, with_n=False), f'class="{side}"') if side else est(c, with_n=False)
        holm = "-" if d in NOT_IN_HOLM else num(c.get("p_holm"), 3)
        rows.append([esc(d), str(c["n"]), diff, num(c.get("p_above_0")), holm])
    header = ["score", "pairs", "difference [95% interval]", "P(difference &gt; 0)", "p (Holm)"]
    return table(header, rows, tid=tid, cls="differences")


def differences_html(board: dict[str, Any], run_id: str, palette: dict[str, str]) -> str:
    """Each supporter minus the baseline on the same profiles and repeats: a table each and one forest plot."""
    diffs: dict[str, dict[str, dict[str, Any]]] = board.get("differences") or {}
    if not diffs:
        return ""
    base, judge = board["baseline"], board["judge"]
    names = _names(board)
    parts = [
        f"<h4>Paired differences: each supporter minus {esc(base)}</h4>",
        '<p class="hint">The same profiles and repeats on both sides; the mean difference with a paired bootstrap '
        "95% interval over the pairs. Green: the interval lies above 0 (better than the baseline), red: below. "
        f"Under {MIN_N} pairs there is no interval (n too small) and nothing is coloured. p (Holm) is adjusted "
        "across the dimensions; the group means are not in that family.</p>",
    ]
    series = []
    for i, (sup, cells) in enumerate(diffs.items()):
        parts.append(f"<h4>{esc(sup)} minus {esc(base)}</h4>")
        parts.append(difference_table(cells, [*names, LENGTH], tid=f"{run_id}-diff-{judge}-{sup}"))
        series.append(Dots(sup, palette.get(sup, color(i)), [cells.get(d, {}) for d in names]))
    chart = forest(
        names,
        series,
        title=f"Each supporter minus {base}, {judge} judge: mean difference and 95% interval",
        split=len(names) - len(GROUP_MEANS),
        note=f"right of the line at 0: better than {base}; a dot without a whisker: under {MIN_N} pairs.",
    )
    parts.append(f'<div class="charts">{chart}</div>')
    return "".join(parts)


def leaderboard_html(boards: dict[str, dict[str, Any]], run_id: str) -> str:
    parts = []
    palette = colours(boards)
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
            "start: below 0 is relief. Words a message: the supporter's mean length, beside every score (a judge "
            f"that rewards length shows it). Under {MIN_N} values: the mean alone (n too small).</p>"
        )
        parts.append(summary_table(board, tid=f"{run_id}-lb-{judge}"))
        parts.append("<details open><summary>Every dimension</summary>" + dimension_table(board) + "</details>")
        parts.append(differences_html(board, run_id, palette))
    return "".join(parts)


def dimension_chart(board: dict[str, Any], palette: dict[str, str]) -> str:
    """Every supporter's mean and 95% interval per dimension and group mean, on one 1-5 axis."""
    names = _names(board)
    series = []
    for i, r in enumerate(board["rows"]):
        cells = {**r["dimensions"], **{g: r[g] for g in GROUP_MEANS}}
        series.append(Dots(r["supporter"], palette.get(r["supporter"], color(i)), [cells.get(d, {}) for d in names]))
    return intervals(
        names,
        series,
        title=f"Every supporter per dimension, {board['judge']} judge: mean and 95% interval",
        x_label="score (1-5)",
        y_label="dimension, then the group means",
        x_ticks=[1, 2, 3, 4, 5],
        split=len(names) - len(GROUP_MEANS),
        note=f"a dot without a whisker: under {MIN_N} scored conversations (n too small).",
    )


def dimensions_html(boards: dict[str, dict[str, Any]]) -> str:
    """The dimension chart of every judge that scored something."""
    palette = colours(boards)
    charts = [dimension_chart(b, palette) for b in boards.values() if b["rows"]]
    return f'<div class="charts">{"".join(charts)}</div>' if charts else '<p class="note">nothing scored yet</p>'


def series_for(name: str, colour: str, convs: list[Conversation], seed: int = 0) -> Series:
    lines = [(c.id, [s.intensity for s in c.states]) for c in convs if c.states]
    longest = max((len(v) for _, v in lines), default=0)
    s = Series(name=name, colour=colour, mean=[], lines=lines)
    for t in range(longest):
        e = bootstrap_ci([float(v[t]) for _, v in lines if len(v) > t], seed=seed, n_boot=500)
        s.mean.append(e.value)
        s.lo.append(e.lo)
        s.hi.append(e.hi)
        s.n.append(e.n)
    return s


def trajectories_html(convs: list[Conversation], supporters: list[str], seed: int = 0) -> str:
    series = [
        series_for(sup, color(i), [c for c in convs if c.supporter == sup], seed) for i, sup in enumerate(supporters)
    ]
    means = [replace(s, lines=[]) for s in series]
    parts = [trajectories(means, title="Mean emotion intensity with its 95% band, per supporter")]
    parts += [trajectories([s], title=f"{s.name}: every conversation (thin) and the mean") for s in series]
    return f'<div class="charts">{"".join(parts)}</div>'
