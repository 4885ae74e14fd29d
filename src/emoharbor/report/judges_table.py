"""`emoharbor judges RUN...`: the table a user reads before choosing a judge, one row per judge and scoring
across the runs given.

Every kind of run that has judges says what they did (``RunKind.judges``: the rows it adds, their figures)
and which columns those fill (``RunKind.judge_columns``, in the order of ``kinds.TABLE``); this module names
no kind. From every run: judgments made, the unscored share, and tokens and seconds per judgment (seconds
from the calls that reached a model, not the cache), counted by ``counts`` and ``add``; a kind's figures
come from its own analysis (agreement with real help-seekers, order consistency, preference for the real
reply, ...: see each kind's ``judges``). Where a judge is in several runs of a kind, the run with the most
units gives that kind's figures (named in the row).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .. import kinds
from ..kinds import JudgeRows
from ..store import records
from ..store.keys import Key
from ..store.run_store import RunStore

# what ``counts`` counts per judge, from nothing: judgments and unscored ones are whole, the cost is not
ZERO: dict[str, float] = {"judgments": 0, "unscored": 0, "tokens": 0.0, "seconds": 0.0, "model_calls": 0.0,
                          "timed": 0.0}  # fmt: skip


def counts(
    store: RunStore, unit_tables: Iterable[str], judge_at: int, field: str = "judge"
) -> dict[str, dict[str, float]]:
    """Per judge (the unit's ``field``, and the part ``judge_at`` of its calls' unit keys): its judgments (the
    units of ``unit_tables``), the unscored ones, and the tokens, model seconds, model calls and timed
    judgments (those whose calls reached a model) of their calls."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict(ZERO))
    for table in unit_tables:
        for _, d in store.items(table):
            u = out[d[field]]
            u["judgments"] += 1
            u["unscored"] += d.get("status") != "ok"
        timed: dict[str, set[Key]] = defaultdict(set)
        for c in records.calls(store):
            if c.table != table or not c.unit:
                continue
            judge = c.unit[judge_at]
            u = out[judge]
            u["tokens"] += c.tokens
            if not c.cached:
                u["seconds"] += c.latency_s
                u["model_calls"] += 1
                timed[judge].add(c.unit)
        for judge, keys in timed.items():
            out[judge]["timed"] += len(keys)
    return out


def add(rows: JudgeRows, judge: str, scoring: str, card: dict[str, Any], counted: dict[str, float]) -> dict[str, Any]:
    """The row of (``judge``, ``scoring``), its card's version and what it sees set by the first run that has
    it, the ``counted`` judgments and cost (``counts``) added in."""
    row = rows[(judge, scoring)]
    row.setdefault("judge", judge)
    row.setdefault("scoring", scoring)
    row.setdefault("card", card.get("version", ""))
    row.setdefault("sees", card.get("sees", ""))
    for k, zero in ZERO.items():
        row[k] = row.get(k, zero) + counted.get(k, zero)
    return row


def judged_rows(store: RunStore, table: str, judge_at: int, cards: dict[str, Any], rows: JudgeRows) -> None:
    """The rows of a run whose units of ``table`` are each one judge's: a row per judge and scoring its
    card gives (argmax, and expected for a card with ``scoring: expected``)."""
    for judge, counted in counts(store, [table], judge_at).items():
        if not counted["judgments"]:
            continue
        card = cards.get(judge, {})
        for scoring in ["argmax", "expected"] if card.get("scoring") == "expected" else ["argmax"]:
            add(rows, judge, scoring, card, counted)


def takes(row: dict[str, Any], suite: str, n: int) -> bool:
    """Whether ``row`` takes a suite's figures from a run of ``n`` units: it holds none from a run with as many
    (``<suite>_n``). Where a judge is in several runs of a suite, the run with the most units gives them."""
    return n > int(row.get(f"{suite}_n", -1))


def cell(c: dict[str, Any] | None) -> dict[str, Any] | None:
    """A figure with its interval, as a row keeps it."""
    return None if c is None else {k: c.get(k) for k in ("value", "lo", "hi", "n")}


def judges_table(folders: list[Path]) -> list[dict[str, Any]]:
    rows: JudgeRows = defaultdict(dict)
    for folder in folders:
        store = RunStore.open_existing(folder)
        try:
            kind = kinds.having(store.meta().get("kind", ""), "judges")
            if kind is not None:
                kind.judges(store, folder, rows)
        finally:
            store.close()
    out = []
    for (judge, scoring), row in sorted(rows.items()):
        if "judgments" not in row:
            continue
        n, timed = row["judgments"], row["timed"]
        out.append({**row, "judge": judge, "scoring": scoring, "unscored_rate": row["unscored"] / n if n else None,
                    "tokens_per_judgment": row["tokens"] / n if n else None,
                    # model time of the judgments that reached a model (those served from the cache took none)
                    "seconds_per_judgment": row["seconds"] / timed if timed else None})  # fmt: skip
    return out


def interval_text(c: dict[str, Any] | None) -> str:
    if not c or c.get("value") is None:
        return "-"
    if c.get("lo") is None:
        return f"{c['value']:.2f} (n={c['n']})"
    return f"{c['value']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}] n={c['n']}"


def number(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


Column = tuple[str, Callable[[dict[str, Any]], str]]
FIRST: list[Column] = [
    ("judge", lambda r: r["judge"]),
    ("scoring", lambda r: r["scoring"]),
    ("sees", lambda r: r.get("sees") or "-"),
]
LAST: list[Column] = [
    ("judgments", lambda r: str(r["judgments"])),
    ("unscored", lambda r: number(r["unscored_rate"], ".0%")),
    ("tokens / judgment", lambda r: number(r["tokens_per_judgment"], ".0f")),
    ("seconds / judgment", lambda r: number(r["seconds_per_judgment"], ".1f")),
    ("card", lambda r: r.get("card") or "-"),
]


def columns() -> list[Column]:
    """Every column: the judge's, each kind's (in the table of kinds' order), the counts."""
    own = [c for name in kinds.with_part("judges") for c in kinds.of(name).judge_columns()]
    return [*FIRST, *own, *LAST]


def header() -> list[str]:
    return [name for name, _ in columns()]


def table_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    shown = columns()
    return [[cell_of(r) for _, cell_of in shown] for r in rows]


def notes() -> str:
    """What the kinds say about reading their columns, one after the other."""
    return " ".join(n for n in (kinds.of(k).judges_note for k in kinds.with_part("judges")) if n)
