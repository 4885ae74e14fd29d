"""A fake OpenAI-compatible chat server on loopback, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` after a fixed latency with deterministic text, or with a
JSON object that fits the request's schema. Faults can be queued: each request takes the next one.

Faults: ``ok``, ``400``, ``429`` (with Retry-After), ``500``, ``hang`` (no answer for ``hang_s`` seconds,
then the connection is closed: a client's timeout beats it), ``reset`` (the connection is closed at once,
without a response), ``truncated`` (the body stops short of its Content-Length), ``invalid_json`` (200 with a
broken body), ``bad_output`` (200 with text that is not the requested JSON), ``empty`` (200 with an empty
message), ``empty_length`` (the same, finished by the token limit),
``echo_key`` (401 whose error message repeats the request's Authorization header, as some servers do).

Besides the queue, ``fault_rate`` R draws a fault from ``fault_mix`` for a request with probability R. The
draw is seeded (``seed``) and made from the request itself and how many times the same request came before,
so it does not depend on the order in which concurrent requests arrive: the same requests meet the same
faults in every run.

Billing: every request answered 200 with ``usage`` is billed its prompt and completion tokens as ``usage``
reports them (``billed`` keeps the totals per model). ``ledger``: a file that gets one JSON line per request
(its arrival time, model, digest, fault or ok, status, the tokens billed), written and flushed as the request
is answered (a fault: as it is drawn, a hang before it starts), so it survives a client that is killed. The
replies are deterministic functions of the request (the text and the JSON of the messages and the schema; only
the reply's ``id`` and ``created`` vary), so a run resumed after a kill gets the same text as one that was never
interrupted.

Asked for ``logprobs`` (with ``logprobs=True`` here, the default), it returns them in the OpenAI form: the
reply cut into tokens (runs of letters, single digits, single other characters), each digit 1-5 with a
fixed distribution over the digits 1-5 (``digit_probs``) and every other token with probability 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import uvicorn

Reply = Callable[[list[dict[str, Any]], dict[str, Any] | None], str]

FAULTS = (
    "ok", "400", "429", "500", "hang", "reset", "truncated", "invalid_json",
    "bad_output", "empty", "empty_length", "echo_key",
)  # fmt: skip
DEFAULT_MIX = ("429", "500", "hang", "reset", "invalid_json")
REPLIED = ("ok", "bad_output", "empty", "empty_length")  # answered 200 with a reply and its usage
FAULT_STATUS = {"400": 400, "429": 429, "500": 500, "echo_key": 401, "truncated": 200, "invalid_json": 200}
ERRORS = {"400": "bad request: unknown parameter", "429": "slow down", "500": "boom"}


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
    def __init__(
        self,
        latency_s: float = 0.0,
        reply: Reply = default_reply,
        *,
        logprobs: bool = True,
        timings: bool = False,
        fault_rate: float = 0.0,
        fault_mix: tuple[str, ...] | list[str] = DEFAULT_MIX,
        seed: int = 0,
        hang_s: float = 3600.0,
        ledger: Path | str | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.reply = reply
        self.logprobs = logprobs
        self.timings = timings  # answer with llama.cpp's ``timings`` (prompt tokens evaluated and reused, ms)
        self._last_prompt: list[str] = []  # the words of the last prompt: what a one-slot KV cache would hold
        self.faults: deque[str] = deque()
        unknown = [f for f in fault_mix if f not in FAULTS]
        if unknown or not 0.0 <= fault_rate <= 1.0 or (fault_rate > 0 and not fault_mix):
            raise ValueError(f"fault_rate must be in [0, 1] and fault_mix name faults of {FAULTS}; got {unknown}")
        self.fault_rate = fault_rate
        self.fault_mix = tuple(fault_mix)
        self.seed = seed
        self.hang_s = hang_s
        self._seen: Counter[str] = Counter()  # how many times each request (by digest) came
        # per model: requests, faults, billed (200 with usage), prompt_tokens, completion_tokens
        self.billed: dict[str, Counter[str]] = {}
        self._ledger: IO[str] | None = open(ledger, "a", encoding="utf-8") if ledger else None  # noqa: SIM115
        self.requests = 0
        self.completed = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self.keep_bodies = True
        self.port = _free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.adapters: dict[str, str] = {}  # LoRA adapters loaded at run time: name -> path

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
            if msg["type"] == "http.disconnect":  # the client died before its request was whole: no request
                return
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if scope["path"].endswith("/models"):
            ids = ["fake", *self.adapters]
            await _send(send, 200, json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}))
            return
        if scope["path"].endswith("/load_lora_adapter"):  # vLLM's (and SGLang's) runtime LoRA loading
            req = json.loads(body or b"{}")
            if not req.get("lora_name") or not req.get("lora_path"):
                await _send(send, 400, json.dumps({"error": {"message": "lora_name and lora_path are required"}}))
                return
            self.adapters[str(req["lora_name"])] = str(req["lora_path"])
            await _send(send, 200, json.dumps({"message": f"Success: LoRA adapter '{req['lora_name']}' added"}))
            return
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._complete(body, send, dict(scope.get("headers") or []))
        finally:
            self.in_flight -= 1

    def _draw_fault(self, body: bytes) -> tuple[str, str]:
        """The next queued fault, else a seeded draw from the request and how often it came before (so the
        draw does not depend on the order of concurrent requests); and the request's digest."""
        digest = hashlib.sha256(body).hexdigest()[:16]
        nth = self._seen[digest]
        self._seen[digest] += 1
        if self.faults:
            return self.faults.popleft(), digest
        if self.fault_rate > 0:
            rng = random.Random(f"{self.seed}|{digest}|{nth}")
            if rng.random() < self.fault_rate:
                return rng.choice(self.fault_mix), digest
        return "ok", digest

    def _bill(
        self,
        arrival: tuple[int, float],
        req: dict[str, Any],
        digest: str,
        fault: str,
        status: int | None,
        usage: dict[str, int],
    ) -> None:
        """Count one request, billed when it was answered 200 with usage; one line in the ledger, flushed
        (``arrival``: the request's number and when it came)."""
        model = str(req.get("model", ""))
        c = self.billed.setdefault(model, Counter())
        c["requests"] += 1
        billed = status == 200 and bool(usage)
        if billed:
            c["billed"] += 1
            c["prompt_tokens"] += int(usage.get("prompt_tokens", 0))
            c["completion_tokens"] += int(usage.get("completion_tokens", 0))
        if fault != "ok":
            c["faults"] += 1
        if self._ledger is not None:
            line = {
                "n": arrival[0],
                "t": arrival[1],
                "model": model,
                "request": digest,
                "fault": fault,
                "status": status,
                "billed": billed,
                "prompt_tokens": int(usage.get("prompt_tokens", 0)) if billed else 0,
                "completion_tokens": int(usage.get("completion_tokens", 0)) if billed else 0,
            }
            self._ledger.write(json.dumps(line) + "\n")
            self._ledger.flush()

    async def _complete(self, body: bytes, send: Any, headers: dict[bytes, bytes]) -> None:
        arrival = (self.requests, time.time())
        fault, digest = self._draw_fault(body)
        req = json.loads(body or b"{}")
        if self.keep_bodies:
            self.bodies.append(req)
        if fault not in REPLIED:  # no usage reaches the client: not billed
            self._bill(arrival, req, digest, fault, FAULT_STATUS.get(fault), {})
        if fault in ("hang", "reset"):
            if fault == "hang":
                await asyncio.sleep(self.hang_s)
            await _reset(send)
            return
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if fault not in REPLIED:
            await _send_fault(send, fault, headers)
            return
        answer = self._answer(req, fault)
        await _send(send, 200, json.dumps(answer))
        self._bill(arrival, req, digest, fault, 200, answer["usage"])

    def _answer(self, req: dict[str, Any], fault: str) -> dict[str, Any]:
        """The completion of a request answered 200: the reply (a canned one for ``bad_output`` and the empty
        faults) with its usage, and its logprobs and timings where asked for."""
        rf = req.get("response_format") or {}
        schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema")
        canned = {"bad_output": "this is not json at all", "empty": "", "empty_length": ""}
        text = canned[fault] if fault in canned else self.reply(req.get("messages", []), schema)
        self.completed += 1
        pt = sum(len(str(m.get("content", "")).split()) for m in req.get("messages", []))
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "length" if fault == "empty_length" else "stop"}  # fmt: skip
        if req.get("logprobs") and self.logprobs:
            choice["logprobs"] = logprobs_of(text, int(req.get("top_logprobs") or 0))
        usage = {"prompt_tokens": pt, "completion_tokens": len(text.split()), "total_tokens": pt + len(text.split())}
        answer: dict[str, Any] = {"id": f"fake-{self.requests}", "object": "chat.completion",
                                  "created": int(time.time()), "model": req.get("model", "fake"), "choices": [choice],
                                  "usage": usage}  # fmt: skip
        if self.timings:
            answer["timings"] = self._timings(req, usage["completion_tokens"])
        return answer

    def _timings(self, req: dict[str, Any], generated: int) -> dict[str, Any]:
        """llama.cpp's ``timings`` as one slot would give them: the words this prompt shares, from its start,
        with the last one are reused (``cache_n``), the rest evaluated (``prompt_n``), 1 ms a word read and
        2 ms a word written."""
        words = [w for m in req.get("messages", []) for w in str(m.get("content", "")).split()]
        same = 0
        for a, b in zip(words, self._last_prompt, strict=False):
            if a != b:
                break
            same += 1
        self._last_prompt = words
        evaluated = len(words) - same
        return {"cache_n": same, "prompt_n": evaluated, "prompt_ms": float(evaluated), "predicted_n": generated,
                "predicted_ms": 2.0 * generated}  # fmt: skip

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
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _reset(send: Any) -> None:
    """Close the request's connection without a response (a reset, where the socket allows it)."""
    cycle = getattr(send, "__self__", None)  # uvicorn's request cycle, which holds the connection's transport
    transport = getattr(cycle, "transport", None)
    if transport is None:  # not uvicorn's: a response cut off before its body, which closes the connection
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
        return
    if not transport.is_closing():
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    for _ in range(100):  # let uvicorn see the connection lost, so it does not answer 500 on it
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0.001)


