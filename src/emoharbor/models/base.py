"""The one model interface: chat messages in; text, usage and latency out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the most likely alternatives at its position
    (``top``: (token, log-probability) pairs, the token itself among them where the backend says so)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True)
class ServerTimings:
    """Where a call's time went, as the server that answered it reports it (llama.cpp's ``timings``): the
    prompt tokens it evaluated and those it reused from its KV cache (a prefix it had read before), the
    tokens it generated, and the milliseconds of each part. None on a call whose server reports no such
    thing (most hosted APIs) and on one served from emoharbor's cache."""

    prompt_evaluated: int
    prompt_reused: int
    prompt_ms: float
    generated: int
    generated_ms: float


@dataclass(frozen=True)
class ChatResult:
    text: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    model: str = ""
    endpoint: str = ""
    retries: int = 0
    finish_reason: str = ""
    # per generated token, when the call asked for ``top_logprobs`` and the backend returned them; None
    # otherwise (never an empty list standing in for "not returned")
    logprobs: tuple[TokenLogprob, ...] | None = None
    timings: ServerTimings | None = None


@dataclass(frozen=True)
class CallRecord:
    """What the run store keeps of every call (successful or not)."""

    role: str
    model: str
    endpoint: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    cached: bool
    retries: int
    error: str = ""
    timings: ServerTimings | None = None
    prompt: str = ""  # the prompt file the call was made from (its version's name part): where the time went


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns chat messages into a reply.

    ``json_schema``: when given, the reply must be a JSON object (the backend is asked for JSON
    with that schema where it supports it). ``seed`` distinguishes repeats of the same call, and
    is part of the cache key. ``prompt_version`` names the version of the prompt files that built
    ``messages``; it too is part of the cache key. ``top_logprobs`` > 0 asks for each generated token's
    log-probability and that many alternatives (``ChatResult.logprobs``); a backend that cannot give them
    returns ``logprobs=None``, and the caller decides what that means.
    """

    name: str

    async def chat(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "",
        top_logprobs: int = 0,
    ) -> ChatResult: ...

    async def aclose(self) -> None: ...


class ModelCallError(Exception):
    """A call that failed for good (after retries)."""

    def __init__(self, message: str, *, retries: int = 0, endpoint: str = "", usage: Usage | None = None) -> None:
        super().__init__(message)
        self.retries = retries
        self.endpoint = endpoint
        self.usage = usage or Usage()  # what its failed attempts were billed (empty replies): spent all the same
