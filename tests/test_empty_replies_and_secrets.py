"""An empty reply with status 200 is a failed call: retried, counted, never cached, and the next run of the
same command tries again. An API key that an endpoint echoes in its error never reaches a record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from emoharbor.cli import main
from emoharbor.models.base import ModelCallError
from emoharbor.models.pool import ModelPool
from emoharbor.models.retry import REDACTED, describe
from emoharbor.models.spec import ModelSpec
from emoharbor.store.run_store import RunStore, call_sink
from emoharbor.testing.fake_server import FakeOpenAIServer, default_reply

HI = [{"role": "user", "content": "hello"}]
KEY = "sk-test-0123456789abcdef"


def spec(url: str, **kw: Any) -> ModelSpec:
    return ModelSpec.model_validate({"model": "fake", "base_url": url, "timeout_s": 5, "max_retries": 1, **kw})


async def test_an_empty_reply_is_retried_and_never_cached(tmp_path: Path) -> None:
    cache = tmp_path / "calls.sqlite"
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    with FakeOpenAIServer() as srv:
        srv.faults.extend(["empty", "ok"])  # one empty answer, then a real one
        async with ModelPool(cache_path=cache) as pool:
            r = await (await pool.get(spec(srv.base_url), "supporter")).chat(HI)
        assert r.text and r.retries == 1 and srv.requests == 2
        srv.faults.extend(["empty", "empty"])
        before = dict(srv.billed["fake"])
        async with ModelPool(cache_path=cache, sink=call_sink(store)) as pool:
            m = await pool.get(spec(srv.base_url), "supporter")
            with pytest.raises(ModelCallError, match=r"empty message .*gave up after 2 tries"):
                await m.chat([{"role": "user", "content": "again"}])
            r = await m.chat([{"role": "user", "content": "again"}])  # not cached: asked again, answered
        assert r.text and not r.cached and srv.requests == 5
        billed = {k: srv.billed["fake"][k] - before.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}
        srv.faults.append("empty_length")
        async with ModelPool(cache_path=None) as pool:
            m = await pool.get(spec(srv.base_url, max_tokens=7), "supporter")
            with pytest.raises(ModelCallError, match=r"max_tokens \(7\) ran out before any text"):
                await m.chat([{"role": "user", "content": "long"}])
        assert srv.requests == 6  # not retried: it would end the same way
    calls = store.calls()
    assert [bool(c["error"]) for c in calls] == [True, False]  # counted among the role's errors
    assert store.usage_by_role()["supporter"]["errors"] == 1
    # the empty answers were billed: the failed call records what they cost, so spent equals what was billed
    assert calls[0]["prompt_tokens"] > 0
    assert sum(c["prompt_tokens"] for c in calls) == billed["prompt_tokens"]
    assert sum(c["completion_tokens"] for c in calls) == billed["completion_tokens"]
    store.close()


def test_the_next_run_tries_a_conversation_that_ended_on_an_empty_reply_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    empty = {"on": True}

    def reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
        supporter = schema is None and "supportive listener" in str(messages[0].get("content", ""))
        return "" if supporter and empty["on"] else default_reply(messages, schema)

    with FakeOpenAIServer(reply=reply) as srv:
        fake = {"model": "fake", "base_url": srv.base_url, "max_retries": 0, "timeout_s": 10}
        cfg = {"roles": {"supporter": [fake], "user": fake, "judge": fake}, "profiles": ["builtin:p001*"],
               "max_turns": 2}  # fmt: skip
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        args = ["run", str(tmp_path / "c.yaml"), "--run-dir", str(tmp_path / "r"), "--quiet"]
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2 and "every conversation ended in error" in capsys.readouterr().err
        empty["on"] = False
        main(args)
    store = RunStore.open_existing(tmp_path / "r")
    ((_, conv),) = store.items("conversation")
    store.close()
    assert conv["termination"] != "error" and all(t["text"] for t in conv["turns"])


def test_the_supporter_prompt_is_what_the_fake_looks_for() -> None:
    from emoharbor.prompts import load_prompt

    assert "supportive listener" in load_prompt("supporter_default").text


async def test_an_echoed_key_is_scrubbed_from_every_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_TEST_KEY", KEY)
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    with FakeOpenAIServer() as srv:
        srv.faults.append("echo_key")
        async with ModelPool(cache_path=None, sink=call_sink(store)) as pool:
            m = await pool.get(spec(srv.base_url, api_key_env="EMOHARBOR_TEST_KEY"), "judge")
            with pytest.raises(ModelCallError) as e:
                await m.chat(HI)
    assert KEY not in str(e.value) and f"Bearer {REDACTED}" in str(e.value)
    (call,) = store.calls()
    assert "HTTP 401" in call["error"] and KEY not in call["error"]
    store.close()


def test_a_key_is_scrubbed_before_the_message_is_cut_short() -> None:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    message = "x" * 190 + f" {KEY} was refused"
    exc = openai.APIStatusError(message, response=httpx.Response(401, request=request), body=None)
    said = describe(exc, (KEY,))
    assert KEY[:6] not in said and len(said) <= len("HTTP 401: ") + 200
    assert KEY[:6] in describe(exc)  # what would have leaked
