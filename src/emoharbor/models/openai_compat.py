"""Any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp, LM Studio, gateways).

A model may be served by several endpoints: each call goes to the healthy endpoint with the fewest
outstanding requests; an endpoint that keeps failing rests for a while. Every endpoint has its own
concurrency limit. Failed calls are retried with exponential backoff and jitter, honouring
Retry-After. Completed calls are cached on disk.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

import openai

from ..errors import ConfigError
from .base import ChatResult, Message, ModelCallError, ServerTimings, TokenLogprob, Usage
from .cache import CallCache, cache_key
from .retry import EmptyReply, backoff_s, describe, is_retryable, raise_if_cancelled, retry_after_s
from .spec import ModelSpec

FAILURES_BEFORE_REST = 3
REST_S = 30.0


class Endpoint:
    def __init__(self, url: str, client: openai.AsyncOpenAI, concurrency: int) -> None:
        self.url = url
        self.client = client
        self.slots = asyncio.Semaphore(concurrency)
        self.outstanding = 0
        self.consecutive_failures = 0
        self.resting_until = 0.0

    def healthy(self, now: float) -> bool:
        return self.resting_until <= now

    def succeeded(self) -> None:
        self.consecutive_failures = 0

    def failed(self) -> None:
        self.consecutive_failures += 1
        if self.consecutive_failures >= FAILURES_BEFORE_REST:
            self.resting_until = time.monotonic() + REST_S
            self.consecutive_failures = 0


class OpenAIChatModel:
    def __init__(
        self,
        spec: ModelSpec,
        *,
        cache: CallCache,
        endpoints: list[Endpoint] | None = None,
        identity: str | None = None,
        json_mode: str | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.model
        self.cache = cache
        self.endpoints = endpoints or make_endpoints(spec)
        urls = sorted(e.url for e in self.endpoints)
        self.identity = identity or f"{spec.model}@{','.join(urls)}"
        self.served_name = spec.model
        self.json_mode = json_mode or ("json_schema" if spec.json_mode == "auto" else spec.json_mode)
        # how a request is put to this server, after its cache key is made from it (the embedded server takes
        # a schema as a grammar): the same request has the same key whatever server answers it
        self.wire: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def _pick(self) -> Endpoint:
        now = time.monotonic()
        pool = [e for e in self.endpoints if e.healthy(now)] or self.endpoints
        return min(pool, key=lambda e: e.outstanding)

    def _request(
        self,
        messages: list[Message],
        json_schema: dict[str, Any] | None,
        max_tokens: int | None,
        seed: int | None,
        top_logprobs: int = 0,
    ) -> dict[str, Any]:
        s = self.spec
        req: dict[str, Any] = {
            "model": self.served_name,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": max_tokens or s.max_tokens,
        }
        if s.top_p is not None:
            req["top_p"] = s.top_p
        if seed is not None:
            req["seed"] = seed
        if top_logprobs > 0:
            req["logprobs"] = True
            req["top_logprobs"] = top_logprobs
        if json_schema is not None:
            if self.json_mode == "json_schema":
                req["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": json_schema, "strict": False},
                }
            elif self.json_mode == "json_object":
                req["response_format"] = {"type": "json_object", "schema": json_schema}
        if s.extra_body:
            req["extra_body"] = dict(s.extra_body)
        return req

    async def chat(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "",
        top_logprobs: int = 0,
    ) -> ChatResult:
        req = self._request(messages, json_schema, max_tokens, seed, top_logprobs)
        key = cache_key(
            identity=self.identity,
            request={k: v for k, v in req.items() if k != "model"},
            json_mode=self.json_mode if json_schema is not None else None,
            prompt_version=prompt_version,
        )
        return await self.cache.get_or_call(key, lambda: self._call_with_retries(req))

    async def _call_with_retries(self, req: dict[str, Any]) -> ChatResult:
        attempt = 0
        billed = Usage()  # failed attempts the server billed all the same (empty replies)
        while True:
            ep = self._pick()
            ep.outstanding += 1
            try:
                async with ep.slots:
                    started = time.perf_counter()
                    result = await self._call_once(ep, req)
                ep.succeeded()
                return ChatResult(
                    text=result[0],
                    usage=result[1] + billed,
                    latency_s=time.perf_counter() - started,
                    model=self.name,
                    endpoint=ep.url,
                    retries=attempt,
                    finish_reason=result[2],
                    logprobs=result[3],
                    timings=result[4],
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise_if_cancelled()
                billed += getattr(exc, "usage", Usage())
                secrets = (ep.client.api_key,) if self.spec.api_key_env else ()  # never in a record or a log
                if not is_retryable(exc):
                    raise ModelCallError(
                        f"{self.name} at {ep.url}: {describe(exc, secrets)}",
                        retries=attempt,
                        endpoint=ep.url,
                        usage=billed,
                    ) from exc
                ep.failed()
                if attempt >= self.spec.max_retries:
                    raise ModelCallError(
                        f"{self.name} at {ep.url}: {describe(exc, secrets)} (gave up after {attempt + 1} tries)",
                        retries=attempt,
                        endpoint=ep.url,
                        usage=billed,
                    ) from exc
                wait = retry_after_s(exc)
                delay = wait if wait is not None else backoff_s(attempt)
            finally:
                ep.outstanding -= 1
            await asyncio.sleep(delay)
            attempt += 1

    async def _call_once(
        self, ep: Endpoint, req: dict[str, Any]
    ) -> tuple[str, Usage, str, tuple[TokenLogprob, ...] | None, ServerTimings | None]:
        resp = await ep.client.chat.completions.create(**(self.wire(req) if self.wire else req))
        if not getattr(resp, "choices", None) or resp.choices[0].message is None:
            raise EmptyReply("the server answered with no choices")
        choice = resp.choices[0]
        text = choice.message.content or ""
        u = resp.usage
        pt = int(getattr(u, "prompt_tokens", 0) or 0) if u else 0
        ct = int(getattr(u, "completion_tokens", 0) or 0) if u else 0
        price = self.spec.price
        usage = Usage(pt, ct, (pt * price.input_per_mtok + ct * price.output_per_mtok) / 1e6)
        if not text.strip():  # not a reply: not cached, and the unit is done again by the next run
            at_length = choice.finish_reason == "length"
            hint = f": max_tokens ({req['max_tokens']}) ran out before any text" if at_length else ""
            raise EmptyReply(f"the server answered with an empty message{hint}", retry=not at_length, usage=usage)
        lp = token_logprobs(choice) if req.get("logprobs") else None
        return text, usage, str(choice.finish_reason or ""), lp, server_timings(resp)

    async def aclose(self) -> None:
        for e in self.endpoints:
            await e.client.close()


def token_logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """The generated tokens' log-probabilities as the OpenAI API gives them (``choice.logprobs.content``,
    each with ``top_logprobs``); vLLM, SGLang and llama.cpp's server answer in the same form. None when the
    server sent none."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return tuple(
        TokenLogprob(
            str(t.token),
            float(t.logprob),
            tuple((str(a.token), float(a.logprob)) for a in (getattr(t, "top_logprobs", None) or [])),
        )
        for t in content
    )


