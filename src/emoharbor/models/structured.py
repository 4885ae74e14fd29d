"""Structured output: ask for JSON, parse strictly, re-ask a bounded number of times, else unscored.

A reply that never parses is returned as ``data=None`` with the error: callers record it as
unscored and count it; they never turn it into a number. A re-ask is the prompt file ``REASK``: its version
joins the call's prompt version on the calls that carry it.
"""

from __future__ import annotations

import contextvars
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema

from ..prompts import load_prompt
from .base import ChatModel, Message, ModelCallError, TokenLogprob, Usage

FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
REASK = "json_reask"


@dataclass
class Reasks:
    """The re-asks made within one unit of work (``store.units`` sets one per unit, ``ask_json`` counts)."""

    n: int = 0


# the re-ask count of the unit of work running in this task: a reply that did not parse and was asked again
# is recorded with the unit, so a unit that needed it is told apart from one that did not
reask_count: contextvars.ContextVar[Reasks | None] = contextvars.ContextVar("reask_count", default=None)


@dataclass
class Structured:
    data: dict[str, Any] | None
    attempts: int
    error: str = ""
    raw: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    logprobs: tuple[TokenLogprob, ...] | None = None  # of the reply that parsed, when asked for

    @property
    def ok(self) -> bool:
        return self.data is not None


def parse_json_object(text: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """Parse ``text`` as one JSON object (code fences and text around the object are tolerated);
    raise ValueError naming what is wrong."""
    t = FENCE.sub("", text.strip())
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the reply")
    try:
        obj = json.loads(t[start : end + 1])
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(obj, dict):
        raise ValueError("the JSON is not an object")
    if schema is not None:
        try:
            _validator(json.dumps(schema, sort_keys=True)).validate(obj)
        except jsonschema.ValidationError as e:
            where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
            raise ValueError(f"field {where}: {e.message[:160]}") from None
    return obj


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    """A checked validator per schema: checking a schema costs far more than validating with it."""
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


async def ask_json(
    model: ChatModel,
    messages: list[Message],
    schema: dict[str, Any],
    *,
    retries: int = 2,
    seed: int = 0,
    prompt_version: str = "",
    max_tokens: int | None = None,
    top_logprobs: int = 0,
) -> Structured:
    """Ask ``model`` for a JSON object matching ``schema``; up to ``retries`` re-asks on bad output.

    A model call that fails for good (``ModelCallError``) is not a parse failure: it propagates.
    """
    out = Structured(data=None, attempts=0)
    convo = list(messages)
    reask = load_prompt(REASK)
    reasked = "+".join(v for v in (prompt_version, reask.version) if v)  # the prompt version of a re-ask's call
    for attempt in range(retries + 1):
        out.attempts = attempt + 1
        if attempt and (count := reask_count.get()) is not None:
            count.n += 1
        r = await model.chat(
            convo,
            json_schema=schema,
            seed=seed + attempt,
            prompt_version=reasked if attempt else prompt_version,
            max_tokens=max_tokens,
            top_logprobs=top_logprobs,
        )
        out.usage = out.usage + r.usage
        out.raw.append(r.text)
        try:
            out.data = parse_json_object(r.text, schema)
            out.error = ""
            out.logprobs = r.logprobs
            return out
        except ValueError as e:
            out.error = str(e)
            if r.finish_reason == "length":  # not a malformed answer: an answer cut short
                out.error += (f" (the reply was cut off at max_tokens {max_tokens or 'of the model spec'}: raise "
                              "max_tokens for this role)")  # fmt: skip
        convo = [
            *messages,
            {"role": "assistant", "content": r.text[:2000]},
            {"role": "user", "content": reask.render(error=out.error).strip()},
        ]
    return out


__all__ = ["ModelCallError", "Reasks", "Structured", "ask_json", "parse_json_object", "reask_count"]
