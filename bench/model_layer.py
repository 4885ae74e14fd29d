"""Benchmark: emoharbor's model layer against a bare loop of `openai` SDK calls, same calls, same
concurrency, against a fake server with a fixed latency per call, and against the ideal.

    python bench/model_layer.py --conversations 100 --calls-per-conversation 6 --concurrency 32 --latency 0.5

A "conversation" is a chain of calls made one after another; conversations run concurrently.
Ideal wall time = max(calls x latency / concurrency, calls per conversation x latency).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import openai

from common import fake_server
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec


def messages(conv: int, step: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a supportive listener."},
        {"role": "user", "content": f"conversation {conv}, message {step}: I had a hard day."},
    ]


async def with_emoharbor(url: str, n: int, k: int, concurrency: int, cache_dir: Path) -> float:
    spec = ModelSpec(model="fake", base_url=url, concurrency=concurrency, max_tokens=64, timeout_s=60)
    async with ModelPool(cache_path=cache_dir / "calls.sqlite") as pool:
        model = await pool.get(spec, "supporter")

        async def conversation(i: int) -> None:
            for step in range(k):
                await model.chat(messages(i, step))

        t = time.perf_counter()
        await asyncio.gather(*[conversation(i) for i in range(n)])
        return time.perf_counter() - t


async def with_bare_sdk(url: str, n: int, k: int, concurrency: int) -> float:
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=60)
    gate = asyncio.Semaphore(concurrency)

    async def conversation(i: int) -> None:
        for step in range(k):
            async with gate:
                await client.chat.completions.create(
                    model="fake",
                    messages=messages(i, step),
                    max_tokens=64,  # type: ignore[arg-type]
                    temperature=0.7,
                )

    t = time.perf_counter()
    await asyncio.gather(*[conversation(i) for i in range(n)])
    await client.close()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--calls-per-conversation", type=int, default=6)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.5)
    a = ap.parse_args()
    n, k, c, lat = a.conversations, a.calls_per_conversation, a.concurrency, a.latency
    calls = n * k
    ideal = max(calls * lat / c, k * lat)
    with fake_server(lat) as url, tempfile.TemporaryDirectory() as tmp:
        bare = asyncio.run(with_bare_sdk(url, n, k, c))
        ours = asyncio.run(with_emoharbor(url, n, k, c, Path(tmp)))
    print(f"{calls} calls ({n} conversations x {k}), concurrency {c}, latency {lat * 1000:.0f} ms per call")
    print(f"{'':22}{'wall s':>8}{'calls/s':>10}{'% of ideal':>12}")
    for name, wall in [("ideal", ideal), ("bare openai SDK loop", bare), ("emoharbor model layer", ours)]:
        print(f"{name:22}{wall:8.2f}{calls / wall:10.1f}{100 * ideal / wall:11.1f}%")
    print(f"emoharbor throughput = {100 * bare / ours:.1f}% of the bare SDK loop's")


if __name__ == "__main__":
    main()
