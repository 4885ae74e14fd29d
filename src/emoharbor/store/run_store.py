"""The run store: one folder per run, holding a SQLite database (WAL).

Results are kept as (table, key) -> JSON records (the table in the column ``kind``, and a call's or an
event's in ``unit_kind``: the names old runs hold, kept). A unit of work (a conversation, an assessment, a
comparison) is written in one transaction together with the records of the model calls it made,
so a run killed at any moment holds only whole units; started again with the same config it skips
the units it has and does the rest. A different config is refused.

Every call is written the moment it returns, tagged with the unit and the attempt that made it, so a run
killed outright still has every call it paid for. When a unit is done again (it ended on a failed model call,
or the run was killed before the unit was written), the calls of the earlier attempts stay, marked
``superseded``, so the money and retries spent on them still count.
A call served from the cache is marked ``cached`` and carries the cost the original call had: that is
money saved, reported apart from money spent.
"""

from __future__ import annotations

import contextvars
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import EmoharborError, WrongKind
from ..models.base import CallRecord
from .keys import Key, decode_key, encode_key
from .migrate import FORMAT, migrate, transaction

DB_NAME = "run.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (kind, key));
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, role TEXT, model TEXT,
    endpoint TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL,
    latency_s REAL, cached INTEGER, retries INTEGER, error TEXT, superseded INTEGER NOT NULL DEFAULT 0,
    attempt TEXT NOT NULL DEFAULT '', prompt_evaluated INTEGER, prompt_reused INTEGER, prompt_ms REAL,
    generated_ms REAL, prompt TEXT);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, event TEXT, detail TEXT);
"""

SPENT = ("prompt_tokens", "completion_tokens", "cost_usd")  # summed apart over calls to a model and from the cache
# usage_by_role's figures per role, and how each is summed over the calls
USAGE = {"calls": "COUNT(*)", "cached": "SUM(cached)", "superseded": "SUM(superseded)",
         "requests": "SUM(CASE WHEN cached=0 THEN 1 + COALESCE(retries, 0) ELSE 0 END)", "retries": "SUM(retries)",
         "errors": "SUM(CASE WHEN error!='' THEN 1 ELSE 0 END)", "latency_s": "SUM(latency_s)",
         **{k: f"SUM(CASE WHEN cached=0 THEN {k} ELSE 0 END)" for k in SPENT},
         **{f"cached_{k}": f"SUM(CASE WHEN cached=0 THEN 0 ELSE {k} END)" for k in SPENT}}  # fmt: skip
RUN_TABLES = {"meta", "results", "calls", "events", "sqlite_sequence"}

STATUSES = ("ok", "unscored", "error")  # how a unit ended: see store.units


def _read(data: str) -> dict[str, Any]:
    return dict(json.loads(data))


# the unit of work running in this task, as (table, key, attempt): its model calls are tagged with it
unit_attempt: contextvars.ContextVar[tuple[str, Key, str] | None] = contextvars.ContextVar("unit_attempt", default=None)


def config_differences(old: Any, new: Any, most: int = 6) -> list[str]:
    """The dotted paths at which two resolved configs differ (the first ``most``, then "..."), so a refused
    resume can say what changed: a prompt's version, a model, a setting."""

    def walk(a: Any, b: Any, path: str) -> list[str]:
        if isinstance(a, dict) and isinstance(b, dict):
            return [p for k in sorted(set(a) | set(b), key=str) for p in walk(a.get(k), b.get(k), f"{path}{k}.")]
        return [] if a == b else [path.rstrip(".") or "(the whole config)"]

    found = walk(old, new, "")
    return [*found[:most], "..."] if len(found) > most else found


