"""The model layer against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from emoharbor.errors import EmoharborError
from emoharbor.models.base import ModelCallError
from emoharbor.models.cache import CallCache
from emoharbor.models.openai_compat import OpenAIChatModel
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.models.structured import ask_json
from emoharbor.store.run_store import RunStore, call_sink
from emoharbor.testing.fake_server import FakeOpenAIServer

HI = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server():
    with FakeOpenAIServer(latency_s=0.005) as srv:
        yield srv


def spec(url: str, **kw: object) -> ModelSpec:
    return ModelSpec.model_validate({"model": "fake", "base_url": url, "timeout_s": 0.5, "max_retries": 3, **kw})


@pytest.mark.parametrize("fault", ["429", "500", "hang", "truncated", "invalid_json"])
async def test_each_transient_fault_is_retried(server: FakeOpenAIServer, fault: str) -> None:
    server.faults.append(fault)
    async with ModelPool(cache_path=None) as pool:
        m = await pool.get(spec(server.base_url), "supporter")
        r = await m.chat([{"role": "user", "content": f"after {fault}"}])
    assert r.retries == 1
    assert r.text
    assert server.requests == 2


async def test_retry_after_is_honoured(server: FakeOpenAIServer) -> None:
    server.faults.extend(["429", "429"])
    async with ModelPool(cache_path=None) as pool:
        m = await pool.get(spec(server.base_url), "supporter")
        t = time.perf_counter()
        r = await m.chat(HI)
    assert r.retries == 2
    assert time.perf_counter() - t >= 0.1  # two waits of the server's Retry-After: 0.05 s


async def test_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    server.faults.append("400")
    async with ModelPool(cache_path=None) as pool:
        m = await pool.get(spec(server.base_url), "supporter")
        with pytest.raises(ModelCallError, match="HTTP 400"):
            await m.chat(HI)
    assert server.requests == 1


async def test_gives_up_after_max_retries_and_records_the_error(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.faults.extend(["500"] * 10)
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    async with ModelPool(cache_path=None, sink=call_sink(store)) as pool:
        m = await pool.get(spec(server.base_url, max_retries=2), "judge")
        with pytest.raises(ModelCallError, match="gave up after 3 tries"):
            await m.chat(HI)
    calls = store.calls()
    assert len(calls) == 1 and calls[0]["role"] == "judge" and "HTTP 500" in calls[0]["error"]
    assert calls[0]["retries"] == 2


async def test_refused_connection_is_reported() -> None:
    s = spec("http://127.0.0.1:9/v1", max_retries=1)
    async with ModelPool(cache_path=None) as pool:  # found down before the run starts
        with pytest.raises(EmoharborError, match=r"cannot connect to http://127\.0\.0\.1:9/v1"):
            await pool.get(s, "supporter")
    m = OpenAIChatModel(s, cache=CallCache(None))  # or going down in the middle of a run
    with pytest.raises(ModelCallError, match=r"connection failed \(ConnectError\) \(gave up after 2 tries\)"):
        await m.chat(HI)
    await m.aclose()


async def test_cache_hits_and_errors_are_never_cached(server: FakeOpenAIServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    server.faults.extend(["400"])
    async with ModelPool(cache_path=cache) as pool:
        m = await pool.get(spec(server.base_url), "supporter")
        with pytest.raises(ModelCallError):
            await m.chat(HI)
        first = await m.chat(HI)
        assert not first.cached
    async with ModelPool(cache_path=cache) as pool:  # a new process would see the same file
        m = await pool.get(spec(server.base_url), "supporter")
        again = await m.chat(HI)
        other_seed = await m.chat(HI, seed=7)
        other_prompt = await m.chat(HI, prompt_version="p@2")
    assert again.cached and again.text == first.text
    assert not other_seed.cached and not other_prompt.cached
    assert server.requests == 4  # the 400, the first success, the two new keys


async def test_identical_calls_in_flight_are_made_once(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.2) as srv:
        async with ModelPool(cache_path=tmp_path / "c.sqlite") as pool:
            m = await pool.get(spec(srv.base_url), "supporter")
            results = await asyncio.gather(*[m.chat(HI) for _ in range(5)])
    assert srv.requests == 1
    assert len({r.text for r in results}) == 1
    assert sum(r.cached for r in results) == 4


async def test_per_endpoint_concurrency_limit() -> None:
    with FakeOpenAIServer(latency_s=0.05) as srv:
        async with ModelPool(cache_path=None) as pool:
            m = await pool.get(spec(srv.base_url, concurrency=3), "supporter")
            await asyncio.gather(*[m.chat([{"role": "user", "content": str(i)}]) for i in range(12)])
    assert srv.max_in_flight == 3


async def test_fleet_spreads_calls_and_rests_a_failing_endpoint() -> None:
    with FakeOpenAIServer(latency_s=0.02) as a, FakeOpenAIServer(latency_s=0.02) as b:
        s = ModelSpec(model="fake", endpoints=[a.base_url, b.base_url], concurrency=4, timeout_s=1.0)
        async with ModelPool(cache_path=None) as pool:
            m = await pool.get(s, "supporter")
            await asyncio.gather(*[m.chat([{"role": "user", "content": str(i)}]) for i in range(20)])
            assert a.completed >= 5 and b.completed >= 5
            a.faults.extend(["500"] * 3)
            for i in range(3):  # three failures in a row put endpoint a to rest
                await m.chat([{"role": "user", "content": f"x{i}"}])
            before = a.requests
            await asyncio.gather(*[m.chat([{"role": "user", "content": f"y{i}"}]) for i in range(10)])
    assert a.requests == before  # resting: every new call went to b


async def test_usage_and_cost_are_recorded_per_role(server: FakeOpenAIServer, tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    priced = spec(server.base_url, price={"input_per_mtok": 1000.0, "output_per_mtok": 2000.0})
    async with ModelPool(cache_path=None, sink=call_sink(store)) as pool:
        sup = await pool.get(priced, "supporter")
        judge = await pool.get(priced, "judge")
        r = await sup.chat(HI)
        await judge.chat([{"role": "user", "content": "rate this please"}])
    usage = store.usage_by_role()
    assert set(usage) == {"supporter", "judge"}
    assert usage["supporter"]["prompt_tokens"] == 1
    expected = (r.usage.prompt_tokens * 1000 + r.usage.completion_tokens * 2000) / 1e6
    assert usage["supporter"]["cost_usd"] == pytest.approx(expected)


async def test_structured_output_is_retried_then_unscored(server: FakeOpenAIServer) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["score"]}
    async with ModelPool(cache_path=None) as pool:
        m = await pool.get(spec(server.base_url), "judge")
        server.faults.append("bad_output")
        ok = await ask_json(m, HI, schema)
        server.faults.extend(["bad_output"] * 3)
        bad = await ask_json(m, [{"role": "user", "content": "again"}], schema)
    assert ok.data is not None and ok.data["score"] in (1, 2, 3) and ok.attempts == 2
    assert bad.data is None and bad.attempts == 3 and "no JSON object" in bad.error
    req = server.bodies[0]
    assert req["response_format"]["type"] == "json_schema"


async def test_a_cancel_turned_into_a_connection_error_is_not_retried() -> None:
    """Ctrl-C cancels the run's task; a client library may surface that as a connection error. It must
    end the call, not be retried (the run would go on after Ctrl-C)."""
    import httpx
    import openai

    m = OpenAIChatModel(spec("http://127.0.0.1:9/v1", max_retries=5), cache=CallCache(None))
    calls = 0

    async def create(**_: object) -> None:
        nonlocal calls
        calls += 1
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise openai.APIConnectionError(request=httpx.Request("POST", "http://x")) from None

    m.endpoints[0].client.chat.completions.create = create  # type: ignore[method-assign]
    task = asyncio.create_task(m.chat(HI))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 1
    await m.aclose()


def test_a_served_model_without_endpoint_or_key_takes_the_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the openai SDK: OPENAI_API_KEY (and OPENAI_BASE_URL) when the spec gives neither base_url nor
    api_key_env; without OPENAI_API_KEY it is the one-line error it was."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    spec = ModelSpec(model="gpt-4o-mini")
    assert (spec.api_key_env, spec.endpoint_urls()) == ("OPENAI_API_KEY", ["http://127.0.0.1:8000/v1"])
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert ModelSpec(model="gpt-4o-mini").endpoint_urls() == ["https://api.openai.com/v1"]
    given = ModelSpec(model="m", base_url="http://127.0.0.1:9/v1")  # what a spec says is kept
    assert given.api_key_env is None and given.endpoint_urls() == ["http://127.0.0.1:9/v1"]
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        ModelSpec(model="gpt-4o-mini")


async def test_a_reply_cut_off_at_max_tokens_says_so() -> None:
    """A JSON answer that stopped at max_tokens is unscored with the reason a user can act on."""
    from emoharbor.models.base import ChatResult

    class Cut:
        name = "cut"

        async def chat(self, messages: Any, **kw: Any) -> ChatResult:
            return ChatResult(text='{"score": 4, "reason": "the reply was warm and', finish_reason="length")

        async def aclose(self) -> None:
            return None

    got = await ask_json(Cut(), HI, {"type": "object"}, retries=0, max_tokens=256)
    assert got.data is None
    assert "cut off at max_tokens 256" in got.error and "raise max_tokens" in got.error
