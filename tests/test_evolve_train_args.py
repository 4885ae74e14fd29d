"""A stage's ``train_args``: TRL's own arguments, by TRL's names, checked against the stage's TRL config class at
load, reaching the config object the trainer gets; the keys emoharbor sets itself refused; the settings' old
names still read; the resume check."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from emoharbor.errors import ConfigError, EmoharborError
from emoharbor.evolve import train_args
from emoharbor.evolve.config import EvolveConfig, load_evolve_config

pytest.importorskip("trl")

# every training setting of before train_args, as `emoharbor config check` printed a default config
OLD_TRAIN = {"lr": 2e-4, "epochs": 1, "max_steps": None, "batch_size": 4, "grad_accum": 1, "max_length": 512,
             "warmup_steps": 0, "log_every": 5, "gradient_checkpointing": False, "save_steps": 50}  # fmt: skip


def load(tmp_path: Path, raw: dict[str, Any], sets: dict[str, Any] | None = None) -> EvolveConfig:
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_evolve_config(path, sets)


def error(tmp_path: Path, raw: dict[str, Any], sets: dict[str, Any] | None = None) -> str:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, raw, sets)
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.mark.parametrize("stage", ["sft", "dpo", "grpo"])
def test_a_train_arg_reaches_the_trl_config_the_trainer_gets(tmp_path: Path, stage: str) -> None:
    from emoharbor.evolve.trainer import training_args

    given = {"lr_scheduler_type": "cosine", "warmup_steps": 3, "learning_rate": "1e-3", "max_steps": 7}
    cfg = load(tmp_path, {"device": "cpu", stage: {"train_args": given}})
    args = training_args(stage, cfg, tmp_path / "out", seed=11)
    assert type(args).__name__ == {"sft": "SFTConfig", "dpo": "DPOConfig", "grpo": "GRPOConfig"}[stage]
    assert args.lr_scheduler_type.value == "cosine" and args.warmup_steps == 3 and args.max_steps == 7
    assert args.learning_rate == pytest.approx(1e-3)  # YAML's "1e-3" is a string: read as TRL's parser would
    # emoharbor's defaults where train_args say nothing, and what it sets itself
    assert args.logging_steps == 5 and args.save_steps == 50 and args.activation_checkpointing is False
    assert args.output_dir == str(tmp_path / "out") and args.seed == 11 and args.use_cpu and args.report_to == []
    assert args.save_strategy.value == "steps" and args.logging_nan_inf_filter is False
    if stage == "dpo":
        assert args.max_length == 512 and args.precompute_ref_log_probs and args.beta == pytest.approx(0.1)
    if stage == "grpo":
        assert args.num_generations == 4 and args.remove_unused_columns is False


@pytest.mark.parametrize("stage", ["sft", "dpo", "grpo"])
def test_emoharbor_sets_exactly_the_keys_it_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """What training_args() passes to TRL: the defaults, train_args over them, and the keys of OWNED, no others."""
    from emoharbor.evolve import trainer

    seen: dict[str, Any] = {}

    class Recorder:
        def __init__(self, **kw: Any) -> None:
            seen.update(kw)

    monkeypatch.setattr(trainer, "trl_config", lambda s: Recorder)
    cfg = load(tmp_path, {"device": "cpu", stage: {"train_args": {"optim": "sgd", "learning_rate": 0.5}}})
    trainer.training_args(stage, cfg, tmp_path, seed=0)
    assert set(seen) == set(train_args.DEFAULTS[stage]) | set(train_args.OWNED[stage]) | {"optim"}
    assert seen["optim"] == "sgd" and seen["learning_rate"] == pytest.approx(0.5)


def test_a_short_real_sft_step_trains_with_the_given_schedule(tmp_path: Path) -> None:
    """lr_scheduler_type is no emoharbor setting: given in train_args, the Trainer's learning rate stays constant
    where emoharbor's default (linear) would decay it."""
    pytest.importorskip("peft")
    from emoharbor.evolve.sft import run_sft
    from evolve_helpers import esconv_file, tiny_model_dir

    cfg = EvolveConfig.model_validate({
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "system_prompt": "Be kind.",
        "lora": {"r": 4, "alpha": 8},
        "sft": {"data": [str(esconv_file())], "max_examples": 6, "max_length": 192,
                "train_args": {"max_steps": 2, "per_device_train_batch_size": 2, "logging_steps": 1,
                               "learning_rate": 1e-3, "lr_scheduler_type": "constant"}},
    })  # fmt: skip
    logs = run_sft(cfg, tmp_path / "m0", log=lambda s: None)["train"]["logs"]
    assert [e["step"] for e in logs] == [1, 2] and all(math.isfinite(e["loss"]) for e in logs)
    assert [e["lr"] for e in logs] == [pytest.approx(1e-3), pytest.approx(1e-3)]
    card = json.loads((tmp_path / "m0" / "evolve_model.json").read_text())
    assert card["config"]["sft"]["train_args"]["lr_scheduler_type"] == "constant"


