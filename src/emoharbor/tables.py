"""Result tables and numbers as text, one way for every command and the HTML report: a header and rows as an
aligned plain-text table, a Markdown table or CSV (a table with no rows as one line saying why); a number; an
estimate with its 95% interval."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

NA = "n/a"  # a missing number
RESUME = "run the command that started this run again to resume it"  # what to run when no unit is finished yet


def num(v: float | str | None, digits: int = 2, *, signed: bool = False) -> str:
    """``3.20``; ``+0.25`` with ``signed``; ``n/a`` for None; a string (``"inf"`` in JSON-safe data) as it is."""
    if v is None:
        return NA
    if isinstance(v, str):
        return v
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def bounds(lo: float | str | None, hi: float | str | None, digits: int = 2, *, signed: bool = False) -> str:
    """An interval alone, ``[2.90, 3.50]`` (``[-0.10, +0.20]`` with ``signed``); "" when it has no bounds."""
    if lo is None or hi is None:
        return ""
    return f"[{num(lo, digits, signed=signed)}, {num(hi, digits, signed=signed)}]"


def interval(est: float | str | None, lo: float | str | None, hi: float | str | None, digits: int = 2, na: str = NA,
             *, signed: bool = False) -> str:  # fmt: skip
    """An estimate with its interval, ``3.20 [2.90, 3.50]`` (a margin ``+0.10 [-0.00, +0.20]`` with
    ``signed``); the estimate alone without bounds; ``na`` without an estimate."""
    if est is None:
        return na
    ci = bounds(lo, hi, digits, signed=signed)
    shown = num(est, digits, signed=signed)
    return f"{shown} {ci}" if ci else shown


def cell(v: Any) -> str:
    """A table cell of any kind: floats to 3 decimals (1 from 100 up), None as n/a, anything else as str()."""
    if isinstance(v, float):
        return num(v, 1 if abs(v) >= 100 else 3)
    return NA if v is None else str(v)


def nothing_measured(why: str) -> str:
    """The one line a table with nothing in it is printed as: ``why`` says what is missing and what to run."""
    return f"Nothing measured: {why}."


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], empty: str = "") -> str:
    """A Markdown table; cells go through `cell`. With ``empty`` (why there is nothing), no rows are the one
    line of `nothing_measured`, not a bare header."""
    if empty and not rows:
        return nothing_measured(empty)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows])


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], md: bool = False, empty: str = "") -> str:
    """An aligned plain-text table (a dashed line under the header, no trailing spaces), or with ``md`` a
    Markdown one; cells go through `cell`. With ``empty``, no rows are one line saying why (`nothing_measured`)."""
    if empty and not rows:
        return nothing_measured(empty)
    if md:
        return md_table(header, rows)
    cells = [list(header), *[[cell(c) for c in r] for r in rows]]
    widths = [max(len(x) for x in col) for col in zip(*cells, strict=True)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def csv_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with "\\n" line ends; values as the csv module writes them (None as an empty field)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def render_data(data: dict[str, Any], fmt: str, csv_rows: Any, to_text: Any) -> str:
    """A result table's data in ``fmt``: json as it is, csv from ``csv_rows(data)`` (dict rows), text or md
    from ``to_text(data, md=...)``."""
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True)
    if fmt == "csv":
        rows = csv_rows(data)
        head = list(rows[0]) if rows else ["scorer"]
        return csv_table(head, [[r[h] for h in head] for r in rows]).rstrip("\n")
    return str(to_text(data, md=fmt == "md"))
