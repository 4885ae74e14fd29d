"""Which failures are worth another try, and how long to wait before it."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time

import httpx
import openai

MAX_WAIT_S = 60.0


def is_retryable(exc: BaseException) -> bool:
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
            EmptyReply,
        ),
    )


def raise_if_cancelled() -> None:
    """Re-raise a cancellation (Ctrl-C) that a client library turned into a connection error: without
    this, the error would be retried or ignored and the run would go on after Ctrl-C."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class EmptyReply(Exception):
    """The server answered 200 but with no choice or no message."""


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


def describe(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:200]}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection failed ({type(cause).__name__ if cause else 'no detail'})"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
