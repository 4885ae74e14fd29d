"""bench/faults.py, small: a run through a faulty fake server, SIGKILLed and resumed, ends with the same
records as one never interrupted, and each run's store spent what the server billed (no model needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow  # about 15-25 s: two runs and a kill, through real subprocesses

BENCH = Path(__file__).resolve().parents[1] / "bench" / "faults.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_faults", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_killed_and_resumed_run_equals_an_uninterrupted_one_and_spends_what_was_billed(tmp_path: Path) -> None:
    faults = load_bench()
    s = faults.Settings(
        profiles=["builtin:p001*", "builtin:p002*"], supporters=1, max_turns=2, fault_rate=0.3, kill_after=0.4
    )
    o = faults.bench(tmp_path, s)
    report = faults.report(o)

    assert o.units_a == o.units_b == 6, report  # 2 conversations, each rated by 2 judges
    assert 0 < o.kill.stored < o.kill.total, report  # killed mid-run
    assert o.comparison.equal, report
    assert o.ledger_a.retries > 0 and o.ledger_b.retries > 0, report  # faults were met, and retried
    # what each store spent (not cached) is what the server billed: tokens, cost, requests and retries; for the
    # killed run, less the attempts of the calls in flight at the kill (never ended, so never recorded)
    assert not o.store_a.mismatches(o.ledger_a), report
    assert not o.store_b.mismatches(o.ledger_b - o.in_flight), report
    # the killed session's calls that ended were in its store when it died
    assert not o.kill.usage.mismatches(o.session1_ledger), report
    assert o.store_a.errors == o.store_b.errors == 0, report
    assert o.problems == [], report
