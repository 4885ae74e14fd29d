"""Benchmark: refine generation calls per second, three ways: a served model through its OpenAI-compatible
endpoint (the fake server, with a fixed latency per call, standing in for vLLM or SGLang) at concurrency 32;
the in-process ``hf`` backend decoding concurrent calls as batches; and the same one call at a time.

    python bench/refine_gen.py                        # 256 endpoint calls, 32 hf calls, replies of 32 tokens
    python bench/refine_gen.py --latency 0.5 --hidden 512 --layers 4

The hf model is a random tiny Llama built here (tests/evolve_helpers.py): its figures are this CPU's speed of
the decoding machinery, not of a real model; the endpoint's are of the client's concurrency (calls/s is bounded
by concurrency / latency).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import fake_server
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec


def asks(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "You are a kind listener."},
             {"role": "user", "content": f"I have not slept well for {i % 9 + 2} nights and work is piling up."}]
            for i in range(n)]  # fmt: skip


async def endpoint(n: int, concurrency: int, latency: float, max_tokens: int) -> float:
    with fake_server(latency) as url:  # in its own process, as a real server would be
        spec = ModelSpec(model="fake", base_url=url, concurrency=concurrency, max_tokens=max_tokens)
        async with ModelPool(cache_path=False) as pool:
            m = await pool.get(spec, "generator")
            gate = asyncio.Semaphore(concurrency)

            async def one(msgs: Any, i: int) -> None:
                async with gate:
                    await m.chat(msgs, seed=i)

            t = time.perf_counter()
            await asyncio.gather(*(one(x, i) for i, x in enumerate(asks(n))))
            return time.perf_counter() - t


async def hf(model: Any, tok: Any, n: int, batch: int, max_tokens: int) -> float:
    from emoharbor.models.hf import HFChatModel

    chat = HFChatModel.from_loaded(model, tok, name="bench", temperature=0.7, max_tokens=max_tokens, batch_size=batch)
    t = time.perf_counter()
    await asyncio.gather(*(chat.chat(x, seed=i) for i, x in enumerate(asks(n))))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoint-calls", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the fake server takes per call")
    ap.add_argument("--hf-calls", type=int, default=32)
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    a = ap.parse_args()
    import torch

    from emoharbor.models.hf import load_hf, resolve_hf
    from evolve_helpers import tiny_model_dir

    folder = tiny_model_dir(Path(tempfile.mkdtemp()) / "m", hidden=a.hidden, layers=a.layers)
    model, tok = load_hf(resolve_hf(str(folder)), device="cpu")
    rows = []
    dt = asyncio.run(endpoint(a.endpoint_calls, a.concurrency, a.latency, a.max_tokens))
    rows.append(
        (f"endpoint (fake server, {a.latency:.2f} s a call), concurrency {a.concurrency}", a.endpoint_calls, dt)
    )
    for b in [*a.batch, 1]:  # the best of three runs of each
        dt = min(asyncio.run(hf(model, tok, a.hf_calls, b, a.max_tokens)) for _ in range(3))
        rows.append((f"hf, batched {b} at a time" if b > 1 else "hf, one call at a time", a.hf_calls, dt))
    print(f"replies of up to {a.max_tokens} tokens; hf model: Llama {a.layers} layers, hidden {a.hidden} (random), "
          f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads")  # fmt: skip
    print(f"{'generation':58} {'calls':>6} {'seconds':>8} {'calls/s':>8}")
    for name, n, dt in rows:
        print(f"{name:58} {n:6d} {dt:8.2f} {n / dt:8.1f}")


if __name__ == "__main__":
    main()
