"""Small HTML helpers: escaping, tables (sortable by the inline script), number formatting."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def num(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def est(e: dict[str, Any], digits: int = 2, value_key: str = "mean") -> str:
    """An estimate with its interval and n as HTML: ``3.10 [2.80, 3.40] n=12``; sorts by the estimate."""
    v = e.get(value_key)
    if v is None:
        return f'<span class="na" data-sort="">n/a</span> <small>n={e.get("n", 0)}</small>'
    ci = f" <small>[{e['lo']:.{digits}f}, {e['hi']:.{digits}f}]</small>" if e.get("lo") is not None else ""
    return f'<span data-sort="{v:.6f}">{v:.{digits}f}</span>{ci} <small>n={e.get("n", 0)}</small>'


Cell = str | tuple[str, str]  # HTML, or (HTML, extra attributes for the <td>)


def table(
    header: list[str], rows: Sequence[Sequence[Cell]], *, sortable: bool = True, cls: str = "", tid: str = ""
) -> str:
    """A table of already-escaped HTML cells; a sortable one sorts by a cell's ``data-sort`` value if it has one."""
    classes = " ".join(c for c in ["data", "sortable" if sortable else "", cls] if c)
    ident = f' id="{esc(tid)}"' if tid else ""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for r in rows:
        tds = []
        for c in r:
            if isinstance(c, tuple):
                tds.append(f"<td {c[1]}>{c[0]}</td>")
            else:
                tds.append(f"<td>{c}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table class="{classes}"{ident}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def dict_rows_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return '<p class="note">(none)</p>'
    cols = columns or list(rows[0])
    return table([esc(c) for c in cols], [[_plain(r.get(c)) for c in cols] for r in rows])


def _plain(v: Any) -> str:
    if v is None:
        return '<span class="na">n/a</span>'
    if isinstance(v, float):
        return f'<span data-sort="{v:.6f}">{v:.3f}</span>'
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
