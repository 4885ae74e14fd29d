"""The run store refuses a different config and says where it differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from emoharbor.errors import EmoharborError
from emoharbor.store.run_store import RunStore, config_differences


def test_config_differences_name_the_changed_paths() -> None:
    old = {"a": 1, "roles": {"user": {"model": "x", "t": 0.7}}, "prompts": {"p": "v1", "q": "v1"}}
    new = {"a": 1, "roles": {"user": {"model": "y", "t": 0.7}}, "prompts": {"p": "v2", "q": "v1"}, "b": [1]}
    assert config_differences(old, new) == ["b", "prompts.p", "roles.user.model"]
    assert config_differences(old, old) == []
    many = config_differences({f"k{i}": i for i in range(9)}, {f"k{i}": -i for i in range(9)}, most=3)
    assert many == ["k1", "k2", "k3", "..."]


def test_a_refused_resume_names_what_changed_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    RunStore.create_or_resume(tmp_path / "r", "emoharbor", {"max_turns": 3, "seed": 0}, "h1").close()
    with pytest.raises(EmoharborError, match=r"different config \(hash h1, this one is h2; it differs in max_turns\)"):
        RunStore.create_or_resume(tmp_path / "r", "emoharbor", {"max_turns": 4, "seed": 0}, "h2")
    store = RunStore.open_existing(tmp_path / "r")
    assert store.meta()["config_hash"] == "h1"
    store.close()