async def _send_fault(send: Any, fault: str, headers: dict[bytes, bytes]) -> None:
    """The response of a fault answered without a reply: an error status, or a broken body."""
    if fault == "truncated":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"500")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b'{"id": "x", "cho', "more_body": False})
    elif fault == "invalid_json":
        await _send(send, 200, '{"id": "x", "choices": [ nope')
    elif fault == "echo_key":
        said = headers.get(b"authorization", b"").decode()
        await _send(send, 401, json.dumps({"error": {"message": f"invalid credentials: {said}"}}))
    else:
        retry = {"retry-after": "0.05"} if fault == "429" else None
        await _send(send, FAULT_STATUS[fault], json.dumps({"error": {"message": ERRORS[fault]}}), retry)


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
    """``python -m emoharbor.testing.fake_server --port P --latency S [--fault-rate R --fault-mix 429,500,...
    --seed N --hang-s S --ledger FILE]``: serve until killed."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0, help="probability of a fault per request")
    ap.add_argument("--fault-mix", default=",".join(DEFAULT_MIX), help=f"faults to draw from, of {','.join(FAULTS)}")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    ap.add_argument("--hang-s", type=float, default=30.0, help="how long a hang lasts before the connection closes")
    ap.add_argument("--ledger", default=None, help="append one JSON line per request (fault or billed) here")
    args = ap.parse_args()
    mix = tuple(f.strip() for f in args.fault_mix.split(",") if f.strip())
    try:
        srv = FakeOpenAIServer(
            latency_s=args.latency,
            fault_rate=args.fault_rate,
            fault_mix=mix,
            seed=args.seed,
            hang_s=args.hang_s,
            ledger=args.ledger,
        )
    except ValueError as e:
        ap.error(str(e))
    srv.keep_bodies = False
    if args.port:
        srv.port = args.port
    print(srv.base_url, flush=True)
    uvicorn.run(srv, host="127.0.0.1", port=srv.port, log_level="critical", timeout_keep_alive=30, backlog=4096)


if __name__ == "__main__":
    main()
