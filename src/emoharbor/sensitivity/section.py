"""A sensitivity run's section of ``emoharbor report``: a heat map (scorer x bad reply) of how often
each scorer prefers the real reply, and the run's health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.health import units_section
from ..report.html import Cell, esc, heat, note, table
from ..scoring.values import usage_text
from ..stats.bootstrap import MIN_N, TOO_SMALL, too_small
from .names import ALL
from .render import pct

if TYPE_CHECKING:
    from ..run_view import RunView


def _share(c: dict[str, Any], *, interval: bool = False) -> tuple[str, str]:
    """A share as a cell: the percentage, coloured from red (the bad reply wins) through white (chance) to
    green (the real reply wins), its ties and unscored pairs on hover; with ``interval`` its bootstrap
    interval and ties shown; under ``MIN_N`` cases uncoloured, "n too small"."""
    n = f" <small>n={c['n']}</small>"
    hover = f'title="ties {c["ties"]}, unscored {c["unscored"]}"'
    ties = f" <small>ties {c['ties']}</small>" if interval else ""
    if c["share"] is None:
        return f'<span class="na" data-sort="">n/a</span>{n}', hover
    shown = f'<span data-sort="{c["share"]:.6f}">{pct(c["share"])}%</span>'
    if too_small(c["n"]):
        return f'{shown} <small class="small-n">{TOO_SMALL}</small>{n}{ties}', hover
    ci = f" <small>[{pct(c['lo'])}, {pct(c['hi'])}]</small>" if interval and c["lo"] is not None else ""
    return shown + ci + n + ties, f"{heat(c['share'] - 0.5, 0.5)} {hover}"


def sensitivity_html(data: dict[str, Any], rid: str) -> str:
    makers = data["kinds"]
    header = ["scorer", *[esc(k) for k in makers], f"{ALL} [95% interval]", "ties", "pairs", "unscored",
              "distinct values", "calls, model time"]  # fmt: skip
    rows: list[list[Cell]] = []
    for r in data["rows"]:
        name = esc(r["scorer"]) + (" <small>(pairwise)</small>" if r["pairwise"] else "")
        tie = "-" if r["tie_rate"] is None else f'<span data-sort="{r["tie_rate"]:.6f}">{pct(r["tie_rate"])}%</span>'
        rows.append([name, *[_share(r["cells"][k]) for k in makers], _share(r[ALL], interval=True), tie,
                     str(r["pairs"]), str(r[ALL]["unscored"]), "-" if r["distinct"] is None else str(r["distinct"]),
                     esc(usage_text(r["usage"]))])  # fmt: skip
    src = ", ".join(f"{n} {s}" for s, n in sorted(data["sources"].items())) or "none"
    parts = [
        f"<p>{data['cases']} cases ({esc(src)}); simulated user <b>{esc(data['user_model'] or '(none)')}</b>; "
        f"suite <code>{esc(data['suite'])}</code>; model time so far {data['wall_s']:.0f} s.</p>",
        '<p class="hint">For each scorer and bad reply: the share of cases where the real reply scores '
        "above the rule-made bad one (ties count half; a pairwise judge whose two orders disagree is a tie). "
        "Green: the scorer prefers the real reply; white: chance (50%); red: it prefers the bad one. "
        f"{esc(ALL)}: the mean over every pair, with a bootstrap 95% interval resampling cases; under {MIN_N} "
        f"cases no interval and no colour ({TOO_SMALL}). The word count needs no model: a scorer no better "
        "than it on a padded bad reply (generic_long, dismissive_long) reads length, not support.</p>",
    ]
    if not data["rows"]:
        return "".join(parts) + note("no scorer has scored a reply yet")
    parts.append(table(header, rows, tid=f"{rid}-sensitivity", cls="sensitivity"))
    return "".join(parts)


def section_html(view: RunView, rid: str) -> str:
    return units_section(view, rid, "Does each scorer prefer the real reply?", sensitivity_html, "sensitivity")
