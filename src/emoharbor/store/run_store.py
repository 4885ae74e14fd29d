"""The run store: one folder per run, holding a SQLite database (WAL).

Results are kept as (kind, key) -> JSON records. A unit of work (a conversation, an assessment, a
comparison) is written in one transaction together with the records of the model calls it made,
so a run killed at any moment holds only whole units; started again with the same config it skips
the units it has and does the rest. A different config is refused.

Every call a unit made is kept, also when the unit is done again (it ended on a failed model call): the
calls of the earlier attempt stay, marked ``superseded``, so the money and retries spent on it still count.
A call served from the cache is marked ``cached`` and carries the cost the original call had: that is
money saved, reported apart from money spent.
"""

from __future__ import annotations

import contextvars
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import EmoharborError
from ..models.base import CallRecord

DB_NAME = "run.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (kind, key));
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, role TEXT, model TEXT,
    endpoint TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL,
    latency_s REAL, cached INTEGER, retries INTEGER, error TEXT, superseded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT, unit_key TEXT, event TEXT, detail TEXT);
"""

USAGE_COLUMNS = (
    "calls",
    "cached",
    "superseded",
    "requests",
    "retries",
    "errors",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached_prompt_tokens",
    "cached_completion_tokens",
    "cached_cost_usd",
)
RUN_TABLES = {"meta", "results", "calls", "events", "sqlite_sequence"}
KIND_NAMES = {
    "emoharbor": "an EmoHarbor run (emoharbor run)",
    "validate": "a validate run",
    "heart": "a HEART run",
    "heart_strategy_check": "a strategy check (emoharbor heart strategy-check)",
    "evolve_refine": "an evolve refine round",
}

# the model calls made by the unit of work running in this task
unit_calls: contextvars.ContextVar[list[CallRecord] | None] = contextvars.ContextVar("unit_calls", default=None)


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
            with store._tx() as db:
                for k, v in {
                    "kind": kind,
                    "config": json.dumps(resolved, sort_keys=True),
                    "config_hash": config_hash,
                    "created": str(time.time()),
                    "status": "running",
                }.items():
                    db.execute("INSERT INTO meta VALUES (?, ?)", (k, v))
        elif have.get("kind") != kind:
            store.close()
            raise EmoharborError(
                f"{store.folder} holds a '{have.get('kind')}' run, not a '{kind}' run: use another folder"
            )
        elif have.get("config_hash") != config_hash:
            differs = config_differences(json.loads(have.get("config", "{}")), resolved)
            where = f"; it differs in {', '.join(differs)}" if differs else ""
            store.close()
            raise EmoharborError(
                f"{store.folder} was started with a different config (hash {have.get('config_hash')}, "
                f"this one is {config_hash}{where}): resume it with the same config, or give a new run folder"
            )
        return store

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
            wanted = " or ".join(KIND_NAMES.get(k, f"a '{k}' run") for k in kinds)
            raise EmoharborError(f"{folder} holds {KIND_NAMES.get(kind, f'a {kind!r} run')}, not {wanted}")
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
            have = {r[1] for r in self.db.execute("PRAGMA table_info(calls)")}
            if "superseded" not in have:  # a run database from before superseded attempts were kept
                self.db.execute("ALTER TABLE calls ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0")
        except sqlite3.DatabaseError as e:
            self.close()
            raise EmoharborError(
                f"{self.path} cannot be read as a run database ({e}): restore it, or give another run folder"
            ) from None

    def _conn(self) -> sqlite3.Connection:
        if self.db is None:
            raise RuntimeError("the run store is closed")
        return self.db

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, et: Any, e: Any, tb: Any) -> None:
            self.db.execute("COMMIT" if et is None else "ROLLBACK")

    def _tx(self) -> RunStore._Tx:
        return RunStore._Tx(self._conn())

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
        kind: str,
        key: str,
        data: dict[str, Any],
        *,
        calls: list[CallRecord] | None = None,
        events: list[tuple[str, str]] | None = None,
    ) -> None:
        """Write one finished unit, its calls and its events, atomically. A unit written again (done again
        after a failed model call) replaces its record and events; the calls of the earlier attempt are kept,
        marked superseded, since they were made (and paid for)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                (kind, key, json.dumps(data, ensure_ascii=False), time.time()),
            )
            db.execute("UPDATE calls SET superseded=1 WHERE unit_kind=? AND unit_key=? AND superseded=0", (kind, key))
            db.execute("DELETE FROM events WHERE unit_kind=? AND unit_key=?", (kind, key))
            for c in calls or []:
                self._insert_call(db, c, kind, key)
            for ev, detail in events or []:
                db.execute(
                    "INSERT INTO events (unit_kind, unit_key, event, detail) VALUES (?,?,?,?)", (kind, key, ev, detail)
                )

    def record_call(self, c: CallRecord) -> None:
        """A call outside any unit of work: written at once."""
        with self._tx() as db:
            self._insert_call(db, c, "", "")

    @staticmethod
    def _insert_call(db: sqlite3.Connection, c: CallRecord, kind: str, key: str) -> None:
        db.execute(
            "INSERT INTO calls (unit_kind, unit_key, role, model, endpoint, prompt_tokens, completion_tokens,"
            " cost_usd, latency_s, cached, retries, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                kind,
                key,
                c.role,
                c.model,
                c.endpoint,
                c.prompt_tokens,
                c.completion_tokens,
                c.cost_usd,
                c.latency_s,
                int(c.cached),
                c.retries,
                c.error,
            ),
        )

    def has(self, kind: str, key: str) -> bool:
        row = self._conn().execute("SELECT 1 FROM results WHERE kind=? AND key=?", (kind, key)).fetchone()
        return row is not None

    def keys(self, kind: str) -> set[str]:
        return {r[0] for r in self._conn().execute("SELECT key FROM results WHERE kind=?", (kind,))}

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT data FROM results WHERE kind=? AND key=?", (kind, key)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def items(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        cur = self._conn().execute("SELECT key, data FROM results WHERE kind=? ORDER BY key", (kind,))
        for key, data in cur:
            yield key, json.loads(data)

    def kinds(self) -> list[str]:
        return [r[0] for r in self._conn().execute("SELECT DISTINCT kind FROM results ORDER BY kind")]

    # -- accounting ----------------------------------------------------------------------
    def usage_by_role(self) -> dict[str, dict[str, float]]:
        """Per role: ``calls`` (every call, those served from the cache and those of superseded attempts
        among them), ``cached`` (calls served from the cache), ``superseded`` (calls of attempts done again),
        ``requests`` (the requests that reached a model: each call not from the cache and its retries),
        ``retries``, ``errors``, ``latency_s``; ``prompt_tokens``, ``completion_tokens`` and ``cost_usd``:
        what was spent (calls that reached a model); ``cached_prompt_tokens``, ``cached_completion_tokens``
        and ``cached_cost_usd``: what came from the cache (the cost the original calls had, saved)."""
        rows = (
            self._conn()
            .execute(
                "SELECT role, COUNT(*), SUM(cached), SUM(superseded),"
                " SUM(CASE WHEN cached=0 THEN 1 + COALESCE(retries, 0) ELSE 0 END), SUM(retries),"
                " SUM(CASE WHEN error!='' THEN 1 ELSE 0 END), SUM(latency_s),"
                " SUM(CASE WHEN cached=0 THEN prompt_tokens ELSE 0 END),"
                " SUM(CASE WHEN cached=0 THEN completion_tokens ELSE 0 END),"
                " SUM(CASE WHEN cached=0 THEN cost_usd ELSE 0 END),"
                " SUM(CASE WHEN cached=0 THEN 0 ELSE prompt_tokens END),"
                " SUM(CASE WHEN cached=0 THEN 0 ELSE completion_tokens END),"
                " SUM(CASE WHEN cached=0 THEN 0 ELSE cost_usd END)"
                " FROM calls GROUP BY role ORDER BY role"
            )
            .fetchall()
        )
        cols = USAGE_COLUMNS
        return {r[0]: dict(zip(cols, (float(x or 0) for x in r[1:]), strict=True)) for r in rows}

    def event_counts(self) -> dict[str, int]:
        rows = self._conn().execute("SELECT event, COUNT(*) FROM events GROUP BY event ORDER BY event")
        return {r[0]: int(r[1]) for r in rows}

    def calls(self) -> list[dict[str, Any]]:
        cur = self._conn().execute("SELECT * FROM calls ORDER BY id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def events(self) -> list[dict[str, Any]]:
        cur = self._conn().execute("SELECT unit_kind, unit_key, event, detail FROM events ORDER BY id")
        return [dict(zip(["unit_kind", "unit_key", "event", "detail"], r, strict=True)) for r in cur]


def call_sink(store: RunStore | None) -> Any:
    """A sink for model calls: into the running unit's list if there is one, else straight to the store."""

    def sink(c: CallRecord) -> None:
        pending = unit_calls.get()
        if pending is not None:
            pending.append(c)
        elif store is not None:
            store.record_call(c)

    return sink


def call_dict(c: CallRecord) -> dict[str, Any]:
    return asdict(c)
