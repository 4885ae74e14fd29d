"""On-disk cache of completed calls, keyed by everything that changes the output.

Only successful calls are stored, with what they cost: a hit is marked ``cached`` and carries that
cost, which the run store reports as saved, not spent. Two identical calls in flight at once are made once: the second
waits for the first's result.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .base import ChatResult, TokenLogprob, Usage


def default_cache_dir() -> Path:
    env = os.environ.get("EMOHARBOR_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "emoharbor"


def cache_key(**parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _logprobs_from(raw: Any) -> tuple[TokenLogprob, ...] | None:
    if raw is None:
        return None
    return tuple(TokenLogprob(t, float(lp), tuple((a, float(b)) for a, b in top)) for t, lp, top in raw)


class CallCache:
    def __init__(self, path: Path | None) -> None:
        """``path`` None: an in-memory cache that still merges identical in-flight calls."""
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, result TEXT)")
        self._in_flight: dict[str, asyncio.Future[ChatResult]] = {}

    def get(self, key: str) -> ChatResult | None:
        if self._db is None:
            return None
        row = self._db.execute("SELECT result FROM calls WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        d = json.loads(row[0])
        return ChatResult(
            text=d["text"],
            # the cost the original call had: saved, not spent (the call is marked cached); 0 for entries
            # written before the cache kept it
            usage=Usage(d["prompt_tokens"], d["completion_tokens"], float(d.get("cost_usd", 0.0))),
            latency_s=0.0,
            cached=True,
            model=d["model"],
            endpoint=d["endpoint"],
            finish_reason=d.get("finish_reason", ""),
            logprobs=_logprobs_from(d.get("logprobs")),
        )

    def put(self, key: str, r: ChatResult) -> None:
        if self._db is None:
            return
        d: dict[str, Any] = {
            "text": r.text,
            "prompt_tokens": r.usage.prompt_tokens,
            "completion_tokens": r.usage.completion_tokens,
            "cost_usd": r.usage.cost_usd,
            "model": r.model,
            "endpoint": r.endpoint,
            "finish_reason": r.finish_reason,
        }
        if r.logprobs is not None:
            d["logprobs"] = [[t.token, t.logprob, [list(a) for a in t.top]] for t in r.logprobs]
        self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)", (key, json.dumps(d)))

    async def get_or_call(self, key: str, call: Callable[[], Awaitable[ChatResult]]) -> ChatResult:
        hit = self.get(key)
        if hit is not None:
            return hit
        pending = self._in_flight.get(key)
        if pending is not None:
            r = await asyncio.shield(pending)
            return ChatResult(**{**r.__dict__, "cached": True, "latency_s": 0.0, "retries": 0})
        fut: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = fut
        try:
            r = await call()
        except BaseException as e:
            if isinstance(e, Exception):
                fut.set_exception(e)
            else:
                fut.cancel()
            fut.exception() if not fut.cancelled() else None  # mark retrieved
            raise
        finally:
            self._in_flight.pop(key, None)
        fut.set_result(r)
        self.put(key, r)
        return r

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