def server_timings(resp: Any) -> ServerTimings | None:
    """llama.cpp's ``timings`` of a response (``prompt_n`` evaluated, ``cache_n`` reused from the KV cache,
    ``predicted_n`` generated, with their milliseconds); None where the server sent none or not in that form."""
    t = (getattr(resp, "model_extra", None) or {}).get("timings")
    if not isinstance(t, dict):
        return None
    try:
        return ServerTimings(int(t["prompt_n"]), int(t.get("cache_n", 0)), float(t["prompt_ms"]),
                             int(t["predicted_n"]), float(t["predicted_ms"]))  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None


def make_endpoints(spec: ModelSpec, urls: list[str] | None = None, concurrency: int | None = None) -> list[Endpoint]:
    key = api_key(spec)
    return [
        Endpoint(
            u,
            openai.AsyncOpenAI(
                base_url=u,
                api_key=key,
                max_retries=0,
                timeout=spec.call_timeout_s,
                default_headers=spec.headers or None,
            ),
            concurrency or spec.concurrency,
        )
        for u in (urls or spec.endpoint_urls())
    ]


def api_key(spec: ModelSpec) -> str:
    if spec.api_key_env is None:
        return "not-needed"
    key = os.environ.get(spec.api_key_env)
    if not key:
        raise ConfigError(
            f"model {spec.model!r}: environment variable {spec.api_key_env} is not set; "
            f"export {spec.api_key_env}=... with the key for {spec.endpoint_urls()[0]}"
        )
    return key
