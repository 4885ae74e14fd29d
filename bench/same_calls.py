"""Whether two checkouts of emoharbor make the same model calls for one command, with no model: the command runs
once with each checkout's code against one fake OpenAI-compatible server (``emoharbor.testing``), each with an
empty call cache of its own, and the two caches' keys are compared (a key hashes a call's messages, model,
settings and prompt version). Equal keys: every call is the same, so on a real model at temperature 0 (and
from the same cache) the command's figures are the same. What a change that must leave a suite's figures
alone is checked with, e.g. the simulated user's reaction behind ``sensitivity`` and ``seekers``:

    python bench/same_calls.py OLD_CHECKOUT . -- sensitivity --esconv PATH/valid.jsonl --limit 24 --judge none

The command gets ``--model fake --base-url URL --api-key-env FAKE_API_KEY --quiet --run-dir DIR`` added
(``--flag-a=--user-model`` for a checkout whose command spells it so). Prints each side's call count and
how many are shared; exits 1 when they differ."""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from emoharbor.testing.fake_server import FakeOpenAIServer


def calls(checkout: Path, args: list[str], url: str, flag: str, work: Path) -> set[str]:
    cache = work / "cache"
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(cache), "PYTHONPATH": str(checkout.resolve() / "src"),
           "FAKE_API_KEY": "x"}  # fmt: skip
    cmd = [sys.executable, "-c", "from emoharbor.cli import main; main()", *args, flag, "fake", "--base-url", url,
           "--api-key-env", "FAKE_API_KEY", "--quiet", "--run-dir", str(work / "run")]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{checkout}: the command failed: {done.stderr.strip()[-400:]}")
    db = sqlite3.connect(cache / "calls.sqlite")
    try:
        return {r[0] for r in db.execute("SELECT key FROM calls")}  # models.cache.CallCache's table
    finally:
        db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="a checkout (its src/ is run)")
    ap.add_argument("b", type=Path, help="another checkout")
    for side in ("a", "b"):
        ap.add_argument(f"--flag-{side}", default="--model", help=f"the option naming the model in {side}'s command")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then emoharbor's command and its arguments")
    opts = ap.parse_args()
    args = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as srv:
        a = calls(opts.a, args, srv.base_url, opts.flag_a, Path(tmp) / "a")
        b = calls(opts.b, args, srv.base_url, opts.flag_b, Path(tmp) / "b")
    print(f"calls: {opts.a} {len(a)}, {opts.b} {len(b)}, the same {len(a & b)}, only in {opts.a} {len(a - b)}, "
          f"only in {opts.b} {len(b - a)}")  # fmt: skip
    return 0 if a == b else 1


if __name__ == "__main__":
    sys.exit(main())
