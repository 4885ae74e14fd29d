"""A fake OpenAI-compatible chat server on loopback, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` after a fixed latency with deterministic text, or with a
JSON object that fits the request's schema. Faults can be queued: each request takes the next one.

Faults: ``ok``, ``400``, ``429`` (with Retry-After), ``500``, ``hang`` (never answers in time),
``truncated`` (the body stops short of its Content-Length), ``invalid_json`` (200 with a broken body),
``bad_output`` (200 with text that is not the requested JSON), ``empty`` (200 with an empty message),
``empty_length`` (the same, finished by the token limit),
``echo_key`` (401 whose error message repeats the request's Authorization header, as some servers do).

Asked for ``logprobs`` (with ``logprobs=True`` here, the default), it returns them in the OpenAI form: the
reply cut into tokens (runs of letters, single digits, single other characters), each digit 1-5 with a
fixed distribution over the digits 1-5 (``digit_probs``) and every other token with probability 1.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import uvicorn

Reply = Callable[[list[dict[str, Any]], dict[str, Any] | None], str]


def example_from_schema(schema: dict[str, Any], rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if t == "object":
        props = schema.get("properties", {})
        return {k: example_from_schema(v, rng) for k, v in props.items()}
    if t == "array":
        n = max(int(schema.get("minItems", 0)), 1)
        return [example_from_schema(schema.get("items", {"type": "string"}), rng) for _ in range(n)]
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        return float(schema.get("minimum", 0.5))
    if t == "boolean":
        return False
    return rng.choice(["I hear you.", "That sounds hard.", "Tell me more.", "I see what you mean."])


def default_reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    rng = random.Random(digest)
    if schema is not None:
        return json.dumps(example_from_schema(schema, rng))
    words = ["okay", "I", "feel", "it", "is", "hard", "today", "and", "I", "wonder", "why", "again"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(6, 14))) + f" ({digest.hex()[:6]})"


TOKEN = re.compile(r"[A-Za-z]+|\d|\s+|.", re.DOTALL)


def digit_probs(chosen: int) -> dict[int, float]:
    """The fake's distribution over 1-5 where it wrote ``chosen``: 0.5 on it, the rest on its neighbours
    and beyond (0.2 on each neighbour, what is left spread over the others)."""
    near = {v: 0.2 for v in (chosen - 1, chosen + 1) if 1 <= v <= 5}
    far = [v for v in range(1, 6) if v != chosen and v not in near]
    rest = 0.5 - sum(near.values())
    return {chosen: 0.5, **near, **{v: rest / len(far) for v in far}}


def logprobs_of(text: str, top: int) -> dict[str, Any]:
    content = []
    for tok in TOKEN.findall(text):
        if tok in "12345" and len(tok) == 1:
            alts = sorted(digit_probs(int(tok)).items(), key=lambda kv: -kv[1])[: max(top, 1)]
            top_lp = [{"token": str(v), "logprob": math.log(p), "bytes": None} for v, p in alts]
            content.append({"token": tok, "logprob": math.log(0.5), "bytes": None, "top_logprobs": top_lp})
        else:
            content.append(
                {"token": tok, "logprob": 0.0, "bytes": None, "top_logprobs": [{"token": tok, "logprob": 0.0}]}
            )
    return {"content": content}


class FakeOpenAIServer:
    def __init__(self, latency_s: float = 0.0, reply: Reply = default_reply, *, logprobs: bool = True) -> None:
        self.latency_s = latency_s
        self.reply = reply
        self.logprobs = logprobs
        self.faults: deque[str] = deque()
        self.requests = 0
        self.completed = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self.keep_bodies = True
        self.port = _free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if scope["path"].endswith("/models"):
            await _send(send, 200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}))
            return
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._complete(body, send, dict(scope.get("headers") or []))
        finally:
            self.in_flight -= 1

    async def _complete(self, body: bytes, send: Any, headers: dict[bytes, bytes]) -> None:
        fault = self.faults.popleft() if self.faults else "ok"
        req = json.loads(body or b"{}")
        if self.keep_bodies:
            self.bodies.append(req)
        if fault == "hang":
            await asyncio.sleep(3600)
            return
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if fault == "429":
            await _send(send, 429, json.dumps({"error": {"message": "slow down"}}), {"retry-after": "0.05"})
            return
        if fault == "400":
            await _send(send, 400, json.dumps({"error": {"message": "bad request: unknown parameter"}}))
            return
        if fault == "echo_key":
            said = headers.get(b"authorization", b"").decode()
            await _send(send, 401, json.dumps({"error": {"message": f"invalid credentials: {said}"}}))
            return
        if fault == "500":
            await _send(send, 500, json.dumps({"error": {"message": "boom"}}))
            return
        if fault == "truncated":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"500")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"id": "x", "cho', "more_body": False})
            return
        if fault == "invalid_json":
            await _send(send, 200, '{"id": "x", "choices": [ nope')
            return
        rf = req.get("response_format") or {}
        schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema")
        canned = {"bad_output": "this is not json at all", "empty": "", "empty_length": ""}
        text = canned[fault] if fault in canned else self.reply(req.get("messages", []), schema)
        self.completed += 1
        pt = sum(len(str(m.get("content", "")).split()) for m in req.get("messages", []))
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "length" if fault == "empty_length" else "stop",
        }
        if req.get("logprobs") and self.logprobs:
            choice["logprobs"] = logprobs_of(text, int(req.get("top_logprobs") or 0))
        await _send(
            send,
            200,
            json.dumps(
                {
                    "id": f"fake-{self.requests}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": req.get("model", "fake"),
                    "choices": [choice],
                    "usage": {
                        "prompt_tokens": pt,
                        "completion_tokens": len(text.split()),
                        "total_tokens": pt + len(text.split()),
                    },
                }
            ),
        )

    def start(self) -> FakeOpenAIServer:
        config = uvicorn.Config(
            self,
            host="127.0.0.1",
            port=self.port,
            log_level="critical",
            lifespan="on",
            timeout_keep_alive=30,
            backlog=4096,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _send(send: Any, status: int, body: str, headers: dict[str, str] | None = None) -> None:
    raw = body.encode()
    hs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    hs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hs})
    await send({"type": "http.response.body", "body": raw})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    """``python -m emoharbor.testing.fake_server --port P --latency S``: serve until killed."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args()
    srv = FakeOpenAIServer(latency_s=args.latency)
    srv.keep_bodies = False
    if args.port:
        srv.port = args.port
    print(srv.base_url, flush=True)
    uvicorn.run(srv, host="127.0.0.1", port=srv.port, log_level="critical", timeout_keep_alive=30, backlog=4096)


if __name__ == "__main__":
    main()