def test_an_unknown_key_names_the_file_the_stage_and_the_nearest_keys(tmp_path: Path) -> None:
    line = error(tmp_path, {"dpo": {"train_args": {"learning_rat": 1e-4}}})
    assert line.startswith(f"{tmp_path / 'evolve.yaml'}: field 'dpo.train_args': learning_rat is not an argument")
    assert "TRL's DPOConfig; did you mean learning_rate?" in line
    # a key of another method's config is not one of this stage's
    line = error(tmp_path, {"sft": {"train_args": {"num_generations": 8}}})
    assert "field 'sft.train_args': num_generations is not an argument of TRL's SFTConfig" in line
    line = error(tmp_path, {"grpo": {"train_args": {"temperature": "hot"}}})
    assert "field 'grpo.train_args': temperature: 'hot' is not what TRL's GRPOConfig takes" in line


@pytest.mark.parametrize(("stage", "key", "instead"), [
    ("sft", "output_dir", "use the command's --out"),
    ("dpo", "seed", "use seed (the config's top level)"),
    ("grpo", "bf16", "use dtype"),
    ("sft", "report_to", "use report_to (the config's top level)"),
    ("dpo", "save_strategy", "emoharbor resumes a stage from its checkpoints itself"),
    ("sft", "max_length", "use sft.max_length"),
    ("dpo", "precompute_ref_log_probs", "reference adapter is dropped"),
    ("grpo", "remove_unused_columns", "the reward reads each row's context column"),
    ("sft", "gradient_checkpointing", "old name of activation_checkpointing: write train_args.activation_"),
])  # fmt: skip
def test_a_key_emoharbor_sets_is_refused_naming_what_to_use(tmp_path: Path, stage: str, key: str, instead: str) -> None:
    line = error(tmp_path, {stage: {"train_args": {key: 1}}})
    assert f"field '{stage}.train_args': {key} " in line and instead in line


