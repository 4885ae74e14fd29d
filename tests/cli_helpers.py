"""Running the emoharbor command as a child process, and peeking at its store while it runs."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emoharbor.cli import main


def emoharbor(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "emoharbor.cli", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def killed_midway(args: list[str], env: dict[str, str], run_dir: Path, kind: str, at_least: int) -> dict[str, float]:
    """``emoharbor ARGS`` in a child process, SIGKILLed once ``at_least`` results of ``kind`` are stored (120 s at
    most): what it had written by then (``written``)."""
    p = emoharbor(*args, env=env)
    deadline = time.monotonic() + 120
    while count(run_dir, kind) < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return written(run_dir, kind)


def count(run_dir: Path, kind: str) -> int:
    """Results of one kind stored so far (0 while the store does not exist or is busy)."""
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return int(c.execute("SELECT COUNT(*) FROM results WHERE kind=?", (kind,)).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def written(run_dir: Path, kind: str) -> dict[str, float]:
    """Each stored result of ``kind``: its key and when its record was written (a unit done again is written
    anew): what a resumed run kept and what it redid."""
    with sqlite3.connect(run_dir / "run.sqlite", timeout=10) as db:
        return dict(db.execute("SELECT key, created FROM results WHERE kind = ?", (kind,)).fetchall())


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``emoharbor ARGS`` in this process (``cli.main``, as the console script): exit status, stdout, stderr."""
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
