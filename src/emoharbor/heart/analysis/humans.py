"""Human pairwise judgments, imported from CSV or JSON lines.

One row per (history, pair, rater, dimension):

    history_id, competitor_a, competitor_b, rater, dimension, winner[, strength][, rationale][, first_shown]

``dimension`` is a HEART dimension key (``empathic_responsiveness``; its name "Empathic responsiveness"
is accepted too) or ``overall``; ``winner`` is competitor_a's name, competitor_b's name, or ``tie``;
``strength`` 1-5 (optional); ``first_shown`` the competitor whose reply the rater saw first (optional,
for position bias). Bad rows are skipped and counted with the reason, never guessed at.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import userfiles
from ...errors import DataError
from ...store.keys import Key
from ..dimensions import DIMENSIONS, OVERALL
from ..histories import Skips

REQUIRED = ("history_id", "competitor_a", "competitor_b", "rater", "dimension", "winner")


@dataclass
class ImportReport(Skips):
    source: str
    rows: int = 0
    imported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


def dimension_key(value: str) -> str | None:
    k = value.strip().lower().replace("-", "_").replace(" ", "_")
    return k if k in DIMENSIONS or k == OVERALL else None


def _rows(path: Path) -> list[tuple[str, Any]]:
    text = userfiles.read_text(path, "human judgments file", DataError)
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [f for f in REQUIRED if f not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: the header lacks the columns {missing} (needs {', '.join(REQUIRED)})")
        return [(f"row {i + 2}", r) for i, r in enumerate(reader)]
    out: list[tuple[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((f"line {n}", json.loads(line)))
            except json.JSONDecodeError as e:
                out.append((f"line {n}", ValueError(f"not valid JSON ({e.msg})")))
    return out


def _one(rec: Any, histories: set[str], competitors: list[str]) -> dict[str, Any]:
    """A validated row, oriented like the run's pairs (competitors in run order); ValueError(reason, detail)."""
    if isinstance(rec, ValueError):
        raise ValueError("bad_json", str(rec))
    if not isinstance(rec, dict):
        raise ValueError("not_an_object", "the row is not an object")
    vals = {k: str(rec.get(k) if rec.get(k) is not None else "").strip() for k in (*REQUIRED, "first_shown")}
    empty = [k for k in REQUIRED if not vals[k]]
    if empty:
        raise ValueError("missing_field", f"fields {empty} are empty")
    a, b, winner = vals["competitor_a"], vals["competitor_b"], vals["winner"]
    dim = dimension_key(vals["dimension"])
    if dim is None:
        raise ValueError("unknown_dimension", f"field 'dimension': {vals['dimension']!r} is not a HEART dimension")
    if a == b:
        raise ValueError("same_competitors", f"competitor_a and competitor_b are both {a!r}")
    if winner.lower() == "tie":
        winner = "tie"
    elif winner not in (a, b):
        raise ValueError("bad_winner", f"field 'winner': {winner!r} is neither {a!r}, {b!r} nor 'tie'")
    if vals["history_id"] not in histories:
        raise ValueError("unknown_history", f"history {vals['history_id']!r} is not in this run")
    unknown = [c for c in (a, b) if c not in competitors]
    if unknown:
        raise ValueError("unknown_competitor", f"{unknown} are not competitors of this run")
    strength = rec.get("strength")
    if strength not in (None, ""):
        try:
            strength = int(str(strength))
        except ValueError:
            strength = 0
        if not 1 <= strength <= 5:
            raise ValueError("bad_strength", f"field 'strength': {rec.get('strength')!r} is not 1-5")
    if competitors.index(a) > competitors.index(b):
        a, b = b, a
    first = vals["first_shown"]
    if first and first not in (a, b):
        raise ValueError("bad_first_shown", f"field 'first_shown': {first!r} is neither competitor")
    return {
        "history_id": vals["history_id"],
        "a": a,
        "b": b,
        "rater": vals["rater"],
        "dimension": dim,
        "winner": winner,
        "strength": strength or None,
        "rationale": str(rec.get("rationale") or "").strip(),
        "first_shown": first or None,
    }


def read_human_judgments(
    path: Path, histories: set[str], competitors: list[str]
) -> tuple[list[dict[str, Any]], ImportReport]:
    report = ImportReport(source=str(path))
    out: dict[Key, dict[str, Any]] = {}
    for where, rec in _rows(path):
        report.rows += 1
        try:
            row = _one(rec, histories, competitors)
        except ValueError as e:
            reason, detail = e.args if len(e.args) == 2 else ("bad_row", str(e))
            report.skip(where, str(reason), str(detail))
            continue
        key = human_key(row)
        if key in out:
            report.skip(where, "duplicate", f"{' '.join(key)} was rated before in this file; the later row is kept")
        out[key] = row
    report.imported = len(out)
    return list(out.values()), report


def human_key(row: dict[str, Any]) -> Key:
    return (str(row["history_id"]), str(row["a"]), str(row["b"]), str(row["rater"]), str(row["dimension"]))
