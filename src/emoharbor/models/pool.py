"""Builds the models a run needs from their specs, shares endpoints and local servers, closes all."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ..errors import EmoharborError
from .base import CallRecord, ChatModel, ChatResult, Message, ModelCallError
from .cache import CallCache, default_cache_dir
from .local import LocalServer, require_engine, resolve_gguf, server_slots, wire_request
from .openai_compat import Endpoint, OpenAIChatModel, make_endpoints
from .scripted import ScriptedModel
from .spec import ModelSpec

CallSink = Callable[[CallRecord], None]


def prompt_name(version: str) -> str:
    """The prompt file's name in a prompt version ("user_feel@3f2a..." -> "user_feel")."""
    return version.partition("@")[0]


class RoleModel:
    """A model as one role uses it: every call is recorded with the role's name."""

    def __init__(self, inner: ChatModel, role: str, sink: CallSink | None = None) -> None:
        self.inner = inner
        self.role = role
        self.name = inner.name
        self.sink = sink

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
        try:
            r = await self.inner.chat(
                messages,
                json_schema=json_schema,
                max_tokens=max_tokens,
                seed=seed,
                prompt_version=prompt_version,
                top_logprobs=top_logprobs,
            )
        except ModelCallError as e:
            if self.sink:
                u = e.usage
                self.sink(CallRecord(self.role, self.name, e.endpoint, u.prompt_tokens, u.completion_tokens, u.cost_usd,
                                     0.0, False, e.retries, str(e), prompt=prompt_name(prompt_version)))  # fmt: skip
            raise
        if self.sink:
            u = r.usage
            self.sink(
                CallRecord(
                    self.role,
                    self.name,
                    r.endpoint,
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.cost_usd,
                    r.latency_s,
                    r.cached,
                    r.retries,
                    timings=r.timings,
                    prompt=prompt_name(prompt_version),
                )
            )
        return r

    async def aclose(self) -> None:
        return None


class ModelPool:
    """``async with ModelPool() as pool: model = await pool.get(spec, "judge")``."""

    def __init__(self, *, cache_path: Path | bool | None = True, sink: CallSink | None = None) -> None:
        path = (default_cache_dir() / "calls.sqlite") if cache_path is True else (cache_path or None)
        self.cache = CallCache(path if isinstance(path, Path) else None)
        self.sink = sink
        self._servers: dict[tuple[str, str, int, str, int], LocalServer] = {}  # model, lora, context, draft, draft_max
        self._endpoints: dict[tuple[str, ...], list[Endpoint]] = {}
        self._models: dict[str, ChatModel] = {}

    async def get(self, spec: ModelSpec, role: str) -> RoleModel:
        key = spec.identity
        model = self._models.get(key)
        if model is None:
            model = await self._build(spec)
            self._models[key] = model
        return RoleModel(model, role, self.sink)

    async def _build(self, spec: ModelSpec) -> ChatModel:
        if spec.backend == "scripted":
            return ScriptedModel(spec.replies or ["..."])
        if spec.backend == "hf":  # imported here: the core does not need torch
            from .hf import HFChatModel, resolve_hf

            src = resolve_hf(spec.model.removeprefix("hf:"))
            penalty = spec.extra_body.get("repetition_penalty")  # the one generation setting the hf backend reads
            return HFChatModel(
                src, name=spec.model, temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens,
                repetition_penalty=float(penalty) if penalty is not None else None,
            )  # fmt: skip
        if spec.backend == "local":
            # One server per model file and context size serves every role: it decodes its slots together,
            # and each slot keeps the prompt prefix it read last (a request goes to the slot whose prefix
            # matches it best), so the roles' and conversations' long shared prefixes stay warm.
            gguf = resolve_gguf(spec.model.removeprefix("local:"))
            draft = resolve_gguf(spec.draft.removeprefix("local:")) if spec.draft else None
            skey = (str(gguf.path), str(gguf.lora or ""), spec.context_size, str(draft.path) if draft else "",
                    spec.draft_max or 0)  # fmt: skip
            server = self._servers.get(skey)
            if server is None:
                taken = {sv.port for sv in self._servers.values()}
                port = spec.port if spec.port not in taken else None  # a fixed port serves the first server
                server = LocalServer(gguf, context_size=spec.context_size, port=port, draft=draft,
                                     draft_max=spec.draft_max)  # fmt: skip
                self._servers[skey] = server
                await server.start()
            ekey: tuple[str, ...] = (server.base_url,)
            if ekey not in self._endpoints:  # as many requests in flight as the server has slots
                self._endpoints[ekey] = make_endpoints(spec, [server.base_url], concurrency=server.slots)
            # the cache key records a schema as json_object (as it always has); wire_request sends it as a grammar
            mode = "json_object" if spec.json_mode == "auto" else spec.json_mode
            m = OpenAIChatModel(
                spec, cache=self.cache, endpoints=self._endpoints[ekey], json_mode=mode, identity=gguf.identity
            )
            m.served_name = "local"
            m.wire = wire_request
            return m
        ekey = (*tuple(sorted(spec.endpoint_urls())), spec.api_key_env or "", json.dumps(spec.headers))
        if ekey not in self._endpoints:
            await check_reachable(spec.endpoint_urls())
            self._endpoints[ekey] = make_endpoints(spec)
        return OpenAIChatModel(spec, cache=self.cache, endpoints=self._endpoints[ekey])

    async def __aenter__(self) -> ModelPool:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for eps in self._endpoints.values():
            for ep in eps:
                with contextlib.suppress(Exception):  # best effort; the servers stop below regardless
                    await ep.client.close()
        for server in self._servers.values():
            server.stop()
        self._servers.clear()
        self._endpoints.clear()
        self._models.clear()
        self.cache.close()


