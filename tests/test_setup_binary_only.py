"""The set-up compiles nothing: every package is a wheel, and llama-cpp-python (which the SmolLM2 package
declares and nothing here uses) is not installed."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SETUP = Path(__file__).parent.parent / "scripts" / "setup"


def test_llama_cpp_python_is_not_installed_but_the_smollm2_gguf_is() -> None:
    assert importlib.util.find_spec("llama_cpp") is None, "llama-cpp-python is installed: scripts/setup must not"
    from emoharbor.models.local import resolve_gguf

    with resolve_gguf("smollm2").path.open("rb") as f:
        assert f.read(4) == b"GGUF"


def test_every_install_in_the_setup_script_takes_wheels_only() -> None:
    lines = [ln.strip() for ln in SETUP.read_text().splitlines() if not ln.strip().startswith("#")]
    installs = [ln for ln in lines if re.search(r"\bpip install\b", ln)]
    assert installs == ['wheels() { pip install --only-binary :all: "$@"; }']  # the one place pip installs
