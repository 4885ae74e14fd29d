"""Benchmark: a run through a faulty endpoint that is SIGKILLed and resumed, against one never interrupted.

    python bench/faults.py                                  # 4 profiles, 2 supporters, fault rate 0.25
    python bench/faults.py --fault-rate 0.4 --max-turns 2 --kill-after 0.3

A fake OpenAI-compatible server (``python -m emoharbor.testing.fake_server``) answers the supporters, the
user and the judges, and draws a fault for a request with probability ``--fault-rate`` (429, 500, hang,
connection reset, invalid JSON): seeded, and drawn from the request itself, so both runs meet the same
faults. Every request it answers 200 with usage is billed, one line per request in its ledger.

Run A goes through uninterrupted. Run B (its own run folder, cache folder and server with its own ledger)
is SIGKILLed, process group and all, once some of its units are stored, then started again with the same
command to the end. Then:

- the result records of A and B must be equal, kind by kind and key by key, apart from timings;
- for each run, what the store says was spent (``usage_by_role``: requests that reached the server, retries,
  tokens and cost of the calls not served from the cache) must equal what the server's ledger billed over
  all sessions. For B, the requests of the calls in flight at the kill are taken out: their failed attempts
  reached the server, but the call never ended, so no client could record them; the kill is timed by the
  store, so the same call is made again from its first attempt in the second session.

Exits 1 if the stores differ or a figure does not match.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import yaml

from emoharbor.models.local import free_port
from emoharbor.store.run_store import RunStore

T = TypeVar("T")

DEFAULT_MIX = "429,500,hang,reset,invalid_json"
KEY_ENV = "EMOHARBOR_FAKE_KEY"  # the fake server takes any key: the config names a variable, as for a real API
# USD per million tokens, one price per role (the two supporters share theirs)
PRICES = {
    "supporter": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
    "user": {"input_per_mtok": 0.15, "output_per_mtok": 0.6},
    "judge": {"input_per_mtok": 2.5, "output_per_mtok": 10.0},
}
# Fields of a result record that are timings, matched by name at any depth. The one that differs between A and B
# is a conversation's `wall_s`: its wall-clock time, here mostly retries, backoff and timeouts waited out, which
# differ between any two runs (and in B a redone unit's clock starts again). Every other field is compared, and any
# field that differs is reported, so a new timing field would show up as a difference. The results table's
# `created` column (when a record was written) is not part of a record and is not compared.
TIMING_FIELDS = frozenset({"wall_s"})


@dataclass
class Settings:
    profiles: list[str] = field(default_factory=lambda: ["builtin:p00[1-4]*"])
    supporters: int = 2
    max_turns: int = 3
    fault_rate: float = 0.25
    fault_mix: str = DEFAULT_MIX
    seed: int = 7
    timeout_s: float = 2.0  # a hang lasts hang_s, far longer: the client's timeout beats it
    hang_s: float = 30.0
    max_retries: int = 20  # the most a model spec allows: at rate 0.25, 21 faults in a row is ~2e-13
    concurrency: int = 16
    kill_after: float = 0.4  # kill B once this share of A's units is stored in B


# -- the fake server -----------------------------------------------------------------------------


@contextmanager
def fake_server(ledger: Path, s: Settings) -> Iterator[str]:
    """The fake server in its own process (its own session: a kill of the run's process group spares it),
    appending to ``ledger``; yields its base URL."""
    port = free_port()
    argv = [sys.executable, "-m", "emoharbor.testing.fake_server", "--port", str(port)]
    argv += ["--fault-rate", str(s.fault_rate), "--fault-mix", s.fault_mix, "--seed", str(s.seed)]
    argv += ["--hang-s", str(s.hang_s), "--ledger", str(ledger)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 20
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()  # not a chat request: not in the ledger
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the fake server did not start") from None
                time.sleep(0.1)
        yield url
    finally:  # killed, not stopped: a graceful stop would wait out the hangs; the ledger is flushed line by line
        proc.kill()
        proc.wait()


# -- the run -------------------------------------------------------------------------------------


def model_names(s: Settings) -> dict[str, str]:
    """Model name -> role: each role's model has its own name, so the ledger tells the roles apart."""
    names = {f"fake-supporter-{i}": "supporter" for i in range(s.supporters)}
    return {**names, "fake-user": "user", "fake-judge": "judge"}


def write_config(path: Path, url: str, s: Settings) -> Path:
    def spec(model: str, role: str, **more: Any) -> dict[str, Any]:
        return {
            "model": model,
            "base_url": url,
            "api_key_env": KEY_ENV,
            "max_retries": s.max_retries,
            "timeout_s": s.timeout_s,
            "concurrency": s.concurrency,
            "price": dict(PRICES[role]),
            **more,
        }

    cfg = {
        "name": "faults",
        "roles": {
            "supporter": [spec(f"fake-supporter-{i}", "supporter", name=f"s{i}") for i in range(s.supporters)],
            "user": spec("fake-user", "user"),
            "judge": spec("fake-judge", "judge", temperature=0.0),
        },
        "profiles": s.profiles,
        "repeats": 1,
        "max_turns": s.max_turns,
        "concurrency": s.concurrency,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def emoharbor_argv(config: Path, run_dir: Path) -> list[str]:
    exe = Path(sys.executable).with_name("emoharbor")
    head = [str(exe)] if exe.exists() else [sys.executable, "-c", "from emoharbor.cli import main; main()"]
    return [*head, "run", str(config), "--run-dir", str(run_dir), "--quiet"]


def run_env(cache_dir: Path) -> dict[str, str]:
    return {**os.environ, "EMOHARBOR_CACHE_DIR": str(cache_dir), KEY_ENV: "sk-fake-0123456789"}


def run_to_end(config: Path, run_dir: Path, cache_dir: Path, log: Path) -> float:
    t = time.perf_counter()
    with log.open("a") as out:
        rc = subprocess.run(
            emoharbor_argv(config, run_dir), env=run_env(cache_dir), stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    if rc != 0:
        raise RuntimeError(f"emoharbor run {run_dir} exited {rc}:\n{log.read_text()[-3000:]}")
    return time.perf_counter() - t


def stored_units(run_dir: Path) -> int:
    """How many result records the store holds now, read without writing (the run may be writing)."""
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            con.close()
    except sqlite3.DatabaseError:  # not created yet
        return 0


@dataclass
class Kill:
    at: float  # time.time() after the kill and before the second session: the ledger's lines before it are the first's
    after_s: float
    stored: int  # result records in the store after the kill
    total: int  # result records of the whole run (A's)
    usage: Figures  # what the store said was spent, right after the kill


def run_killed(config: Path, run_dir: Path, cache_dir: Path, log: Path, total: int, share: float) -> Kill:
    """Start the run; SIGKILL its process group once ``share`` of ``total`` units are stored."""
    want = max(1, math.ceil(total * share))
    t = time.perf_counter()
    with log.open("a") as out:
        proc = subprocess.Popen(
            emoharbor_argv(config, run_dir), env=run_env(cache_dir), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            while stored_units(run_dir) < want and proc.poll() is None:
                time.sleep(0.05)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
    if proc.returncode != -signal.SIGKILL:
        raise RuntimeError(
            f"run B ended (exit {proc.returncode}) before it could be killed:\n{log.read_text()[-3000:]}"
        )
    store = RunStore.open_existing(run_dir)
    try:
        stored = units_in(store)
        usage = store_figures(store)
    finally:
        store.close()
    after_s = time.perf_counter() - t
    time.sleep(0.5)  # the server has handled whatever the killed session sent before it died
    return Kill(time.time(), after_s, stored, total, usage)


# -- comparing -----------------------------------------------------------------------------------


def units_in(store: RunStore) -> int:
    """The units a run holds: its records that say how they ended (not the run's profiles, which do not)."""
    return sum(len(store.field(k, "status")) for k in store.unit_tables())


def read_store(run_dir: Path, read: Callable[[RunStore], T]) -> T:
    """``read`` on the run store in ``run_dir``, opened for it and closed after."""
    store = RunStore.open_existing(run_dir)
    try:
        return read(store)
    finally:
        store.close()


def records(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    store = RunStore.open_existing(run_dir)
    try:
        return {(kind, key): data for kind in store.tables() for key, data in store.items(kind)}
    finally:
        store.close()


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """The paths at which two records differ, timings included."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str) for p in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "."]


def is_timing(path: str) -> bool:
    return any(part.split("[")[0] in TIMING_FIELDS for part in path.split("."))


@dataclass
class Comparison:
    only_a: list[tuple[str, str]]
    only_b: list[tuple[str, str]]
    differing: dict[tuple[str, str], list[str]]  # not timings
    timing_paths: Counter[str]  # timing fields that differed (path without the list indices), and how often

    @property
    def equal(self) -> bool:
        return not (self.only_a or self.only_b or self.differing)


def compare_stores(a: Path, b: Path) -> Comparison:
    ra, rb = records(a), records(b)
    differing: dict[tuple[str, str], list[str]] = {}
    timing: Counter[str] = Counter()
    for k in sorted(set(ra) & set(rb)):
        paths = differences(ra[k], rb[k])
        for p in paths:
            if is_timing(p):
                timing[f"{k[0]}:{p.split('[')[0]}"] += 1
        rest = [p for p in paths if not is_timing(p)]
        if rest:
            differing[k] = rest
    return Comparison(sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra)), differing, timing)


@dataclass
class Figures:
    requests: int = 0  # that reached the server
    retries: int = 0  # requests that failed and were tried again (the ledger: requests not billed)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    errors: int = 0  # calls that failed for good (store) / requests not billed (ledger)

    def __sub__(self, o: Figures) -> Figures:
        return Figures(*(getattr(self, f.name) - getattr(o, f.name) for f in fields(self)))

    def mismatches(self, o: Figures) -> list[str]:
        """The figures that differ (errors aside)."""
        out = []
        for f in ("requests", "retries", "prompt_tokens", "completion_tokens"):
            if getattr(self, f) != getattr(o, f):
                out.append(f)
        if not math.isclose(self.cost_usd, o.cost_usd, rel_tol=1e-9, abs_tol=1e-12):
            out.append("cost_usd")
        return out


def store_figures(store: RunStore) -> Figures:
    """Spent, not cached: summed over the roles of ``usage_by_role``."""
    f = Figures()
    for u in store.usage_by_role().values():
        f.requests += int(u["requests"])
        f.retries += int(u["retries"])
        f.prompt_tokens += int(u["prompt_tokens"])
        f.completion_tokens += int(u["completion_tokens"])
        f.cost_usd += u["cost_usd"]
        f.errors += int(u["errors"])
    return f


def read_ledger(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ledger_figures(lines: list[dict[str, Any]], roles: dict[str, str]) -> Figures:
    """What the server saw and billed; the cost at each role's price (as the client prices a call)."""
    f = Figures()
    for x in lines:
        f.requests += 1
        if x["billed"]:
            price = PRICES[roles[x["model"]]]
            pt, ct = int(x["prompt_tokens"]), int(x["completion_tokens"])
            f.prompt_tokens += pt
            f.completion_tokens += ct
            f.cost_usd += (pt * price["input_per_mtok"] + ct * price["output_per_mtok"]) / 1e6
        else:
            f.retries += 1  # every call ends on a billed reply here, so each unbilled request was retried
            f.errors += 1
    return f


def in_flight_at_kill(lines: list[dict[str, Any]], boundary: float) -> list[dict[str, Any]]:
    """The requests of the calls that had not ended when the run was killed. Identical requests are made once
    per session (a second is served from the cache, or merged with the one in flight), so a request's attempts
    in one session are one call: a call whose attempts before the kill include no billed reply never ended; nor
    did one whose request came again after the kill (its reply was billed, but the client died before it had
    it: it was not cached)."""
    before: dict[str, list[dict[str, Any]]] = defaultdict(list)
    after: set[str] = set()
    for x in lines:
        if x["t"] < boundary:
            before[x["request"]].append(x)
        else:
            after.add(x["request"])
    return [x for req, xs in before.items() if not any(y["billed"] for y in xs) or req in after for x in xs]


# -- the bench -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    units_a: int
    units_b: int
    comparison: Comparison
    kill: Kill
    store_a: Figures
    ledger_a: Figures
    store_b: Figures
    ledger_b: Figures  # both sessions
    in_flight: Figures  # of B's ledger: the calls in flight at the kill
    session1_ledger: Figures  # of B's ledger: before the kill, less the calls in flight
    wall_a: float
    wall_b: float

    @property
    def problems(self) -> list[str]:
        out = []
        if not self.comparison.equal:
            out.append("the stores differ")
        if not 0 < self.kill.stored < self.kill.total:
            out.append(f"the kill did not fall mid-run ({self.kill.stored} of {self.kill.total} units stored)")
        if bad := self.store_a.mismatches(self.ledger_a):
            out.append(f"A: the store and the ledger differ in {', '.join(bad)}")
        if bad := self.store_b.mismatches(self.ledger_b - self.in_flight):
            out.append(f"B: the store and the ledger (less the calls in flight at the kill) differ in {', '.join(bad)}")
        if self.store_a.errors or self.store_b.errors:
            out.append(f"calls failed for good (A {self.store_a.errors}, B {self.store_b.errors}): raise max_retries")
        return out


def bench(work: Path, s: Settings) -> Outcome:
    work.mkdir(parents=True, exist_ok=True)
    roles = model_names(s)
    with fake_server(work / "ledger-a.jsonl", s) as url:
        config = write_config(work / "config-a.yaml", url, s)
        wall_a = run_to_end(config, work / "A", work / "cache-a", work / "run-a.log")
    units_a = read_store(work / "A", units_in)
    with fake_server(work / "ledger-b.jsonl", s) as url:
        config = write_config(work / "config-b.yaml", url, s)
        t = time.perf_counter()
        kill = run_killed(config, work / "B", work / "cache-b", work / "run-b.log", units_a, s.kill_after)
        run_to_end(config, work / "B", work / "cache-b", work / "run-b.log")
        wall_b = time.perf_counter() - t
    lines_b = read_ledger(work / "ledger-b.jsonl")
    in_flight = in_flight_at_kill(lines_b, kill.at)
    ids = {id(x) for x in in_flight}
    session1 = [x for x in lines_b if x["t"] < kill.at and id(x) not in ids]
    return Outcome(
        units_a=units_a,
        units_b=read_store(work / "B", units_in),
        comparison=compare_stores(work / "A", work / "B"),
        kill=kill,
        store_a=read_store(work / "A", store_figures),
        ledger_a=ledger_figures(read_ledger(work / "ledger-a.jsonl"), roles),
        store_b=read_store(work / "B", store_figures),
        ledger_b=ledger_figures(lines_b, roles),
        in_flight=ledger_figures(in_flight, roles),
        session1_ledger=ledger_figures(session1, roles),
        wall_a=wall_a,
        wall_b=wall_b,
    )


def table(o: Outcome) -> str:
    cols = [
        ("A store", o.store_a),
        ("A ledger", o.ledger_a),
        ("B store", o.store_b),
        ("B ledger", o.ledger_b),
        ("in flight", o.in_flight),
        ("B ledger-if", o.ledger_b - o.in_flight),
    ]
    rows = [
        ("requests", "requests", "d"),
        ("retries", "retries", "d"),
        ("prompt tokens", "prompt_tokens", "d"),
        ("completion tokens", "completion_tokens", "d"),
        ("cost USD", "cost_usd", ".6f"),
    ]
    out = [f"{'':18}" + "".join(f"{name:>13}" for name, _ in cols)]
    for label, attr, fmt in rows:
        out.append(f"{label:18}" + "".join(f"{format(getattr(f, attr), fmt):>13}" for _, f in cols))
    return "\n".join(out)


def report(o: Outcome) -> str:
    c, k = o.comparison, o.kill
    lines = [
        f"units: A {o.units_a}, B {o.units_b}; B killed after {k.after_s:.1f} s with {k.stored} of {k.total} stored",
        f"wall: A {o.wall_a:.1f} s; B {o.wall_b:.1f} s (both sessions)",
        f"result records equal (by kind and key, timings aside): {'yes' if c.equal else 'NO'}",
    ]
    if c.timing_paths:
        lines.append("  timings that differed: " + ", ".join(f"{p} ({n})" for p, n in sorted(c.timing_paths.items())))
    for key in c.only_a[:5] + c.only_b[:5]:
        lines.append(f"  only in {'A' if key in c.only_a else 'B'}: {key}")
    for key, paths in list(c.differing.items())[:5]:
        lines.append(f"  {key}: {', '.join(paths[:6])}")
    lines += ["", table(o), ""]
    lines.append(
        "ledger-if: the ledger less the requests of the calls in flight at the kill "
        "(they reached the server, but the call never ended, so no client could record them)"
    )
    if o.in_flight.cost_usd or o.in_flight.prompt_tokens:
        f = o.in_flight
        lines.append(
            f"B: the server billed replies ({f.prompt_tokens}+{f.completion_tokens} tokens, ${f.cost_usd:.6f}) to "
            "calls in flight at the kill that the killed client never recorded (the same requests came again after "
            "it): money spent that no store can show"
        )
    s1 = o.session1_ledger - k.usage
    lines.append(
        f"B, the killed session, per the ledger: {o.session1_ledger.requests} requests of the calls that ended, "
        f"{o.session1_ledger.prompt_tokens}+{o.session1_ledger.completion_tokens} tokens billed, "
        f"${o.session1_ledger.cost_usd:.6f}; the store held {k.usage.requests} requests, "
        f"{k.usage.prompt_tokens}+{k.usage.completion_tokens} tokens, ${k.usage.cost_usd:.6f} right after the kill"
    )
    gap = (o.ledger_b - o.in_flight) - o.store_b
    if o.store_b.mismatches(o.ledger_b - o.in_flight):
        lines.append(
            f"B: the store is short of the ledger by {gap.requests} requests, {gap.retries} retries, "
            f"{gap.prompt_tokens}+{gap.completion_tokens} tokens, ${gap.cost_usd:.6f}; the killed session's ended "
            f"calls, billed but not in the store when it died: {s1.requests} requests, "
            f"{s1.prompt_tokens}+{s1.completion_tokens} tokens, ${s1.cost_usd:.6f}"
            + (" (the same: they are the killed session's uncommitted calls)" if not s1.mismatches(gap) else "")
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Settings()
    ap.add_argument("--profiles", nargs="+", default=d.profiles)
    ap.add_argument("--supporters", type=int, default=d.supporters)
    ap.add_argument("--max-turns", type=int, default=d.max_turns)
    ap.add_argument("--fault-rate", type=float, default=d.fault_rate)
    ap.add_argument("--fault-mix", default=d.fault_mix)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--timeout-s", type=float, default=d.timeout_s)
    ap.add_argument("--kill-after", type=float, default=d.kill_after, help="kill B at this share of units stored")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    a = ap.parse_args()
    s = Settings(
        profiles=a.profiles, supporters=a.supporters, max_turns=a.max_turns, fault_rate=a.fault_rate,
        fault_mix=a.fault_mix, seed=a.seed, timeout_s=a.timeout_s, kill_after=a.kill_after,
    )  # fmt: skip
    print(
        f"fault rate {s.fault_rate} ({s.fault_mix}), profiles {' '.join(s.profiles)}, {s.supporters} supporters, "
        f"max_turns {s.max_turns}, timeout_s {s.timeout_s}, max_retries {s.max_retries}"
    )
    if a.keep:
        o = bench(a.keep, s)
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            o = bench(Path(tmp), s)
    print(report(o))
    if o.problems:
        print("FAILED: " + "; ".join(o.problems))
        sys.exit(1)
    print("OK: equal stores; store and ledger agree")


if __name__ == "__main__":
    main()
