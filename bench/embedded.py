"""Benchmark of the embedded path: one fixed workload, shaped like the demo's and validate's, against each
server set-up of the embedded model, one after another; then llama.cpp's own ceiling on this machine.

    python bench/embedded.py                                  # every set-up below, Qwen2.5-1.5B, all cores
    python bench/embedded.py --setups native:4 --model local:smollm2 --conversations 2
    python bench/embedded.py --answers DIR                    # also write each set-up's answers (JSONL)
    python bench/embedded.py --compare DIR/a.jsonl DIR/b.jsonl  # the same calls' answers on two set-ups
    python bench/embedded.py --workload demo reward validate  # emoharbor's own commands (bench/workloads.py)
    python bench/embedded.py --workload reward --contexts 24 --replies 5 --busy  # with another process busy
    python bench/embedded.py --workload demo --draft          # the demo with the 0.5B drafting for the 1.5B
    EMOHARBOR_LOCAL_KV_UNIFIED=1 python bench/embedded.py --workload demo   # a server setting of the workloads

The workload: ``--conversations`` help-seekers (built-in profiles), each ``--turns`` supporter turns. Every
turn is the simulated user's chain (appraise and feel: JSON schemas with enums, the persona and the
conversation so far as a long shared prefix; express: free text on the same prefix) and the supporter's
reply (its own prefix); each conversation ends with a judge call (a JSON schema of ten integer scores, with
``top_logprobs`` 5, as ``scoring: expected`` asks). The transcript is fixed text, not the model's answers,
so every set-up gets the same requests, in the same order within a conversation, at temperature 0 with a
seed. Conversations run concurrently up to the set-up's requests-at-once, each one call after another.

Set-ups (``--setups``):
  ``llama-cpp-python``  what emoharbor ran before: ``python -m llama_cpp.server`` (llama-cpp-python
                        0.3.36, not a dependency any more: ``pip install 'llama-cpp-python[server]==0.3.36'``),
                        one server per role, one request at a time
  ``native:N``          llama.cpp's own server (xllamacpp), one server for every role, N slots, N at once;
                        ``+kvu`` one KV buffer for every slot, ``+cache=MIB`` host memory for evicted
                        prompts (0: none), ``+draft`` the 0.5B drafting (``native:4+kvu+draft``)

Printed per set-up: wall time, calls/s, prompt and completion tokens/s (as the server's usage counts them),
the prompt tokens the server evaluated (its own counter, where it has one: the rest came from its prefix
cache) and, step by step, the prompt tokens read afresh of all it was sent (its timings), the server's own
generation speed, peak memory of the server processes, and the answers' health (JSON that parsed, judge
answers whose tokens spell the reply). The ceiling: llama.cpp's prompt processing of a fresh 750-token prompt
and its generation of 128 tokens, alone and with N sequences at once, on the native server, same model and
threads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import workloads  # beside this file
from emoharbor.models.base import ChatModel, ChatResult
from emoharbor.models.cache import CallCache
from emoharbor.models.local import LocalServer, free_port, resolve_gguf, server_threads
from emoharbor.models.openai_compat import OpenAIChatModel, make_endpoints
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.profiles.loader import resolve_profiles
from emoharbor.simulate.chain_user import APPRAISAL_SCHEMA, FEEL_SCHEMA

ROLES = ("user", "supporter", "judge")
DIMENSIONS = ("warmth", "validation", "helpfulness", "attunement", "relief", "specificity", "memory",
              "need_alignment", "style_fit", "autonomy")  # fmt: skip
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {d: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for d in DIMENSIONS},
    "required": list(DIMENSIONS),
}
# ``--evidence``: the judge quotes its evidence for each score, as a judge card with ``evidence: true`` does (about
# 300 tokens written a call): the long answer a draft model would speed up, if any
EVIDENCE_SCHEMA = {
    "type": "object",
    "properties": {d: {"type": "object", "properties": {"evidence": {"type": "string"}, "score": {
        "type": "integer", "enum": [1, 2, 3, 4, 5]}}, "required": ["evidence", "score"]} for d in DIMENSIONS},
    "required": list(DIMENSIONS),
}  # fmt: skip
SEEKER_LINES = [
    "I don't even know where to start. Everything has been piling up and I can't sleep.",
    "It's mostly work. My manager keeps adding things and I feel like I'm failing at all of them.",
    "I guess I'm scared that if I say no, they'll think I can't handle the job.",
    "Maybe. I haven't told anyone how bad it's got, not even my partner.",
]
SUPPORTER_LINES = [
    "That sounds exhausting. What's been weighing on you most this week?",
    "Feeling like you're failing at everything is a heavy thing to carry. Which part hurts most?",
    "That fear makes sense when your job feels on the line. What would saying no look like for you?",
    "It took courage to say that here. What makes it hard to tell your partner?",
]


@dataclass
class Call:
    conversation: int
    step: str
    messages: list[dict[str, str]]
    role: str
    schema: dict[str, Any] | None = None
    max_tokens: int = 120
    top_logprobs: int = 0


def workload(conversations: int, turns: int, logprobs: str = "judge", evidence: bool = False) -> list[list[Call]]:
    """Each conversation's calls, in order; ``logprobs``: which calls ask for ``top_logprobs`` 5 (``judge``,
    as the product does, or ``all``, as the first try in the issue did); ``evidence``: the judge quotes its
    evidence for each score."""
    profiles = resolve_profiles(["builtin:*"])[:conversations]
    feel = FEEL_SCHEMA
    out = []
    for c, prof in enumerate(profiles):
        persona = "You are this person, talking to an online supporter:\n" + json.dumps(
            prof.model_dump(mode="json"), indent=1, ensure_ascii=False
        )
        calls: list[Call] = []
        said: list[str] = []
        for t in range(turns):
            said.append(f"You: {SEEKER_LINES[t % len(SEEKER_LINES)]}")
            said.append(f"Supporter: {SUPPORTER_LINES[t % len(SUPPORTER_LINES)]}")
            talk = "\n".join(said)
            base = [{"role": "system", "content": persona}, {"role": "user", "content": f"The conversation:\n{talk}"}]
            ask = [
                ("appraise", "How did the supporter's last message land for you? Answer in JSON.",
                 APPRAISAL_SCHEMA, 160),
                ("feel", "How do you feel after it? Answer in JSON.", feel, 100),
                ("express", "Write your next message to the supporter, in your own voice, one or two sentences.",
                 None, 80),
            ]  # fmt: skip
            for step, q, schema, mt in ask:
                msgs = [*base, {"role": "assistant", "content": "I have read it."}, {"role": "user", "content": q}]
                calls.append(Call(c, f"t{t}:{step}", msgs, "user", schema, mt, 5 if logprobs == "all" else 0))
            sup = [
                {"role": "system", "content": "You are a warm, attentive emotional supporter. Reply briefly."},
                {"role": "user", "content": talk.replace("You: ", "Seeker: ")},
            ]
            calls.append(Call(c, f"t{t}:supporter", sup, "supporter", None, 80, 5 if logprobs == "all" else 0))
        rubric = "Rate the supporter on each dimension from 1 (poor) to 5 (excellent): " + ", ".join(DIMENSIONS)
        rubric += ". For each, quote the words of the conversation that show it." if evidence else ""
        judge = [{"role": "system", "content": rubric}, {"role": "user", "content": "\n".join(said)}]
        schema, most = (EVIDENCE_SCHEMA, 420) if evidence else (JUDGE_SCHEMA, 160)
        calls.append(Call(c, "judge", judge, "judge", schema, most, 5))
        out.append(calls)
    return out


@dataclass
class Outcome:
    results: list[tuple[Call, ChatResult | None, str]] = field(default_factory=list)
    wall_s: float = 0.0
    peak_rss_mb: float = 0.0
    evaluated_prompt_tokens: int | None = None


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def drive(models: dict[str, ChatModel], convs: list[list[Call]], at_once: int, seed: int) -> Outcome:
    gate = asyncio.Semaphore(at_once)
    out = Outcome()

    async def one(calls: list[Call]) -> None:
        async with gate:
            for call in calls:
                try:
                    r = await models[call.role].chat(call.messages, json_schema=call.schema, max_tokens=call.max_tokens,
                                                     seed=seed, top_logprobs=call.top_logprobs)  # fmt: skip
                    out.results.append((call, r, ""))
                except Exception as e:  # counted and shown, never a score
                    out.results.append((call, None, str(e)[:200]))

    started = time.perf_counter()
    await asyncio.gather(*(one(c) for c in convs))
    out.wall_s = time.perf_counter() - started
    return out


def spec_for(model: str) -> ModelSpec:
    return ModelSpec(model=model, temperature=0.0, max_tokens=160, context_size=4096)


def native_setup(setup: str, model: str) -> tuple[int, ModelSpec]:
    """``native:N[+kvu][+cache=MIB][+draft]``: the slots, and the environment and model spec it asks for."""
    head, *extras = setup.split("+")
    slots = int(head.split(":")[1])
    os.environ["EMOHARBOR_LOCAL_SLOTS"] = str(slots)
    os.environ["EMOHARBOR_LOCAL_KV_UNIFIED"] = "1" if "kvu" in extras else "0"
    os.environ.pop("EMOHARBOR_LOCAL_CACHE_MIB", None)
    spec = spec_for(model)
    for e in extras:
        if e.startswith("cache="):
            os.environ["EMOHARBOR_LOCAL_CACHE_MIB"] = e.split("=")[1]
        elif e == "draft":
            spec = spec.model_copy(update={"draft": "local:qwen0.5b"})
        elif e != "kvu":
            raise SystemExit(f"set-up {setup!r}: {e!r} is not kvu, cache=MIB or draft")
    return slots, spec


async def run_native(setup: str, model: str, convs: list[list[Call]], seed: int) -> Outcome:
    slots, spec = native_setup(setup, model)
    async with ModelPool(cache_path=None) as pool:
        models: dict[str, ChatModel] = {r: await pool.get(spec, r) for r in ROLES}
        server = next(iter(pool._servers.values()))
        assert server.proc is not None
        out = await drive(models, convs, slots, seed)
        out.peak_rss_mb = vm_hwm_mb(server.proc.pid)
        out.evaluated_prompt_tokens = await evaluated_prompt_tokens(server.port)
    return out


async def evaluated_prompt_tokens(port: int | None) -> int | None:
    """The prompt tokens the native server evaluated (Prometheus ``llamacpp:prompt_tokens_total``)."""
    async with httpx.AsyncClient() as c:
        r = await c.get(f"http://127.0.0.1:{port}/metrics")
    for line in r.text.splitlines():
        if line.startswith("llamacpp:prompt_tokens_total"):
            return int(float(line.split()[-1]))
    return None


class OldServer:
    """``python -m llama_cpp.server`` as emoharbor ran it before (one request at a time)."""

    def __init__(self, path: Path, context_size: int) -> None:
        self.port = free_port()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1", "--port",
               str(self.port), "--n_ctx", str(context_size), "--n_threads", str(server_threads()),
               "--model_alias", "local"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    async def wait(self) -> None:
        async with httpx.AsyncClient(timeout=2.0) as c:
            for _ in range(600):
                if self.proc.poll() is not None:
                    raise RuntimeError("llama_cpp.server exited: is llama-cpp-python[server]==0.3.36 installed?")
                try:
                    if (await c.get(f"http://127.0.0.1:{self.port}/v1/models")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.25)
        raise RuntimeError("llama_cpp.server did not start")

    def stop(self) -> float:
        rss = vm_hwm_mb(self.proc.pid)
        self.proc.terminate()
        self.proc.wait()
        return rss


async def run_old(model: str, convs: list[list[Call]], seed: int) -> Outcome:
    spec = spec_for(model)
    gguf = resolve_gguf(model.removeprefix("local:"))
    servers = {r: OldServer(gguf.path, spec.context_size) for r in ROLES}  # one per role, as the pool did
    cache = CallCache(None)
    try:
        for s in servers.values():
            await s.wait()
        models: dict[str, ChatModel] = {}
        for r, s in servers.items():
            m = OpenAIChatModel(spec, cache=cache, endpoints=make_endpoints(spec, [f"http://127.0.0.1:{s.port}/v1"], 1),
                                json_mode="json_object", identity=gguf.identity)  # fmt: skip
            m.served_name = "local"
            models[r] = m
        out = await drive(models, convs, 1, seed)
    finally:
        out_rss = sum(s.stop() for s in servers.values())
    out.peak_rss_mb = out_rss
    return out


def health(out: Outcome) -> dict[str, Any]:
    ok = [(c, r) for c, r, _ in out.results if r is not None]
    parsed = 0
    for c, r in ok:
        if c.schema is not None:
            try:
                json.loads(r.text)
                parsed += 1
            except json.JSONDecodeError:
                pass
    judged = [(c, r) for c, r in ok if c.top_logprobs and c.schema is not None]
    spelled = sum(1 for _, r in judged if r.logprobs and "".join(t.token for t in r.logprobs) == r.text)
    cut = sum(1 for _, r in ok if r.finish_reason == "length")
    return {
        "calls": len(out.results),
        "errors": len(out.results) - len(ok),
        "json_parsed": f"{parsed}/{sum(1 for c, _ in ok if c.schema is not None)}",
        "logprobs_spell_reply": f"{spelled}/{len(judged)}",
        "cut_at_max_tokens": cut,
    }


def row(name: str, out: Outcome) -> dict[str, Any]:
    ok = [r for _, r, _ in out.results if r is not None]
    pt = sum(r.usage.prompt_tokens for r in ok)
    ct = sum(r.usage.completion_tokens for r in ok)
    timed = [r.timings for r in ok if r.timings is not None and r.timings.generated_ms > 0]
    gen_ms = sum(t.generated_ms for t in timed)
    ev = out.evaluated_prompt_tokens
    afresh: dict[str, list[int]] = {}  # step -> [prompt tokens read afresh, prompt tokens], the server's timings
    for c, r, _ in out.results:
        if r is not None and r.timings is not None:
            a = afresh.setdefault(c.step.split(":")[-1], [0, 0])
            a[0] += r.timings.prompt_evaluated
            a[1] += r.usage.prompt_tokens
    return {
        "setup": name,
        "wall_s": round(out.wall_s, 1),
        "calls_per_s": round(len(ok) / out.wall_s, 3),
        "prompt_tok_per_s": round(pt / out.wall_s, 1),
        "evaluated_prompt_tok_per_s": round(ev / out.wall_s, 1) if ev is not None else None,
        "completion_tok_per_s": round(ct / out.wall_s, 1),
        # the server's own: tokens generated over the milliseconds it spent generating them, summed over calls
        "server_gen_tok_per_s": round(sum(t.generated for t in timed) / gen_ms * 1000, 1) if gen_ms else None,
        "prompt_tokens": pt,
        "completion_tokens": ct,
        "peak_rss_mb": round(out.peak_rss_mb),
        **health(out),
        "afresh_by_step": " ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(afresh.items())) or None,
    }


async def ceiling(model: str, slots: int) -> dict[str, float]:
    """llama.cpp's own speed on this machine (its timings), on the native server with ``slots`` slots."""
    os.environ["EMOHARBOR_LOCAL_SLOTS"] = str(slots)
    for knob in ("EMOHARBOR_LOCAL_KV_UNIFIED", "EMOHARBOR_LOCAL_CACHE_MIB"):  # the defaults, whatever ran before
        os.environ.pop(knob, None)
    gguf = resolve_gguf(model.removeprefix("local:"))
    server = LocalServer(gguf, context_size=4096, slots=slots)
    await server.start()
    url = f"http://127.0.0.1:{server.port}/completion"
    words = " ".join(f"word{i}" for i in range(250))  # about 750 fresh tokens, as long as a chain call's prompt

    async def call(c: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
        r = await c.post(url, json={"cache_prompt": False, "temperature": 0, **body}, timeout=600)
        return dict(r.json())

    try:
        async with httpx.AsyncClient() as c:
            await call(c, {"prompt": "warm up", "n_predict": 4})
            pp1 = (await call(c, {"prompt": words, "n_predict": 1}))["timings"]["prompt_per_second"]
            tg1 = (await call(c, {"prompt": "Count:", "n_predict": 128, "ignore_eos": True}))["timings"]
            t0 = time.perf_counter()
            many = await asyncio.gather(*(call(c, {"prompt": f"{i} {words}", "n_predict": 1}) for i in range(slots)))
            pp_n = sum(m["timings"]["prompt_n"] for m in many) / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            gens = await asyncio.gather(
                *(call(c, {"prompt": f"Count {i}:", "n_predict": 128, "ignore_eos": True}) for i in range(slots))
            )
            tg_n = sum(g["timings"]["predicted_n"] for g in gens) / (time.perf_counter() - t0)
    finally:
        server.stop()
    return {
        "prompt_tok_per_s_1": round(pp1, 1),
        f"prompt_tok_per_s_{slots}_at_once": round(pp_n, 1),
        "gen_tok_per_s_1": round(tg1["predicted_per_second"], 1),
        f"gen_tok_per_s_{slots}_at_once": round(tg_n, 1),
    }


def write_answers(path: Path, out: Outcome) -> None:
    with path.open("w") as f:
        for c, r, err in sorted(out.results, key=lambda x: (x[0].conversation, x[0].step)):
            f.write(json.dumps({"conversation": c.conversation, "step": c.step, "text": r.text if r else None,
                                "error": err}) + "\n")  # fmt: skip


def compare(a: Path, b: Path) -> None:
    """How many of the same calls got the same answer on two set-ups; judge scores compared one by one."""
    ra = {(d["conversation"], d["step"]): d for d in map(json.loads, a.read_text().splitlines())}
    rb = {(d["conversation"], d["step"]): d for d in map(json.loads, b.read_text().splitlines())}
    keys = sorted(ra.keys() & rb.keys())
    same = [k for k in keys if ra[k]["text"] == rb[k]["text"]]
    print(f"{len(same)} of {len(keys)} calls answered the same text")
    by_step: dict[str, list[bool]] = {}
    for k in keys:
        by_step.setdefault(k[1].split(":")[-1], []).append(ra[k]["text"] == rb[k]["text"])
    for step, v in sorted(by_step.items()):
        print(f"  {step:10} {sum(v)}/{len(v)} the same")
    diffs, n = 0, 0
    for k in keys:
        if k[1] == "judge" and ra[k]["text"] and rb[k]["text"]:
            try:
                sa, sb = json.loads(ra[k]["text"]), json.loads(rb[k]["text"])
            except json.JSONDecodeError:
                print(f"  judge of conversation {k[0]}: an answer that is not JSON (cut at max_tokens?)")
                continue
            sa, sb = ({d: v["score"] if isinstance(v, dict) else v for d, v in x.items()} for x in (sa, sb))
            for d in DIMENSIONS:
                n += 1
                diffs += abs(int(sa[d]) - int(sb[d]))
            print(f"  judge of conversation {k[0]}: {[sa[d] for d in DIMENSIONS]} vs {[sb[d] for d in DIMENSIONS]}")
    if n:
        print(f"  judge scores: mean absolute difference {diffs / n:.2f} over {n} scores")


def table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    widths = [max(len(str(c)), *(len(str(r.get(c))) for r in rows)) for c in cols]
    lines = [" | ".join(str(c).ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines.append("-|-".join("-" * w for w in widths))
    lines += [" | ".join(str(r.get(c)).ljust(w) for c, w in zip(cols, widths, strict=True)) for r in rows]
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:qwen1.5b")
    ap.add_argument("--setups", nargs="*", default=["llama-cpp-python", "native:1", "native:2", "native:4", "native:8"])
    ap.add_argument("--conversations", type=int, default=4)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--logprobs", choices=["judge", "all"], default="judge", help="which calls ask for top_logprobs")
    ap.add_argument("--evidence", action="store_true", help="the judge quotes evidence for each score (~300 tokens)")
    ap.add_argument("--ceiling-slots", type=int, default=4, help="sequences at once for the ceiling; 0: no ceiling")
    ap.add_argument("--answers", type=Path, help="write each set-up's answers here, one JSONL file per set-up")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--workload", nargs="*", choices=workloads.WORKLOADS,
                    help="instead of the fixed workload, emoharbor's own commands (bench/workloads.py)")  # fmt: skip
    ap.add_argument("--esconv", type=Path, default=Path("../shared/data/esconv/valid.jsonl"),
                    help="--workload reward and validate: the ESConv file")  # fmt: skip
    ap.add_argument("--contexts", type=int, default=24, help="--workload reward: contexts; validate: conversations")
    ap.add_argument("--replies", type=int, default=5, help="--workload reward: replies to each context (1-5)")
    ap.add_argument("--busy", action="store_true", help="--workload: one other process busy on one core meanwhile")
    ap.add_argument("--draft", action="store_true", help="--workload demo: every model with the 0.5B drafting")
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare)
        return
    if a.workload:
        workloads.main(a)
        return
    convs = workload(a.conversations, a.turns, a.logprobs, a.evidence)
    n_calls = sum(len(c) for c in convs)
    print(f"workload: {a.conversations} conversations x {a.turns} turns, {n_calls} calls, top_logprobs on "
          f"{a.logprobs} calls; model {a.model}; "
          f"{server_threads()} threads; {os.cpu_count()} cores", flush=True)  # fmt: skip
    rows = []
    for s in a.setups:
        out = await (run_old(a.model, convs, a.seed) if s == "llama-cpp-python"
                     else run_native(s, a.model, convs, a.seed))  # fmt: skip
        rows.append(row(s, out))
        print(json.dumps(rows[-1]), flush=True)
        if a.answers:
            a.answers.mkdir(parents=True, exist_ok=True)
            write_answers(a.answers / f"{s.replace(':', '-').replace('+', '_').replace('=', '')}.jsonl", out)
    if rows:
        print()
        print(table(rows))
    if a.ceiling_slots:
        print()
        print("ceiling (llama.cpp's own timings, native server):", json.dumps(await ceiling(a.model, a.ceiling_slots)))


if __name__ == "__main__":
    asyncio.run(main())
