"""What a run spent and what came from the cache, counted apart, also after units were done again."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from emoharbor.models.base import ModelCallError
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.store.run_store import RunStore, call_sink
from emoharbor.store.units import unit
from emoharbor.testing.fake_server import FakeOpenAIServer

PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}


def total(store: RunStore, col: str) -> float:
    return sum(u[col] for u in store.usage_by_role().values())


async def one_run(folder: Path, cache: Path, srv: FakeOpenAIServer, costs: list[float]) -> RunStore:
    """One unit of two calls (the second fails on a 400): its record ends on a failed model call."""
    store = RunStore.create_or_resume(folder, "test", {}, "h")
    spec = ModelSpec.model_validate({"model": "fake", "base_url": srv.base_url, "max_retries": 1, "price": PRICE})
    async with ModelPool(cache_path=cache, sink=call_sink(store)) as pool:
        m = await pool.get(spec, "supporter")

        async def work() -> tuple[dict[str, Any], list[tuple[str, str]]]:
            events: list[tuple[str, str]] = []
            try:
                for text in ("hello there", "how are you"):
                    r = await m.chat([{"role": "user", "content": text}])
                    if not r.cached:
                        costs.append(r.usage.cost_usd)
            except ModelCallError as e:
                events.append(("model_error", str(e)))
                return {"status": "error", "termination": "error", "events": events}, events
            return {"status": "ok", "termination": "done", "events": events}, events

        await unit(store, "conversation", ("c1",), work)
    return store


async def test_a_redone_unit_keeps_the_calls_of_its_failed_attempt_and_the_cache_is_counted_apart(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache.sqlite"
    costs: list[float] = []
    with FakeOpenAIServer() as srv:
        srv.faults.extend(["500", "ok", "400"])  # the first call is retried once; the second fails for good
        store = await one_run(tmp_path / "run", cache, srv, costs)
        assert store.get("conversation", ("c1",))["termination"] == "error"  # type: ignore[index]
        store.close()
        store = await one_run(tmp_path / "run", cache, srv, costs)  # done again: the first call from the cache
        assert store.get("conversation", ("c1",))["termination"] == "done"  # type: ignore[index]
        assert (srv.requests, srv.completed) == (4, 2)
        u = store.usage_by_role()["supporter"]
        # what the server answered: 4 requests (a 500, its retry, a 400, then the redone unit's second call)
        assert (u["requests"], u["retries"], u["errors"]) == (4, 1, 1)
        assert (u["calls"], u["cached"], u["superseded"]) == (4, 1, 2)
        assert u["cost_usd"] == pytest.approx(sum(costs)) and u["cost_usd"] > 0
        first_call = costs[0]
        assert u["cached_cost_usd"] == pytest.approx(first_call)
        assert u["cached_prompt_tokens"] == 2
        store.close()

        # the same work in a new run folder: everything from the cache, nothing spent
        before = srv.requests
        store = await one_run(tmp_path / "again", cache, srv, costs)
        assert srv.requests == before
        u = store.usage_by_role()["supporter"]
        assert (u["calls"], u["cached"], u["requests"]) == (2, 2, 0)
        assert (u["cost_usd"], u["prompt_tokens"], u["completion_tokens"]) == (0, 0, 0)
        assert u["cached_cost_usd"] == pytest.approx(sum(costs)) and u["cached_prompt_tokens"] == 5
        store.close()


def test_a_format1_run_database_from_before_superseded_attempts_still_opens(tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    store.close()
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    db.executescript(
        "DROP TABLE calls; CREATE TABLE calls (id INTEGER PRIMARY KEY AUTOINCREMENT, unit_kind TEXT,"
        " unit_key TEXT, role TEXT, model TEXT, endpoint TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,"
        " cost_usd REAL, latency_s REAL, cached INTEGER, retries INTEGER, error TEXT);"
        " INSERT INTO calls (unit_kind, unit_key, role, model, endpoint, prompt_tokens, completion_tokens,"
        " cost_usd, latency_s, cached, retries, error) VALUES ('c', 'k', 'judge', 'm', '', 3, 4, 0.5, 1, 0, 0, '');"
        " DELETE FROM meta WHERE key='format_version';"
    )
    db.close()
    store = RunStore.open_existing(tmp_path / "run")
    u = store.usage_by_role()["judge"]
    assert (u["calls"], u["superseded"], u["requests"], u["cost_usd"], u["prompt_tokens"]) == (1, 0, 1, 0.5, 3)
    store.put("c", ("k",), {"again": True, "status": "ok"})
    assert store.usage_by_role()["judge"]["superseded"] == 1
    store.close()
