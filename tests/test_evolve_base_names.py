"""The embedded models by name as the base of a trained model (``base_model: qwen0.5b``, ``hf:qwen0.5b``): the
name goes through ``local.resolve_gguf`` (replaced here: the tests never assemble a real model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor.errors import ConfigError
from emoharbor.evolve.config import load_evolve_config
from emoharbor.models import local
from emoharbor.models.hf import HFSource, built_in_gguf, resolve_hf


@pytest.fixture
def asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``resolve_gguf`` replaced by one that writes a stand-in file per name and records what it was asked."""
    names: list[str] = []

    def resolve(name: str) -> local.Gguf:
        names.append(name)
        p = tmp_path / "cache" / f"{name}.gguf"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"GGUF")
        return local.Gguf(p, f"local:{name}")

    monkeypatch.setattr(local, "resolve_gguf", resolve)
    return names


@pytest.mark.parametrize(
    ("given", "name"),
    [("qwen0.5b", "qwen0.5b"), ("local:qwen0.5b", "qwen0.5b"), ("local:qwen1.5b", "qwen1.5b"),
     ("smollm2", "smollm2"), ("local:smollm2", "smollm2"), ("qwen1.5b", "qwen1.5b")],
)  # fmt: skip
def test_a_built_in_name_is_its_gguf(given: str, name: str, asked: list[str], tmp_path: Path) -> None:
    assert built_in_gguf(given) == name
    assert resolve_hf(given) == HFSource(str((tmp_path / "cache").resolve()), f"{name}.gguf")
    assert asked == [name]


def test_other_text_is_not_a_built_in_name() -> None:
    assert built_in_gguf("Qwen/Qwen2.5-0.5B-Instruct") is None and built_in_gguf("qwen") is None
    assert built_in_gguf("local:/models/x.gguf") == "/models/x.gguf"  # local:PATH, as resolve_gguf reads it


def test_an_adapter_of_a_built_in_base_and_an_adapter_given_after_the_name(asked: list[str], tmp_path: Path) -> None:
    m1 = tmp_path / "m1"  # a folder evolve wrote: its card names the base by name
    m1.mkdir()
    (m1 / "adapter_config.json").write_text("{}")
    (m1 / "evolve_model.json").write_text(json.dumps({"base_model": "qwen0.5b", "stage": "dpo"}))
    src = resolve_hf(str(m1))
    assert (src.gguf_file, src.adapter) == ("qwen0.5b.gguf", str(m1.resolve()))
    assert resolve_hf(f"local:qwen0.5b@{m1}").adapter == str(m1)
    assert src.identity == f"hf:{(tmp_path / 'cache').resolve()}/qwen0.5b.gguf@{m1.resolve()}"


def test_the_evolve_config_keeps_the_name_even_beside_a_folder_of_that_name(tmp_path: Path) -> None:
    (tmp_path / "qwen0.5b").mkdir()  # a folder named like the model beside the config is not taken for it
    cfg = tmp_path / "evolve.yaml"
    cfg.write_text("base_model: qwen0.5b\n")
    assert load_evolve_config(cfg).base_model == "qwen0.5b"
    assert load_evolve_config(cfg, {"base_model": "local:qwen1.5b"}).base_model == "local:qwen1.5b"


def test_an_unknown_name_says_what_is_known() -> None:
    with pytest.raises(ConfigError, match=r"qwen0\.5b, qwen1\.5b, smollm2"):
        resolve_hf("qwen9b")
    with pytest.raises(ConfigError, match="unknown local model 'qwen9b'"):
        resolve_hf("local:qwen9b")
