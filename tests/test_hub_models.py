"""Base models by Hugging Face Hub id: read from the Hugging Face cache (HF_HUB_OFFLINE honoured); one that
cannot be had is a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

from emoharbor.errors import ConfigError
from emoharbor.models.hf import resolve_hf


def cached_model(cache: Path, repo: str) -> Path:
    """A model as the Hugging Face cache holds it after a download: a snapshot folder and refs/main."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snap = root / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text('{"model_type": "llama"}')
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(snap.name)
    return snap


def test_a_hub_id_in_the_cache_is_used_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    snap = cached_model(tmp_path, "someorg/tiny-model")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert Path(resolve_hf("someorg/tiny-model").base) == snap


def test_a_hub_id_not_in_the_cache_is_one_line_naming_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        ConfigError, match=r"'someorg/absent' is not in the Hugging Face cache .* HF_HUB_OFFLINE is set"
    ):
        resolve_hf("someorg/absent")
    with pytest.raises(ConfigError, match="not a model folder"):
        resolve_hf("not/a/hub/id")


def test_hf_models_load_from_several_threads_at_once(tmp_path: Path) -> None:
    """An evaluation's hf supporters load together, each in a thread: in a fresh interpreter, where transformers
    is not yet imported (its lazy first imports fail from several threads at once), all of them load."""
    import subprocess
    import sys

    from evolve_helpers import tiny_model_dir

    folder = tiny_model_dir(tmp_path / "tiny")
    code = (
        "import sys, threading\n"
        "from emoharbor.models.hf import load_hf, resolve_hf\n"
        "done, errors = [], []\n"
        "def load():\n"
        "    try:\n"
        f"        done.append(load_hf(resolve_hf({str(folder)!r}), device='cpu')[0] is not None)\n"
        "    except Exception as e:\n"
        "        errors.append(repr(e))\n"
        "threads = [threading.Thread(target=load) for _ in range(4)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(len(done), errors)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == "4 []", out.stdout + out.stderr
