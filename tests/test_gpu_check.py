"""bench/gpu_check.sh --cpu, the GPU check's dry run: `emoharbor evolve sft`, `dpo` and `grpo` (whole episodes with the
rule-based user) for three steps each on the CPU in float32, each step's time and memory printed as it ends, the
model's place and precision said by each stage's trainer, a table at the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"^(sft|dpo|grpo) +step (\d+)/(\d+)  (\d+\.\d{3}) s  peak GPU (-|\d+\.\d MiB)  peak RSS (\d+) MiB$")
ROW = re.compile(r"^(sft|dpo|grpo) +(\d+) +(\d+\.\d{3}) +(\d+\.\d{3}|-) +(\d+\.\d{3}) +(-|\d+\.\d) +(\d+)$")


@pytest.mark.slow
def test_the_dry_run_prints_every_steps_figures() -> None:
    env = {**os.environ, "PYTHON": sys.executable, "TQDM_DISABLE": "1"}
    p = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), "--cpu"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert lines[0].startswith("gpu_check: torch ") and lines[0].endswith("; device cpu, float32")
    assert not [x for x in lines if "unmet requirement" in x]  # this environment is the tested one
    steps = [(m[1], int(m[2]), int(m[3]), float(m[4]), m[5], int(m[6])) for x in lines if (m := STEP.match(x))]
    assert [(s, n, of) for s, n, of, *_ in steps] == [(s, n, 3) for s in ("sft", "dpo", "grpo") for n in (1, 2, 3)]
    assert all(t > 0 and gpu == "-" and rss > 0 for *_, t, gpu, rss in steps)
    for stage in ("sft", "dpo", "grpo"):  # where its trainer had the model, and in which precision
        assert (
            f"{stage:<5} model on cpu, float32 (adapter float32), trainer bf16=False fp16=False use_cpu=True" in lines
        )
    rows = {m[1]: m for x in lines if (m := ROW.match(x))}
    assert list(rows) == ["sft", "dpo", "grpo"]
    for stage, row in rows.items():  # the table sums the printed steps
        times = [t for s, _, _, t, _, _ in steps if s == stage]
        assert int(row[2]) == 3 and float(row[3]) == times[0] and float(row[5]) == pytest.approx(sum(times), abs=3e-3)
    assert re.fullmatch(r"gpu_check: ok: sft, dpo and grpo, 3 steps each, on cpu in \d+ s", lines[-1])
    assert "grpo: saved the policy" in p.stderr  # the commands' own log, on standard error