class RunStore:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self.db: sqlite3.Connection | None = None

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def create_or_resume(cls, folder: Path, kind: str, resolved: dict[str, Any], config_hash: str) -> RunStore:
        store = cls(folder)
        userfiles.output_folder(store.folder, "run folder")
        store.folder.mkdir(parents=True, exist_ok=True)
        store._connect(new_ok=True)
        have = store.meta()
        if not have:
            meta = {"kind": kind, "config": json.dumps(resolved, sort_keys=True), "config_hash": config_hash,
                    "created": str(time.time()), "format_version": str(FORMAT), "status": "running"}  # fmt: skip
            with store._tx() as db:
                db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        elif have.get("kind") != kind:
            store.close()
            raise WrongKind(store.folder, str(have.get("kind")), (kind,), ": use another folder")
        elif have.get("config_hash") != config_hash:
            differs = config_differences(json.loads(have.get("config", "{}")), resolved)
            where = f"; it differs in {', '.join(differs)}" if differs else ""
            store.close()
            raise EmoharborError(
                f"{store.folder} was started with a different config (hash {have.get('config_hash')}, "
                f"this one is {config_hash}{where}): resume it with the same config, or give a new run folder"
            )
        else:
            store._note_settings(json.loads(have["config"]), resolved)
        return store

    def _note_settings(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """A resume whose config differs only in settings that change no output (the hash is the same): the
        new config is kept, and what changed goes into the run's ``history``."""
        changed = config_differences(old, new, most=50)
        if not changed:
            return
        history = json.loads(self.meta().get("history", "[]"))
        history.append({"at": time.time(), "changed": changed})
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('config', ?)", (json.dumps(new, sort_keys=True),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('history', ?)", (json.dumps(history),))

    @classmethod
    def open_existing(cls, folder: Path, *kinds: str) -> RunStore:
        """The run in ``folder``; with ``kinds``, it must be a run of one of them."""
        store = cls(folder)
        if not store.path.is_file():
            raise EmoharborError(f"{folder} is not a run folder (no {DB_NAME} in it)")
        store._connect(new_ok=False)
        kind = store.meta()["kind"]
        if kinds and kind not in kinds:
            store.close()
            raise WrongKind(folder, kind, kinds)
        return store

    def _connect(self, *, new_ok: bool) -> None:
        """Open the database. A file that is not SQLite, or holds something other than a run, is refused
        before anything is written to it; ``new_ok``: a database without a run yet becomes a new one."""
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            has_kind = "meta" in tables and self.db.execute("SELECT 1 FROM meta WHERE key='kind'").fetchone()
            if not has_kind and not (new_ok and tables <= RUN_TABLES):
                self.close()
                raise EmoharborError(f"{self.path} holds no emoharbor run: give a run folder, or move that file away")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            if has_kind:
                try:
                    migrate(self.db, self.folder)
                except EmoharborError:
                    self.close()
                    raise
        except sqlite3.DatabaseError as e:
            self.close()
            raise EmoharborError(
                f"{self.path} cannot be read as a run database ({e}): restore it, or give another run folder"
            ) from None

    def _conn(self) -> sqlite3.Connection:
        if self.db is None:
            raise RuntimeError("the run store is closed")
        return self.db

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn())

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- meta ----------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._conn().execute("SELECT key, value FROM meta").fetchall())

    def config(self) -> dict[str, Any]:
        return dict(json.loads(self.meta()["config"]))

    def set_meta(self, key: str, value: str) -> None:
        self._conn().execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- results -------------------------------------------------------------------------
    def put(
        self,
        table: str,
        key: Key,
        data: dict[str, Any],
        *,
        attempt: str | None = None,
        events: list[tuple[str, str]] | None = None,
    ) -> None:
        """Write one finished unit and its events, atomically (its calls are in the store already, tagged with
        ``attempt``; None: calls of no attempt). A unit written again replaces its record and events; the calls
        of its earlier attempts are kept, marked superseded, since they were made (and paid for). A unit's record
        says how it ended in ``status`` (one of ``STATUSES``; the stage runner sees to it, ``store.units``); a
        record a stage keeps beside its units (HEART's histories, a stage's summary, the run's profiles) has
        none: that is how the two are told apart (``unit_tables``)."""
        self.put_many([(table, key, data)], attempt=attempt, events=events)

    def put_many(
        self,
        records: list[tuple[str, Key, dict[str, Any]]],
        *,
        attempt: str | None = None,
        events: list[tuple[str, str]] | None = None,
    ) -> None:
        """``put`` of several records (table, key, data) in one transaction: all of them are stored, or none
        (``events``: of each record)."""
        for table, key, data in records:
            if "status" in data and data["status"] not in STATUSES:
                raise RuntimeError(f"{table} {key}: its record has status {data['status']!r}, not one of {STATUSES}")
        with self._tx() as db:
            for table, key, data in records:
                text = encode_key(key)
                db.execute(
                    "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                    (table, text, json.dumps(data, ensure_ascii=False), time.time()),
                )
                db.execute(
                    "UPDATE calls SET superseded=1 WHERE unit_kind=? AND unit_key=? AND superseded=0 AND attempt!=?",
                    (table, text, attempt or "-"),
                )
                db.execute("DELETE FROM events WHERE unit_kind=? AND unit_key=?", (table, text))
                db.executemany("INSERT INTO events (unit_kind, unit_key, event, detail) VALUES (?,?,?,?)",
                               [(table, text, ev, detail) for ev, detail in events or []])  # fmt: skip

    def record_call(self, c: CallRecord, unit: tuple[str, Key, str] | None = None) -> None:
        """A call as it returns: of the unit attempt ``unit`` (table, key, attempt), or of no unit."""
        table, unit_key, attempt = unit or ("", (), "")
        row = {"unit_kind": table, "unit_key": encode_key(unit_key), **call_row(c), "attempt": attempt}
        with self._tx() as db:
            db.execute(f"INSERT INTO calls ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))

    def has(self, table: str, key: Key) -> bool:
        row = self._conn().execute("SELECT 1 FROM results WHERE kind=? AND key=?", (table, encode_key(key)))
        return row.fetchone() is not None

    def keys(self, table: str) -> set[Key]:
        return {decode_key(r[0]) for r in self._conn().execute("SELECT key FROM results WHERE kind=?", (table,))}

    def get(self, table: str, key: Key) -> dict[str, Any] | None:
        cur = self._conn().execute("SELECT data FROM results WHERE kind=? AND key=?", (table, encode_key(key)))
        row = cur.fetchone()
        return None if row is None else _read(row[0])

    def items(self, table: str) -> Iterator[tuple[Key, dict[str, Any]]]:
        cur = self._conn().execute("SELECT key, data FROM results WHERE kind=? ORDER BY key", (table,))
        for key, data in cur:
            yield decode_key(key), _read(data)

    def field(self, table: str, name: str) -> dict[Key, Any]:
        """One scalar top-level field (``status``, ``termination``...) of every record of ``table``, read by SQLite
        without decoding the records here (None where a record lacks it; a JSON boolean reads as 1 or 0): what
        the stage runner needs to know which units are done, without reading each record again."""
        cur = self._conn().execute(
            "SELECT key, json_extract(data, ?) FROM results WHERE kind=? ORDER BY key", (f"$.{name}", table)
        )
        return {decode_key(k): v for k, v in cur}

    def tables(self) -> list[str]:
        return [r[0] for r in self._conn().execute("SELECT DISTINCT kind FROM results ORDER BY kind")]

    def unit_tables(self) -> list[str]:
        """The tables of records that are units: their records say how they ended (``status``); the records a
        stage keeps beside its units carry none."""
        sql = "SELECT DISTINCT kind FROM results WHERE json_extract(data, '$.status') IS NOT NULL ORDER BY kind"
        return [r[0] for r in self._conn().execute(sql)]

    # -- accounting ----------------------------------------------------------------------
    def usage_by_role(self) -> dict[str, dict[str, float]]:
        """Per role: ``calls`` (every call, those served from the cache and those of superseded attempts
        among them), ``cached`` (calls served from the cache), ``superseded`` (calls of attempts done again),
        ``requests`` (the requests that reached a model: each call not from the cache and its retries),
        ``retries``, ``errors``, ``latency_s``; ``prompt_tokens``, ``completion_tokens`` and ``cost_usd``:
        what was spent (calls that reached a model); ``cached_prompt_tokens``, ``cached_completion_tokens``
        and ``cached_cost_usd``: what came from the cache (the cost the original calls had, saved)."""
        sql = f"SELECT role, {', '.join(USAGE.values())} FROM calls GROUP BY role ORDER BY role"
        rows = self._conn().execute(sql).fetchall()
        return {r[0]: dict(zip(USAGE, (float(x or 0) for x in r[1:]), strict=True)) for r in rows}

    def event_counts(self) -> dict[str, int]:
        rows = self._conn().execute("SELECT event, COUNT(*) FROM events GROUP BY event ORDER BY event")
        return {r[0]: int(r[1]) for r in rows}

    def calls(self) -> list[dict[str, Any]]:
        """Every call as stored, its ``unit_key`` decoded (the unit key's parts; () for no unit)."""
        cur = self._conn().execute("SELECT * FROM calls ORDER BY id")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur]
        return [{**r, "unit_key": decode_key(r["unit_key"])} for r in rows]

    def events(self) -> list[dict[str, Any]]:
        cur = self._conn().execute("SELECT unit_kind, unit_key, event, detail FROM events ORDER BY id")
        return [{"unit_kind": k, "unit_key": decode_key(u), "event": e, "detail": d} for k, u, e, d in cur]


def call_sink(store: RunStore | None) -> Any:
    """A sink for model calls: each is written to the store as it returns, tagged with the running unit."""

    def sink(c: CallRecord) -> None:
        if store is not None:
            store.record_call(c, unit_attempt.get())

    return sink


def call_row(c: CallRecord) -> dict[str, Any]:
    """A call as a row of the calls table (its columns but the unit's and the attempt's): what
    ``RunStore.calls`` gives back, and what ``report.timings.by_step`` reads."""
    t = c.timings
    return {"role": c.role, "model": c.model, "endpoint": c.endpoint, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens, "cost_usd": c.cost_usd, "latency_s": c.latency_s,
            "cached": int(c.cached), "retries": c.retries, "error": c.error, "prompt": c.prompt or None,
            "prompt_evaluated": t.prompt_evaluated if t else None, "prompt_reused": t.prompt_reused if t else None,
            "prompt_ms": t.prompt_ms if t else None, "generated_ms": t.generated_ms if t else None}  # fmt: skip
