"""The embedded server's set-up without a model: a schema sent as an llguidance grammar (the cache key made
before, so it is the same for any server), its slots and threads from the environment, and one rule for how
many conversations a run works on at once. The real server: tests/test_local_model.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor.errors import ConfigError
from emoharbor.models.cache import CallCache
from emoharbor.models.local import DEFAULT_SLOTS, closed, llguidance_grammar, server_slots, wire_request
from emoharbor.models.openai_compat import OpenAIChatModel
from emoharbor.models.pool import conversations_at_once
from emoharbor.models.spec import ModelSpec
from emoharbor.testing.fake_server import FakeOpenAIServer

SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "score": {"type": "integer", "enum": [1, 2, 3]}},
    "required": ["thought", "score"],
}


def test_a_json_object_schema_goes_to_the_server_as_a_grammar() -> None:
    req = {"messages": [], "response_format": {"type": "json_object", "schema": SCHEMA}, "extra_body": {"top_k": 1}}
    sent = wire_request(req)
    assert "response_format" not in sent and sent["extra_body"]["top_k"] == 1  # type: ignore[index]
    grammar = sent["extra_body"]["grammar"]  # type: ignore[index]
    head, body = grammar.split("start: %json ")
    assert head == "%llguidance {}\n"
    parsed = json.loads(body)
    assert list(parsed["properties"]) == ["thought", "score"]  # the schema's order: the Feeler relies on it
    assert parsed["additionalProperties"] is False  # no made-up fields after the listed ones
    assert parsed["x-guidance"] == {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
    assert req["response_format"]["schema"] is SCHEMA and "grammar" not in req["extra_body"]  # not changed
    plain = {"messages": [], "max_tokens": 5}
    assert wire_request(plain) is plain
    assert llguidance_grammar(SCHEMA) == grammar


async def test_the_cache_key_does_not_depend_on_how_the_request_is_sent(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.0) as srv:
        spec = ModelSpec(model="m", base_url=srv.base_url, temperature=0.0)
        cache = CallCache(tmp_path / "calls.sqlite")
        plain = OpenAIChatModel(spec, cache=cache, identity="local:x", json_mode="json_object")
        first = await plain.chat([{"role": "user", "content": "hi"}], json_schema=SCHEMA)
        wired = OpenAIChatModel(spec, cache=cache, identity="local:x", json_mode="json_object")
        wired.wire = wire_request
        again = await wired.chat([{"role": "user", "content": "hi"}], json_schema=SCHEMA)
        other = await wired.chat([{"role": "user", "content": "hello"}], json_schema=SCHEMA)
        bodies = list(srv.bodies)
        cache.close()
    assert not first.cached and again.cached and again.text == first.text and not other.cached
    assert len(bodies) == 2 and "response_format" in bodies[0]
    assert "response_format" not in bodies[1] and bodies[1]["grammar"].startswith("%llguidance")


def test_every_object_is_closed_unless_it_says_otherwise() -> None:
    nested = {
        "type": "object",
        "properties": {
            "properties": {"type": "string"},  # a field named like the keyword is a field, not a schema
            "empathy": {"type": "object", "properties": {"score": {"type": "integer"}}},
            "notes": {"type": "array", "items": {"type": "object", "properties": {"t": {"type": "string"}}}},
            "open": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    out = closed(nested)
    assert isinstance(out, dict) and out["additionalProperties"] is False
    props = out["properties"]
    assert props["properties"] == {"type": "string"}
    assert props["empathy"]["additionalProperties"] is False
    assert props["notes"]["items"]["additionalProperties"] is False
    assert props["open"]["additionalProperties"] is True
    assert "additionalProperties" not in nested  # the caller's schema is not changed


def test_slots_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMOHARBOR_LOCAL_SLOTS", raising=False)
    assert server_slots() == DEFAULT_SLOTS
    monkeypatch.setenv("EMOHARBOR_LOCAL_SLOTS", "2")
    assert server_slots() == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("EMOHARBOR_LOCAL_SLOTS", bad)
        with pytest.raises(ConfigError, match="EMOHARBOR_LOCAL_SLOTS must be a whole number of slots"):
            server_slots()


def test_conversations_at_once_follow_the_slots_only_when_every_model_is_embedded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EMOHARBOR_LOCAL_SLOTS", "3")
    local = ModelSpec(model="local:smollm2")
    served = ModelSpec(model="m", base_url="http://127.0.0.1:8000/v1", api_key_env="SOME_KEY")
    assert conversations_at_once([local, local], 32) == 3
    assert conversations_at_once([local], 2) == 2
    assert conversations_at_once([local, served], 32) == 32
    assert conversations_at_once([], 5) == 5
