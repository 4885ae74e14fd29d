"""``emoharbor evolve sft`` and ``evolve dpo`` in two processes on the CPU (DDP over gloo), started by
``accelerate launch`` with the shipped ``examples/accelerate/cpu-2proc.yaml``, for a few real steps with
the tiny model: both processes train (each on its own share of every batch), and the main process alone
writes the one adapter, its model card and the command's output."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from emoharbor.evolve.pairs import PreferencePair, write_pairs
from evolve_helpers import esconv_file, tiny_model_dir

pytest.importorskip("trl")
pytest.importorskip("peft")

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_CONFIG = ROOT / "examples" / "accelerate" / "cpu-2proc.yaml"
ACCELERATE = Path(sys.executable).parent / "accelerate"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(ACCELERATE), "launch", "--config_file", str(LAUNCH_CONFIG), "--main_process_port", str(free_port()),
           "-m", "emoharbor.cli", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def check_two_processes(out: Path, done: subprocess.CompletedProcess[str], stage: str, steps: int) -> dict[str, object]:
    for rank in (0, 1):
        assert f"{stage}: process {rank} of 2 trained on" in done.stderr, done.stderr[-3000:]
    card = json.loads((out / "evolve_model.json").read_text())
    train = card["train"]
    assert train["world_size"] == 2 and train["steps"] == steps
    assert [r["rank"] for r in train["ranks"]] == [0, 1] and all(r["items"] > 0 for r in train["ranks"])
    assert train["items"] == sum(r["items"] for r in train["ranks"])
    tokens = [r["tokens"] for r in train["ranks"]]
    assert tokens[0] != tokens[1]  # each process trained on its own share of the data
    assert len(done.stdout.strip().splitlines()) == 1  # the command's output, from the main process only
    assert not list(out.glob("checkpoint-*")) and not (out / "train-data").exists()
    return card


@pytest.mark.slow
def test_sft_and_dpo_train_in_two_processes(tmp_path: Path) -> None:
    if not ACCELERATE.is_file():
        pytest.skip("accelerate's launcher is not installed beside this Python")
    data = str(esconv_file())
    cfg = {
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "system_prompt": "Be a kind listener.",
        "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
        "sft": {"data": [data], "max_examples": 16, "max_length": 192,
                "train_args": {"max_steps": 3, "per_device_train_batch_size": 2, "logging_steps": 1, "save_steps": 2,
                               "learning_rate": 1e-3}},
        "dpo": {"max_length": 192, "train_args": {"max_steps": 2, "per_device_train_batch_size": 1, "logging_steps": 1,
                                                  "learning_rate": 1e-3}},
    }  # fmt: skip
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(cfg))
    done = launch(tmp_path, "evolve", "sft", "--config", "evolve.yaml", "--out", "m0")
    sft = check_two_processes(tmp_path / "m0", done, "sft", 3)
    assert sft["train"]["items"] == 3 * 2 * 2  # 3 steps of 2 examples in each of 2 processes

    replies = ["That sounds exhausting; what has been the hardest part?", "ok", "I hear you. Do you want to talk?",
               "whatever"]  # fmt: skip
    prompts = ["I lost my job" + " again" * (i * i) + "." for i in range(6)]  # each of its own length
    pairs = [PreferencePair([{"role": "user", "content": p}], replies[i % 2 * 2], replies[i % 2 * 2 + 1], f"p{i}",
                            "test") for i, p in enumerate(prompts)]  # fmt: skip
    write_pairs(tmp_path / "pairs.jsonl", pairs)
    done = launch(tmp_path, "evolve", "dpo", "--config", "evolve.yaml", "--model", "m0", "--pairs", "pairs.jsonl",
                  "--out", "m1")  # fmt: skip
    dpo = check_two_processes(tmp_path / "m1", done, "dpo", 2)
    assert dpo["train"]["items"] == 2 * 1 * 2
    logs = dpo["train"]["logs"]
    assert logs[0]["loss"] == pytest.approx(math.log(2), abs=1e-4)  # the policy is the reference before step 1
    assert all("reward_margin" in e and "reward_accuracy" in e for e in logs)
    adapters = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("adapter_model.safetensors"))
    assert adapters == [Path("m0/adapter_model.safetensors"), Path("m1/adapter_model.safetensors")]


@pytest.mark.slow
def test_evolve_run_in_two_processes_each_refines_its_share(tmp_path: Path) -> None:
    """The whole `evolve run` under the launcher: SFT and DPO train across both processes, each process refines
    its share of the contexts into the one run store, and the main process alone writes the pairs and
    summary.json."""
    if not ACCELERATE.is_file():
        pytest.skip("accelerate's launcher is not installed beside this Python")
    data = str(esconv_file())
    write_pairs(tmp_path / "extra.jsonl", [PreferencePair([{"role": "user", "content": "I lost my job."}],
                "That sounds hard; what happened?", "ok", "x1", "test")])  # fmt: skip
    cfg = {
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "rounds": 1, "system_prompt": "Be kind.",
        "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
        "sft": {"data": [data], "max_examples": 16, "max_length": 192,
                "train_args": {"max_steps": 2, "per_device_train_batch_size": 2}},
        "refine": {"data": [data], "contexts": 4, "max_new_tokens": 8, "reflection_max_tokens": 24,
                   "judge_check": False, "concurrency": 2},
        "dpo": {"max_length": 192, "extra_pairs": [str(tmp_path / "extra.jsonl")],
                "train_args": {"max_steps": 1, "per_device_train_batch_size": 1}},
    }  # fmt: skip
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(cfg))
    done = launch(tmp_path, "evolve", "run", "--config", "evolve.yaml", "--out", "evo", "--quiet")
    import sqlite3

    db = sqlite3.connect(tmp_path / "evo" / "round1" / "refine" / "run.sqlite")
    by = [json.loads(d)["process"] for (d,) in db.execute("SELECT data FROM results WHERE kind='evolve_refine'")]
    db.close()
    assert sorted(by) == [0, 0, 1, 1]  # four contexts, two refined by each process
    summary = json.loads((tmp_path / "evo" / "summary.json").read_text())
    assert [st.get("stage") for st in summary["stages"]][1] == "refine" and summary["stages"][1]["contexts"] == 4
    assert len(done.stdout.strip().splitlines()) == 1  # "done in ...", from the main process only
    adapters = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("adapter_model.safetensors"))
    assert adapters == [Path("evo/m0/adapter_model.safetensors"), Path("evo/m1/adapter_model.safetensors")]
