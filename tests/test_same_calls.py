"""bench/same_calls.py: one checkout against itself makes the same calls (exit 0); against a copy whose
Appraiser prompt has one word more, the user's calls differ and it says how many (exit 1)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evolve_helpers import esconv_file

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "same_calls.py"


def same_calls(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    command = ["sensitivity", "--esconv", str(esconv_file("valid.jsonl")), "--limit", "2", "--judge", "none"]
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b), "--", *command], capture_output=True,
                          text=True, check=False)  # fmt: skip


@pytest.mark.slow
def test_the_same_code_makes_the_same_calls_and_a_changed_prompt_does_not(tmp_path: Path) -> None:
    done = same_calls(REPO, REPO)
    assert done.returncode == 0, done.stderr
    n = int(done.stdout.split(f"{REPO} ")[1].split(",")[0])
    assert n > 0 and f"the same {n}, only in {REPO} 0" in done.stdout

    other = tmp_path / "other"
    shutil.copytree(REPO / "src", other / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    prompt = other / "src" / "emoharbor" / "prompts" / "user_appraise.txt"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nTake care.\n", encoding="utf-8")
    done = same_calls(REPO, other)
    assert done.returncode == 1
    assert f"only in {other} 0" not in done.stdout
