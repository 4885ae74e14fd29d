"""The real workloads of the embedded model, for ``bench/embedded.py --workload``: emoharbor's own commands, with
the real prompt files, run as a new user runs them, each in a fresh run folder with an empty call cache (the
assembled model file is shared, so no workload pays for assembling it), one after another.

- ``demo``: ``emoharbor demo`` (with ``--draft``: ``emoharbor run`` on the demo's config with the 0.5B drafting
  for every model).
- ``reward``: ``emoharbor reward`` on ``--contexts`` ESConv contexts cut as the sensitivity suite cuts them
  (``sensitivity.cases.esconv_cut``: the third seeker turn or later, about 1,000 prompt tokens a call), with
  ``--replies`` replies each: the real reply and rule-made bad ones (``sensitivity.bad``).
- ``validate``: ``emoharbor validate`` replaying ``--contexts`` ESConv conversations (4 supporter turns) and
  rating them by the user-judge and a third-party judge.

Printed for each: the wall time, the command's own closing table of where the model's time went (the
server's timings per role and prompt file: prompt tokens evaluated and reused, tokens generated, seconds),
the peak memory of the largest process (the model server), and what the same workload measured before
(``BEFORE``, with where it was measured). ``--busy`` runs a second process spinning on one core for the
whole workload: a machine that is not idle.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from emoharbor.models.cache import default_cache_dir
from emoharbor.sensitivity.bad import bad_replies
from emoharbor.sensitivity.cases import Pool, esconv_cases

WORKLOADS = ("demo", "reward", "validate")
BAD = ["generic", "dismissive", "advice", "off_target"]  # with the real reply: 5 replies to each context
# What each workload took before, as measured on this project's 2-core machines (docs/embedded.md)
BEFORE = {
    "demo": "12 min 32 s, 53 calls (issue 34, native server with 4 slots, judges with evidence, fresh clone)",
    "reward": "21.7 s a reply on the native server with 4 slots; 13 s on the sequential llama-cpp-python server "
    "(24 contexts x 5 replies, issue 34)",
    "validate": "about 2 minutes a conversation (10 calls; docs/embedded.md)",
}


def reward_file(esconv: Path, contexts: int, replies: int, out: Path) -> int:
    """The reward workload's input: ``contexts`` cases of ``esconv``, each with its real reply and
    ``replies - 1`` bad ones. Returns the number of replies written."""
    pool = Pool()
    cases = esconv_cases(esconv, 40, pool)[:contexts]
    n = 0
    with out.open("w", encoding="utf-8") as f:
        for c in cases:
            bad = bad_replies(c, pool, BAD[: replies - 1])
            texts = [c.real, *bad.values()]
            n += len(texts)
            f.write(json.dumps({"context": c.context.to_dict(), "replies": texts}, ensure_ascii=False) + "\n")
    return n


def drafted_demo(out: Path) -> Path:
    """The demo's config with the 0.5B drafting for every model (``draft: local:qwen0.5b``), written to ``out``."""
    cfg = yaml.safe_load(resources.files("emoharbor").joinpath("demo.yaml").read_text(encoding="utf-8"))
    roles = cfg["roles"]
    for s in roles["supporter"]:
        s["draft"] = "local:qwen0.5b"
    for role in ("user", "judge"):
        roles[role] = {"model": roles[role], "draft": "local:qwen0.5b"}
    out.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return out


def command(workload: str, a: Any, work: Path) -> tuple[list[str], int]:
    """The emoharbor command line of ``workload`` and how many units it does (conversations or replies)."""
    exe = [sys.executable, "-m", "emoharbor.cli"]
    if workload == "demo" and a.draft:
        return [*exe, "run", str(drafted_demo(work / "demo.yaml")), "--run-dir", str(work / "run"), "--quiet"], 4
    if workload == "demo":
        return [*exe, "demo", "--run-dir", str(work / "run"), "--quiet"], 4
    if workload == "reward":
        n = reward_file(a.esconv, a.contexts, a.replies, work / "replies.jsonl")
        return [*exe, "reward", str(work / "replies.jsonl"), "--out", str(work / "rewards.jsonl"),
                "--quiet"], n  # fmt: skip
    return [*exe, "validate", "--esconv", str(a.esconv), "--limit", str(a.contexts), "--judge", "user",
            "--judge", "third_party", "--run-dir", str(work / "run"), "--quiet"], a.contexts  # fmt: skip


def busy() -> subprocess.Popen[bytes]:
    """A second process spinning on one core until the workload ends."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run(workload: str, a: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{workload}-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        cache.mkdir()
        models = default_cache_dir() / "models"
        if models.is_dir():  # the assembled model, not the calls: every call is made afresh
            (cache / "models").symlink_to(models)
        cmd, units = command(workload, a, work)
        env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(cache)}
        spinner = busy() if a.busy else None
        started = time.perf_counter()
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
        wall = time.perf_counter() - started
    at = done.stderr.find("Where the model's time went")
    timings = done.stderr[at:].strip() if at >= 0 else ""
    # the largest of the processes waited for: the model server (Linux reports kB)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"workload": workload, "busy": a.busy, "exit": done.returncode, "wall_s": round(wall, 1), "units": units,
            "s_per_unit": round(wall / max(units, 1), 1), "peak_mb": round(peak_mb), "before": BEFORE[workload],
            "timings": timings, "tail": "" if done.returncode == 0 else done.stderr[-2000:]}  # fmt: skip


def main(a: Any) -> None:
    for w in a.workload:
        r = run(w, a)
        print(f"== {w}{' (one other process busy)' if r['busy'] else ''}: {r['wall_s']} s, {r['units']} units, "
              f"{r['s_per_unit']} s a unit, peak memory {r['peak_mb']} MB, exit {r['exit']}")  # fmt: skip
        print(f"   before: {r['before']}")
        if r["timings"]:
            print(r["timings"])
        if r["tail"]:
            print(r["tail"])
        print(flush=True)
