"""A deterministic model for tests: replies from a list (in turn, cycling) or from a function."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .base import ChatResult, Message, Usage

ReplyFn = Callable[[list[Message], dict[str, Any] | None], str]


class ScriptedModel:
    def __init__(self, replies: list[str] | ReplyFn, *, name: str = "scripted", latency_s: float = 0.0) -> None:
        if isinstance(replies, list) and not replies:
            raise ValueError("a scripted model needs at least one reply")
        self.name = name
        self._replies = replies
        self._i = 0
        self.latency_s = latency_s
        self.calls: list[list[Message]] = []

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
        self.calls.append(messages)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if callable(self._replies):
            text = self._replies(messages, json_schema)
        else:
            text = self._replies[self._i % len(self._replies)]
            self._i += 1
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return ChatResult(
            text=text,
            usage=Usage(prompt_tokens, len(text.split()), 0.0),
            latency_s=self.latency_s,
            model=self.name,
            endpoint="scripted",
        )

    async def aclose(self) -> None:
        return None
