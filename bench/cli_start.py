"""Benchmark: how long the command line takes to answer `--version` and `run --help` (a fresh interpreter
each time, the median of --repeats runs).

    python bench/cli_start.py                    # this checkout
    python bench/cli_start.py --src OTHER/src    # another checkout's source, same interpreter and packages
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def wall(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "emoharbor.cli", *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", help="put this source folder first on PYTHONPATH")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    env = dict(os.environ)
    if a.src:
        env["PYTHONPATH"] = a.src
    for args in (["--version"], ["run", "--help"]):
        wall(args, env)  # warm the file cache and the .pyc files
        times = [wall(args, env) for _ in range(a.repeats)]
        print(f"emoharbor {' '.join(args):12} median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {a.repeats} runs)")  # fmt: skip


if __name__ == "__main__":
    main()
