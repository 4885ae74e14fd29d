"""Bringing a run store up to the format this code writes (``FORMAT``), once, when it is opened.

A store says its format in ``meta.format_version``; one without it is format 1. A store of an older format is
rewritten in one transaction, so a store is never half migrated; one newer than this code, or older than
``OLDEST``, is refused with a message naming the folder and both versions. After this, reading a record only
decodes it: nothing is guessed.

Format 1 -> 2:
- a unit record's status, which format 1 guessed on every read from what the record held (a conversation
  that ended on a failed model call is an ``error``, output that did not parse ``unscored``, HEART's missing
  replies and unlabelled messages, evolve's dropped contexts...), is written into the record (the records a
  run kind kept beside its units, ``FORMAT1_NOT_UNITS``, get none);
- a key's parts, joined with "|" (which names could not hold), become a JSON array, in the results and in
  the unit keys of the calls and events;
- the calls get the columns added since the first run stores (``superseded``, ``attempt``).

Format 2 -> 3:
- the calls get the server's own timings (``prompt_evaluated``, ``prompt_reused``, ``prompt_ms``,
  ``generated_ms``: llama.cpp's ``timings``) and the prompt file each was made from (``prompt``), NULL for
  the calls made before: nobody recorded them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from .keys import encode_key

# The run format this code writes, and the oldest it brings up to date. Format 1 (no ``format_version``)
# joined a key's parts with "|" and left a unit's status to be guessed on every read; format 2 keys are JSON
# arrays (``store.keys``), and every unit record carries its status; format 3 calls carry the server's timings.
FORMAT = 3
OLDEST = 1


def format_of(db: sqlite3.Connection, folder: Path) -> int:
    row = db.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
    if row is None:
        return 1
    try:
        return int(row[0])
    except ValueError:
        raise EmoharborError(f"{folder}: its run format {row[0]!r} is not a number: restore the run folder") from None


def migrate(db: sqlite3.Connection, folder: Path) -> None:
    """Bring the run store ``db`` (of ``folder``) to ``FORMAT``, in one transaction; refuse a newer or too old one."""
    have = format_of(db, folder)
    if have > FORMAT:
        raise EmoharborError(
            f"{folder} holds a run of format {have}, newer than this emoharbor reads (format {FORMAT}): "
            "use the emoharbor that wrote it, or a newer one"
        )
    if have < OLDEST:
        raise EmoharborError(
            f"{folder} holds a run of format {have}, older than this emoharbor can bring up to date (format "
            f"{OLDEST} to {FORMAT}): read it with an older emoharbor, or run it again"
        )
    if have == FORMAT:
        return
    with transaction(db):
        now = format_of(db, folder)  # another process may have migrated it while this one waited
        if now == 1:
            _from_format1(db)
        if now <= 2:
            _add_columns(db, TIMING_COLUMNS)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('format_version', ?)", (str(FORMAT),))


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``db`` in one immediate transaction: committed, or rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# The records each run kind kept beside its units in format 1 (written by a stage itself, not by the stage
# runner: they carry no status). These are facts of format 1, kept with its migration, so bringing an old store
# up to date does not depend on the run kinds this code has today.
FORMAT1_NOT_UNITS: dict[str, frozenset[str]] = {
    "emoharbor": frozenset({"profile"}),
    "heart": frozenset({"history", "load_report", "stage", "human_judgment", "human_import"}),
    "heart_strategy_check": frozenset({"stage"}),
    "evolve_refine": frozenset({"stage"}),
}


def status_format1(record: dict[str, Any]) -> str:
    """How a format-1 unit ended, read by what it holds where it carries no status (as format 1 read it)."""
    status = record.get("status")
    if status in ("ok", "unscored", "error"):
        return str(status)
    if record.get("termination") == "error":
        return "error" if any(ev[0] == "model_error" for ev in record.get("events", [])) else "unscored"
    if record.get("unscored"):
        return "error" if record.get("attempts") == 0 and record.get("error") else "unscored"
    if status == "dropped":
        return "error" if record.get("reason") == "model_error" else "unscored"
    return "unscored" if status in ("missing", "empty", "unlabelled", "no_sentences") else "ok"  # scored, kept


def key_format1(text: str) -> str:
    """A format-1 key ("|"-joined parts; "" for none) as format 2 writes it."""
    return encode_key(tuple(text.split("|"))) if text else ""


TIMING_COLUMNS = {"prompt_evaluated": "INTEGER", "prompt_reused": "INTEGER", "prompt_ms": "REAL",
                  "generated_ms": "REAL", "prompt": "TEXT"}  # fmt: skip


def _add_columns(db: sqlite3.Connection, columns: dict[str, str]) -> None:
    """Add to the calls table those of ``columns`` (name: SQL type) it lacks."""
    have = {r[1] for r in db.execute("PRAGMA table_info(calls)")}
    for name, sql_type in columns.items():
        if name not in have:
            db.execute(f"ALTER TABLE calls ADD COLUMN {name} {sql_type}")


def _from_format1(db: sqlite3.Connection) -> None:
    _add_columns(db, {"superseded": "INTEGER NOT NULL DEFAULT 0", "attempt": "TEXT NOT NULL DEFAULT ''"})
    run_kind = db.execute("SELECT value FROM meta WHERE key='kind'").fetchone()[0]
    plain = FORMAT1_NOT_UNITS.get(str(run_kind), frozenset())
    rows = db.execute("SELECT kind, key, data, created FROM results").fetchall()
    db.execute("DELETE FROM results")
    for k, key, data, created in rows:
        record = json.loads(data)
        if k not in plain:
            record["status"] = status_format1(record)
        db.execute(
            "INSERT INTO results VALUES (?, ?, ?, ?)",
            (k, key_format1(key), json.dumps(record, ensure_ascii=False), created),
        )
    for table in ("calls", "events"):
        for rowid, key in db.execute(f"SELECT id, unit_key FROM {table}").fetchall():
            db.execute(f"UPDATE {table} SET unit_key=? WHERE id=?", (key_format1(key or ""), rowid))