async def check_reachable(urls: list[str], timeout_s: float = 5.0) -> None:
    """Fail fast when no endpoint of a model accepts connections (a server that is down)."""
    errors = []
    for url in urls:
        u = urlsplit(url)
        port = u.port or (443 if u.scheme == "https" else 80)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(u.hostname, port), timeout_s)
            writer.close()
            return
        except (TimeoutError, OSError) as e:
            errors.append(f"{url} ({e.__class__.__name__})")
    raise EmoharborError(f"cannot connect to {', '.join(errors)}: start the server or correct base_url/endpoints")


def check_model_spec(spec: ModelSpec) -> None:
    """Fail early, with a clear message, on a model that cannot be built (no server is started)."""
    if spec.backend == "local":
        require_engine()
        resolve_gguf(spec.model.removeprefix("local:"))
        if spec.draft:
            resolve_gguf(spec.draft.removeprefix("local:"))
    elif spec.backend == "hf":
        from .hf import resolve_hf

        resolve_hf(spec.model.removeprefix("hf:"))
    elif spec.backend == "openai":
        make_endpoints(spec)


def conversations_at_once(specs: list[ModelSpec], wanted: int) -> int:
    """How many conversations (or replies) a run works on at once: ``wanted``, but no more than the embedded
    server's slots when every model of the run is the embedded one. Each conversation has one request in
    flight at a time, so more conversations than slots would only evict each other's prompt prefixes."""
    if specs and all(s.backend == "local" for s in specs):
        return min(wanted, server_slots())
    return wanted


__all__ = ["EmoharborError", "ModelPool", "RoleModel", "check_model_spec", "conversations_at_once"]


GetModel = Callable[[ModelSpec, str], Awaitable[ChatModel]]


class LazyModels:
    """Builds each model on first use, so a resumed stage with nothing left to do starts no server."""

    def __init__(self, get_model: GetModel) -> None:
        self._get = get_model
        self._models: dict[str, ChatModel] = {}
        self._lock = asyncio.Lock()

    async def get(self, key: str, spec: ModelSpec, role: str) -> ChatModel:
        async with self._lock:
            if key not in self._models:
                self._models[key] = await self._get(spec, role)
            return self._models[key]
