"""The study store: one SQLite file (WAL) in the study folder.

Tables: ``items`` (random ids; ``content`` is what raters see, blinded; ``source`` where it came from,
never shown to raters; ``expect`` the known answer of an attention check), ``raters`` (personal tokens
stored only as sha256), ``assignments`` (rater x item: the rater's queue position, which reply is shown
as A, open or submitted), ``answers`` (one value per rater, item and form field, revisable until the
item is submitted) and ``answer_log`` (every saved value, with its time).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..store import migrate

DB_NAME = "study.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, attention INTEGER NOT NULL,
    content TEXT NOT NULL, source TEXT NOT NULL, expect TEXT);
CREATE TABLE IF NOT EXISTS raters (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_hash TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS assignments (
    rater_id TEXT NOT NULL, item_id TEXT NOT NULL, position INTEGER NOT NULL, first TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', opened REAL, submitted REAL,
    PRIMARY KEY (rater_id, item_id), UNIQUE (rater_id, position));
CREATE TABLE IF NOT EXISTS answers (
    rater_id TEXT NOT NULL, item_id TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL,
    updated REAL NOT NULL, revisions INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (rater_id, item_id, field));
CREATE TABLE IF NOT EXISTS answer_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, rater_id TEXT NOT NULL, item_id TEXT NOT NULL,
    field TEXT NOT NULL, value TEXT NOT NULL, first TEXT NOT NULL, time REAL NOT NULL);
"""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(6)}"


@dataclass(frozen=True)
class Item:
    id: str
    rated: str  # "pair" | "conversation": what is rated (the column `kind` in the items table: old studies hold it)
    attention: bool
    content: dict[str, Any]
    source: dict[str, Any]
    expect: dict[str, Any] | None


@dataclass(frozen=True)
class Rater:
    id: str
    name: str


@dataclass(frozen=True)
class Assignment:
    rater_id: str
    item_id: str
    position: int  # 1-based, the rater's own order
    first: str  # "a" | "b": whose reply is shown as A (left)
    status: str  # "open" | "submitted"
    opened: float | None
    submitted: float | None


