"""Which failures are worth another try, and how long to wait before it."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time

import httpx
import openai

from .base import Usage

MAX_WAIT_S = 60.0


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, EmptyReply):
        return exc.retry
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    # timeouts, refused or dropped connections, truncated bodies, invalid JSON from the server
    return isinstance(
        exc,
        (
            openai.APIConnectionError,
            openai.APIResponseValidationError,
            httpx.TransportError,
            json.JSONDecodeError,
        ),
    )


def raise_if_cancelled() -> None:
    """Re-raise a cancellation (Ctrl-C) that a client library turned into a connection error: without
    this, the error would be retried or ignored and the run would go on after Ctrl-C."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class EmptyReply(Exception):
    """The server answered 200 but with no choice, no message or no text: never cached, retried unless
    ``retry`` is False (the reply ran out of tokens before any text: a retry would do the same). ``usage``: what
    the server billed for it, counted as spent."""

    def __init__(self, message: str, *, retry: bool = True, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.usage = usage or Usage()


def retry_after_s(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        ms = response.headers.get("retry-after-ms")
        try:
            return min(float(ms) / 1000.0, MAX_WAIT_S) if ms else None
        except ValueError:
            return None
    try:
        return min(max(float(value), 0.0), MAX_WAIT_S)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return min(max(parsed.timestamp() - time.time(), 0.0), MAX_WAIT_S)


def backoff_s(attempt: int, base: float = 0.5, cap: float = 20.0) -> float:
    """Exponential backoff with full jitter: attempt 0 waits up to ``base`` seconds."""
    return random.uniform(0, min(cap, base * (2**attempt)))


REDACTED = "[redacted]"


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` without the values of ``secrets`` (an API key an endpoint echoed in its error)."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def describe(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """The failure on one line, ``secrets`` scrubbed from it before it is cut to length."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {scrub(str(exc.message), secrets)[:200]}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection failed ({type(cause).__name__ if cause else 'no detail'})"
    return f"{type(exc).__name__}: {scrub(str(exc), secrets)[:200]}"
