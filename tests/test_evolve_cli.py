"""``emoharbor evolve`` from the command line: the whole run (M0, one round, M1) with a tiny model,
resuming it, and the errors a user can make."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from emoharbor.cli import main
from emoharbor.evolve.pairs import PreferencePair, write_pairs
from evolve_helpers import esconv_file, tiny_model_dir

pytest.importorskip("torch")
pytest.importorskip("peft")


def write_config(tmp_path: Path, **extra: object) -> Path:
    data = str(esconv_file())
    cfg = {
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "rounds": 1,
        "system_prompt": "Be a kind listener.", "lora": {"r": 4, "alpha": 8, "top_layers": 1},
        "sft": {"data": [data], "max_examples": 4, "max_length": 256,
                "train_args": {"max_steps": 2, "per_device_train_batch_size": 2}},
        "refine": {"data": [data], "contexts": 2, "max_new_tokens": 8, "reflection_max_tokens": 30,
                   "drop_truncated": False, "judge_check": False},  # the default judge is the embedded model
        "dpo": {"max_length": 256, "extra_pairs": ["extra.jsonl"],
                "train_args": {"max_steps": 1, "per_device_train_batch_size": 2}},
        **extra,
    }  # fmt: skip
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(cfg))
    extra_pair = PreferencePair([{"role": "user", "content": "I lost my job."}], "That is a real blow; how are you?",
                                "ok", "x1", "test")  # fmt: skip
    write_pairs(tmp_path / "extra.jsonl", [extra_pair])
    return path


def test_run_writes_every_stage_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write_config(tmp_path)
    out = tmp_path / "evo"
    main(["evolve", "run", "--config", str(cfg), "--out", str(out), "--quiet"])
    assert "done in" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    stages = [s["stage"] for s in summary["stages"]]
    assert stages == ["sft", "refine", "dpo"]
    refine, dpo = summary["stages"][1], summary["stages"][2]
    assert refine["contexts"] == 2 and refine["kept"] + sum(refine["dropped"].values()) == 2
    assert dpo["pairs"]["read"] == refine["kept"] + 1  # the round's pairs and the extra file's one
    assert (out / "m1" / "adapter_model.safetensors").is_file() and (out / "round1" / "pairs.jsonl").is_file()
    main(["evolve", "run", "--config", str(cfg), "--out", str(out), "--quiet"])  # everything is there
    assert "is there, skipped" in capsys.readouterr().err


def test_user_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m, none, p = str(tmp_path / "m"), str(tmp_path / "none"), str(tmp_path / "p.jsonl")
    served = "refine.generator={model: m0, base_url: 'http://127.0.0.1:9'}"
    qlora = ["evolve", "sft", "--out", m, "--set", "quantization=4bit", "--set", "device=cpu"]
    cases = [
        (["evolve", "sft", "--out", m, "--set", "sft.train_args.max_steps"], "write KEY=VALUE"),
        (["evolve", "sft", "--out", m, "--set", "dpo.train_args.bta=0.2"], "bta is not an argument of TRL's DPOConfig"),
        (["evolve", "sft", "--out", m, "--set", "sft.train_args.seed=3"], "seed is set by emoharbor"),
        (["evolve", "dpo", "--model", none, "--pairs", p, "--out", m], "cannot read the model card"),
        (["evolve", "run", "--out", m, "--set", served, "--set", "refine.load_adapter=false"], "refine.generator"),
        # QLoRA needs a GPU: said before any data is read (the data file here does not exist)
        ([*qlora, "--set", f"sft.data=[{none}.jsonl]"], "quantization: 4bit (QLoRA) needs a CUDA GPU"),
        (["evolve", "run", "--out", m, "--set", "quantization=4bit", "--set", "device=cpu"], "needs a CUDA GPU"),
    ]
    if importlib.util.find_spec("tensorboard") is None and importlib.util.find_spec("tensorboardX") is None:
        cases.append((["evolve", "sft", "--out", m, "--set", "report_to=tensorboard"], "pip install tensorboard"))
    for argv, message in cases:
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and message in err and "Traceback" not in err, (argv, err)
