"""Benchmark: `emoharbor run` (the whole EmoHarbor pipeline) against a fake server.

    python bench/run_eval.py --profiles 100 --supporters 2 --concurrency 32 --latency 0.5
    python bench/run_eval.py --memory        # peak memory at 100 and 1,000 conversations

Prints the wall time against the ideal (the longest conversation's chain of calls, or calls x latency /
concurrency, whichever is larger), and calls and tokens per conversation. With --memory, runs each size
in a fresh process and prints its peak resident memory.
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
from pathlib import Path

from common import fake_server, peak_rss_mb
from emoharbor.config import RunConfig
from emoharbor.evaluate import run_evaluation
from emoharbor.store.run_store import RunStore


def config(url: str, supporters: int, concurrency: int, repeats: int, max_turns: int) -> RunConfig:
    fake = {"model": "fake", "base_url": url, "concurrency": concurrency, "timeout_s": 120}
    return RunConfig.model_validate(
        {
            "name": "bench",
            "roles": {"supporter": [{**fake, "name": f"s{i}"} for i in range(supporters)], "user": fake, "judge": fake},
            "profiles": ["builtin:*"],
            "repeats": repeats,
            "max_turns": max_turns,
            "concurrency": concurrency,
        }
    )


def one(url: str, a: argparse.Namespace, run_dir: Path) -> dict[str, float]:
    cfg = config(url, a.supporters, a.concurrency, a.repeats, a.max_turns)
    if a.profiles < 100:
        cfg.profiles = [f"builtin:p{i:03d}*" for i in range(1, a.profiles + 1)]
    t = time.perf_counter()
    asyncio.run(run_evaluation(cfg, run_dir, progress=False, cache_path=run_dir / "cache.sqlite"))
    wall = time.perf_counter() - t
    peak = peak_rss_mb()  # before the figures below read every call back into memory
    store = RunStore.open_existing(run_dir)
    convs = [k for k, _ in store.items("conversation")]
    calls = store.calls()
    longest = 0
    for key in convs:  # a conversation's calls and its assessments' (keyed by its parts, then the judge)
        longest = max(longest, sum(1 for x in calls if x["unit_key"][: len(key)] == key))
    store.close()
    return {
        "wall": wall,
        "conversations": len(convs),
        "calls": len(calls),
        "longest_chain": longest,
        "tokens": sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls),
        "peak_mb": peak,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", type=int, default=100)
    ap.add_argument("--supporters", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--max-turns", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--memory", action="store_true", help="peak memory at 100 and 1,000 conversations")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory:
        print(f"{'conversations':>14}{'peak MB':>10}{'wall s':>9}")
        for profiles, repeats in [(50, 1), (100, 5)]:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--json",
                    "--profiles",
                    str(profiles),
                    "--repeats",
                    str(repeats),
                    "--latency",
                    "0.005",
                    "--max-turns",
                    "4",
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=os.path.dirname(__file__),
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{r['conversations']:>14}{r['peak_mb']:>10.1f}{r['wall']:>9.1f}")
        return
    with fake_server(a.latency) as url, tempfile.TemporaryDirectory() as tmp:
        r = one(url, a, Path(tmp) / "run")
    if a.json:
        print(json.dumps(r))
        return
    ideal = max(r["calls"] * a.latency / a.concurrency, r["longest_chain"] * a.latency)
    n = r["conversations"]
    print(f"{n} conversations, {r['calls']} calls, concurrency {a.concurrency}, latency {a.latency * 1000:.0f} ms")
    print(
        f"calls per conversation {r['calls'] / n:.1f}, tokens per conversation {r['tokens'] / n:.0f}, "
        f"longest chain {r['longest_chain']} calls"
    )
    print(
        f"wall {r['wall']:.1f} s, ideal {ideal:.1f} s: {100 * ideal / r['wall']:.1f}% of ideal; "
        f"peak memory {r['peak_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
