"""Small HTML helpers: escaping, tables (sortable by the inline script), number formatting."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from ..stats.bootstrap import TOO_SMALL, too_small
from ..tables import NA, bounds, cell, num

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def est(e: dict[str, Any], digits: int = 2, value_key: str = "mean", *, with_n: bool = True) -> str:
    """An estimate with its interval and n as HTML: ``3.10 [2.80, 3.40] n=12``; under ``MIN_N`` values the
    estimate alone, ``3.10 n too small n=3``; sorts by the estimate. ``digits``: 2 for 1-5 scores, 1 for
    intensity."""
    v, n = e.get(value_key), f" <small>n={e.get('n', 0)}</small>" if with_n else ""
    if v is None:
        return f'<span class="na" data-sort="">{NA}</span>{n}'
    shown = f'<span data-sort="{v:.6f}">{num(v, digits)}</span>'
    if too_small(e.get("n")):
        return f'{shown} <small class="small-n">{TOO_SMALL}</small>{n}'
    ci = bounds(e.get("lo"), e.get("hi"), digits)
    return shown + (f" <small>{ci}</small>" if ci else "") + n


def side_of_zero(e: dict[str, Any]) -> str:
    """ "above" or "below" for an interval that lies wholly above or below 0, else "" (also under ``MIN_N``)."""
    lo, hi = e.get("lo"), e.get("hi")
    if too_small(e.get("n")) or lo is None or hi is None:
        return ""
    return "above" if lo > 0 else "below" if hi < 0 else ""


Cell = str | tuple[str, str]  # HTML, or (HTML, extra attributes for the <td>)


def table(
    header: list[str], rows: Sequence[Sequence[Cell]], *, sortable: bool = True, cls: str = "", tid: str = ""
) -> str:
    """A table of already-escaped HTML cells; a sortable one sorts by a cell's ``data-sort`` value if it has one."""
    classes = " ".join(c for c in ["data", "sortable" if sortable else "", cls] if c)
    ident = f' id="{esc(tid)}"' if tid else ""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td {c[1]}>{c[0]}</td>" if isinstance(c, tuple) else f"<td>{c}</td>" for c in r) + "</tr>"
        for r in rows
    )
    return f'<table class="{classes}"{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def dict_rows_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return '<p class="note">(none)</p>'
    cols = columns or list(rows[0])
    return table([esc(c) for c in cols], [[plain(r.get(c)) for c in cols] for r in rows])


def plain(v: Any) -> str:
    """A value of any kind as a cell, formatted as in the commands' tables (`tables.cell`)."""
    if v is None:
        return f'<span class="na">{NA}</span>'
    if isinstance(v, float):
        return f'<span data-sort="{v:.6f}">{cell(v)}</span>'
    return esc(v)


def section(title: str, body: str, *, sid: str = "", level: int = 2) -> str:
    ident = f' id="{esc(sid)}"' if sid else ""
    return f"<section{ident}><h{level}>{esc(title)}</h{level}>{body}</section>"


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def heat(delta: float | None, scale: float = 1.0) -> str:
    """A background colour for a difference: red below zero, green above, white near zero."""
    if delta is None:
        return ""
    a = max(-1.0, min(1.0, delta / scale))
    rgb = (255, int(255 * (1 + a)), int(255 * (1 + a))) if a < 0 else (int(255 * (1 - a)), 255, int(255 * (1 - a)))
    return f'style="background: rgba({rgb[0]},{rgb[1]},{rgb[2]},0.55)"'
