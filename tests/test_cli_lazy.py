"""The command line loads what a command needs when it runs: the table of commands in ``emoharbor.cli`` is
the commands' modules' own list, and ``--version`` and ``run --help`` import neither the other commands nor
the model clients. (How long they take is measured by bench/cli_start.py, not here.)"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from emoharbor.cli import COMMANDS, cli


def test_the_table_lists_every_command_of_every_module_and_no_other() -> None:
    for module in set(COMMANDS.values()):
        mod = importlib.import_module(f"emoharbor.commands.{module}")
        assert sorted(c.name for c in mod.COMMANDS) == sorted(n for n, m in COMMANDS.items() if m == module)
    ctx = cli.make_context("emoharbor", [], resilient_parsing=True)
    assert cli.get_command(ctx, "no-such-command") is None


PROBE = """
import contextlib, io, json, sys
from emoharbor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def imported(*args: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``emoharbor ARGS``."""
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return set(json.loads(p.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    ("args", "own"), [(("--version",), set()), (("run", "--help"), {"emoharbor.commands.evaluate"})]
)
def test_a_command_imports_only_its_own_module(args: tuple[str, ...], own: set[str]) -> None:
    mods = imported(*args)
    commands = {m for m in mods if m.startswith("emoharbor.commands.") and m.count(".") == 2}
    assert (
        commands
        - {
            "emoharbor.commands.options",
            "emoharbor.commands.paths",
            "emoharbor.commands.core",
            "emoharbor.commands.specs",
        }
        == own
    )
    assert "openai" not in mods and "httpx" not in mods and "numpy" not in mods