def test_train_args_by_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from emoharbor.cli import main

    cfg = load(tmp_path, {"sft": {"train_args": {"warmup_steps": 2}}},
               {"sft.train_args.weight_decay": 0.01, "sft.train_args.warmup_steps": 4})  # fmt: skip
    assert cfg.sft.train_args == {"warmup_steps": 4, "weight_decay": 0.01}
    line = error(tmp_path, {}, {"grpo.train_args.vllm_mod": "server"})
    assert "with --set grpo.train_args.vllm_mod: field 'grpo.train_args': vllm_mod is not an argument" in line
    assert "did you mean vllm_mode" in line
    with pytest.raises(SystemExit) as e:
        main(["evolve", "sft", "--out", str(tmp_path / "m"), "--set", "sft.train_args.output_dir=elsewhere"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "sft.train_args': output_dir is set by emoharbor" in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()


def test_trl_refusing_the_arguments_together_is_one_line(tmp_path: Path) -> None:
    from emoharbor.evolve.trainer import training_args

    cfg = load(tmp_path, {"device": "cpu", "sft": {"train_args": {"lr_scheduler_type": "cosin"}}})  # a str: loads
    refused = r"^sft\.train_args: TRL's SFTConfig refuses them: cosin is not a valid SchedulerType"
    with pytest.raises(EmoharborError, match=refused):
        training_args("sft", cfg, tmp_path, seed=0)


def test_the_old_names_still_load_as_trl_keys(tmp_path: Path) -> None:
    old_grpo = {**OLD_TRAIN, "lr": 1e-5, "num_generations": 2, "max_completion_length": 64, "temperature": 0.9,
                "beta": 0.0, "use_vllm": False, "vllm_mode": "colocate", "vllm_server_base_url": None,
                "vllm_gpu_memory_utilization": 0.3}  # fmt: skip
    cfg = load(tmp_path, {"sft": {**OLD_TRAIN, "lr": 1e-3, "max_steps": 20, "gradient_checkpointing": True},
                          "dpo": {**OLD_TRAIN, "beta": 0.2}, "grpo": old_grpo})  # fmt: skip
    assert cfg.sft.max_length == 512 and cfg.sft.train_args == {
        "learning_rate": 1e-3, "num_train_epochs": 1, "max_steps": 20, "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1, "warmup_steps": 0, "logging_steps": 5, "activation_checkpointing": True,
        "save_steps": 50}  # fmt: skip
    assert (
        cfg.dpo.train_args["beta"] == pytest.approx(0.2) and "max_steps" not in cfg.dpo.train_args
    )  # null: TRL's default
    g = cfg.grpo.train_args
    assert (g["num_generations"], g["max_completion_length"], g["temperature"]) == (2, 64, pytest.approx(0.9))
    assert "max_length" not in g and "vllm_server_base_url" not in g  # it never reached TRL; null: TRL's default
    dumped = cfg.resolved()["sft"]
    assert "lr" not in dumped and "batch_size" not in dumped and dumped["train_args"]["learning_rate"] == 1e-3
    # on the command line too
    cfg = load(tmp_path, {}, {"sft.lr": 0.1, "dpo.batch_size": 3, "grpo.num_generations": 2})
    assert cfg.sft.train_args == {"learning_rate": 0.1} and cfg.dpo.train_args == {"per_device_train_batch_size": 3}
    assert cfg.grpo.train_args == {"num_generations": 2}
    # one setting given twice is refused; so is a setting that never did anything
    assert "sft.lr and sft.train_args.learning_rate are one setting" in error(
        tmp_path, {"sft": {"lr": 1e-3, "train_args": {"learning_rate": 1e-4}}})  # fmt: skip
    assert error(tmp_path, {}, {"grpo.max_length": 64}).startswith("--set grpo.max_length: grpo.max_length never")
    line = error(tmp_path, {"grpo": {"batch_size": 6}})
    assert "per_device_train_batch_size (6) must be a multiple of num_generations (4)" in line


def test_a_changed_train_arg_refuses_a_resume_but_one_that_changes_no_output_does_not(tmp_path: Path) -> None:
    from emoharbor.evolve.trainer import begin_stage, stage_settings

    out = tmp_path / "m0"
    (out / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoint-2" / "trainer_state.json").write_text("{}")
    first = load(tmp_path, {"sft": {"train_args": {"learning_rate": 1e-3, "logging_steps": 1}}})
    begin_stage(out, stage_settings(first, "sft"), "sft")
    neutral = load(tmp_path, {"sft": {"train_args": {"learning_rate": 1e-3, "logging_steps": 10, "save_steps": 3,
                                                     "save_total_limit": 4}}})  # fmt: skip
    begin_stage(out, stage_settings(neutral, "sft"), "sft")
    # a key given at emoharbor's default is no change
    explicit = load(tmp_path, {"sft": {"train_args": {"learning_rate": 1e-3, "lr_scheduler_type": "linear"}}})
    begin_stage(out, stage_settings(explicit, "sft"), "sft")
    changed = load(tmp_path, {"sft": {"train_args": {"learning_rate": 1e-3, "weight_decay": 0.1}}})
    with pytest.raises(EmoharborError, match=r"other settings \(sft\.train_args\.weight_decay\)"):
        begin_stage(out, stage_settings(changed, "sft"), "sft")


def test_trl_is_imported_only_for_train_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without trl (the core install) a config without train_args loads; one with them is a one-line error."""

    def no_trl(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named {name!r}", name="trl")

    monkeypatch.setattr(train_args, "import_module", no_trl)
    train_args._fields.cache_clear()
    try:
        assert load(tmp_path, {"rounds": 1, "sft": {"max_length": 128}}).sft.train_args == {}
        line = error(tmp_path, {"dpo": {"train_args": {"beta": 0.3}}})
        assert line.endswith("field 'dpo.train_args': TRL's training arguments need trl (the train extra): pip "
                             "install 'emoharbor[train]'")  # fmt: skip
    finally:
        train_args._fields.cache_clear()