class Study:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME

    @classmethod
    def create(cls, folder: Path, items: list[Item], meta: dict[str, str]) -> Study:
        study = cls(folder)
        if study.path.exists():
            raise EmoharborError(f"{study.path} already exists: give a new study folder")
        study.folder.mkdir(parents=True, exist_ok=True)
        with study._db() as db:
            db.execute("PRAGMA journal_mode=WAL")  # kept in the file: readers never block the writer
            db.executescript(SCHEMA)
        with study.transaction() as db:
            for k, v in {**meta, "created": str(time.time()), "csrf_secret": secrets.token_hex(32)}.items():
                db.execute("INSERT INTO meta VALUES (?, ?)", (k, v))
            for it in items:
                db.execute(
                    "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)",
                    (it.id, it.rated, int(it.attention), json.dumps(it.content, ensure_ascii=False),
                     json.dumps(it.source, ensure_ascii=False), json.dumps(it.expect) if it.expect else None),
                )  # fmt: skip
        return study

    @classmethod
    def open(cls, folder: Path) -> Study:
        study = cls(folder)
        if not study.path.is_file():
            raise EmoharborError(f"{folder} is not a study folder (no {DB_NAME} in it): run 'emoharbor study create'")
        return study

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._db() as db, migrate.transaction(db):
            yield db

    # -- meta, items, raters -------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        with self._db() as db:
            return dict(db.execute("SELECT key, value FROM meta").fetchall())

    def heart_dimensions(self) -> list[str]:
        return list(json.loads(self.meta().get("heart_dimensions", "[]")))

    def items(self, item_id: str | None = None) -> list[Item]:
        sql = "SELECT id, kind, attention, content, source, expect FROM items"
        with self._db() as db:
            cur = db.execute(f"{sql} WHERE id=?", (item_id,)) if item_id else db.execute(f"{sql} ORDER BY id")
            rows = cur.fetchall()
        return [Item(r[0], r[1], bool(r[2]), json.loads(r[3]), json.loads(r[4]), json.loads(r[5] or "null"))
                for r in rows]  # fmt: skip

    def item(self, item_id: str) -> Item:
        return self.items(item_id)[0]

    def raters(self) -> list[Rater]:
        with self._db() as db:
            return [Rater(*r) for r in db.execute("SELECT id, name FROM raters ORDER BY created, name")]

    def add_raters(self, names: list[str]) -> list[tuple[Rater, str]]:
        """New raters with fresh personal tokens; the tokens are returned once and stored only hashed."""
        taken = {r.name for r in self.raters()}
        clash = sorted(set(names) & taken) or sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise EmoharborError(f"rater names must be unique in the study; already used: {clash}")
        out = []
        with self.transaction() as db:
            for name in names:
                rater, token = Rater(new_id("r"), name), secrets.token_urlsafe(32)
                db.execute("INSERT INTO raters VALUES (?, ?, ?, ?)", (rater.id, name, token_hash(token), time.time()))
                out.append((rater, token))
        return out

    def new_admin_token(self) -> str:
        token = secrets.token_urlsafe(32)
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('admin_token_hash', ?)", (token_hash(token),))
        return token

    def public_urls(self) -> list[str]:
        """The base URLs the raters' links were made with (``study invite --base-url``)."""
        return list(json.loads(self.meta().get("public_urls", "[]")))

    def add_public_url(self, url: str) -> None:
        with self.transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key='public_urls'").fetchone()
            urls = sorted({*json.loads(row[0] if row else "[]"), url})
            db.execute("INSERT OR REPLACE INTO meta VALUES ('public_urls', ?)", (json.dumps(urls),))

    def rater_by_token(self, token: str) -> Rater | None:
        given = token_hash(token)
        with self._db() as db:
            rows = db.execute("SELECT id, name, token_hash FROM raters").fetchall()
        found = None
        for rid, name, stored in rows:  # compare every one, in constant time each
            if hmac.compare_digest(stored, given):
                found = Rater(rid, name)
        return found

    def is_admin(self, token: str) -> bool:
        stored = self.meta().get("admin_token_hash")
        return stored is not None and hmac.compare_digest(stored, token_hash(token))

    def csrf_token(self, rater_id: str) -> str:
        secret = self.meta()["csrf_secret"].encode()
        return hmac.new(secret, f"csrf|{rater_id}".encode(), hashlib.sha256).hexdigest()

    # -- assignments ---------------------------------------------------------------------
    def queue(self, rater_id: str) -> list[Assignment]:
        return self._assignments("WHERE rater_id=? ORDER BY position", rater_id)

    def assignments(self) -> list[Assignment]:
        return self._assignments("ORDER BY rater_id, position")

    def _assignments(self, where: str, *args: str) -> list[Assignment]:
        sql = f"SELECT rater_id, item_id, position, first, status, opened, submitted FROM assignments {where}"
        with self._db() as db:
            return [Assignment(*r) for r in db.execute(sql, args).fetchall()]

    def mark_opened(self, a: Assignment) -> None:
        if a.opened is None:
            with self.transaction() as db:
                db.execute("UPDATE assignments SET opened=? WHERE rater_id=? AND item_id=? AND opened IS NULL",
                           (time.time(), a.rater_id, a.item_id))  # fmt: skip

    # -- answers -------------------------------------------------------------------------
    def answers(self, rater_id: str, item_id: str) -> dict[str, str]:
        with self._db() as db:
            rows = db.execute("SELECT field, value FROM answers WHERE rater_id=? AND item_id=?", (rater_id, item_id))
            return dict(rows.fetchall())

    def all_answers(self) -> list[dict[str, Any]]:
        with self._db() as db:
            cur = db.execute("SELECT rater_id, item_id, field, value, updated, revisions FROM answers")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def save(self, rater_id: str, item_id: str, fields: dict[str, str], *, submit_if: Any = None) -> tuple[bool, Any]:
        """Store ``fields`` at once (one transaction), unless the item is already submitted: (False, None).
        With ``submit_if`` (answers -> list of what is missing), the item is submitted when nothing is
        missing; returns (True, missing)."""
        now = time.time()
        with self.transaction() as db:
            row = db.execute("SELECT status, first FROM assignments WHERE rater_id=? AND item_id=?",
                             (rater_id, item_id)).fetchone()  # fmt: skip
            if row is None or row[0] != "open":
                return False, None
            for field, value in fields.items():
                db.execute(
                    "INSERT INTO answers VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT (rater_id, item_id, field) "
                    "DO UPDATE SET value=excluded.value, updated=excluded.updated, revisions=revisions+1",
                    (rater_id, item_id, field, value, now),
                )
                db.execute("INSERT INTO answer_log (rater_id, item_id, field, value, first, time) "
                           "VALUES (?, ?, ?, ?, ?, ?)", (rater_id, item_id, field, value, row[1], now))  # fmt: skip
            if submit_if is None:
                return True, None
            have = dict(db.execute("SELECT field, value FROM answers WHERE rater_id=? AND item_id=?",
                                   (rater_id, item_id)).fetchall())  # fmt: skip
            missing = submit_if(have)
            if not missing:
                db.execute("UPDATE assignments SET status='submitted', submitted=? WHERE rater_id=? AND item_id=?",
                           (now, rater_id, item_id))  # fmt: skip
            return True, missing
