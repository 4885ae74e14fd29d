"""TRL's training arguments of a stage (``sft``, ``dpo``, ``grpo``): a stage's ``train_args`` are keys of the TRL
config class it trains with (``SFTConfig``, ``DPOConfig``, ``GRPOConfig``: ``TrainingArguments`` and the method's
own), by TRL's names, checked against that dataclass. Here: emoharbor's defaults for them, the keys emoharbor
sets itself (refused, naming the setting to use), the keys a resumed stage may change, and the settings' names
before ``train_args`` (an old config still loads: each is read as the TRL key it stood for).

trl is imported only to check ``train_args`` that are given (the core install has none)."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from functools import cache
from importlib import import_module
from typing import Any

from pydantic import TypeAdapter, ValidationError

STAGES = ("sft", "dpo", "grpo")
TRL_CONFIG = {"sft": "trl.trainer.sft_config:SFTConfig", "dpo": "trl.trainer.dpo_config:DPOConfig",
              "grpo": "trl.trainer.grpo_config:GRPOConfig"}  # fmt: skip

_COMMON = {
    "num_train_epochs": 1,
    "gradient_accumulation_steps": 1,
    "lr_scheduler_type": "linear",  # to 0 after the warmup
    "warmup_steps": 0,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "activation_checkpointing": False,  # TRL's configs default to True: recompute only when asked
    "activation_checkpointing_kwargs": {"use_reentrant": False},  # used when activation_checkpointing is on
    "logging_steps": 5,  # emoharbor's log line and summary entry every N steps (and at the last)
    "save_steps": 50,  # a checkpoint every N steps: a killed stage resumes from it
    "save_total_limit": 2,
    "disable_tqdm": True,  # the log lines stand in for TRL's progress bar
    "log_level": "warning",
    "ddp_find_unused_parameters": False,
    "dataloader_num_workers": 0,
}
# emoharbor's defaults, where they differ from TRL's; a stage's train_args override them
DEFAULTS: dict[str, dict[str, Any]] = {
    "sft": {**_COMMON, "learning_rate": 2e-4, "per_device_train_batch_size": 4},
    "dpo": {**_COMMON, "learning_rate": 5e-5, "per_device_train_batch_size": 2, "beta": 0.1},
    "grpo": {**_COMMON, "learning_rate": 1e-5, "per_device_train_batch_size": 4, "num_generations": 4,
             "max_completion_length": 96, "temperature": 1.0, "beta": 0.0, "log_completions": False},
}  # fmt: skip

_RESUME = "emoharbor resumes a stage from its checkpoints itself (train_args.save_steps sets how often)"
_OWNED = {"output_dir": "the command's --out", "seed": "seed (the config's top level)",
          "data_seed": "seed (the config's top level)", "use_cpu": "device", "bf16": "dtype (bfloat16 on cuda)",
          "fp16": "dtype (float16)", "report_to": "report_to (the config's top level)", "save_strategy": _RESUME,
          "save_only_model": _RESUME, "resume_from_checkpoint": _RESUME,
          "logging_nan_inf_filter": "nothing: emoharbor stops a stage whose loss is not finite, so it sees every "
                                    "loss"}  # fmt: skip
# the keys training_args() sets from emoharbor's settings, per stage, and what to set instead
OWNED: dict[str, dict[str, str]] = {
    "sft": {**_OWNED, "max_length": "sft.max_length (emoharbor's encoding cuts each example to it)",
            "completion_only_loss": "nothing: the loss is on the reply only (emoharbor's rows carry its mask)"},
    "dpo": {**_OWNED, "max_length": "dpo.max_length (emoharbor's encoding cuts each pair to it)",
            "precompute_ref_log_probs": "nothing: the reference log-probabilities are computed once, then the "
                                        "reference adapter is dropped"},
    "grpo": {**_OWNED, "remove_unused_columns": "nothing: the reward reads each row's context column"},
}  # fmt: skip
# transformers' deprecated names of keys emoharbor gives a default (which would win over them silently)
ALIASES = {"gradient_checkpointing": "activation_checkpointing",
           "gradient_checkpointing_kwargs": "activation_checkpointing_kwargs"}  # fmt: skip
# keys that change no output: a resumed stage may change them
NEUTRAL = frozenset({"logging_steps", "logging_first_step", "log_level", "log_level_replica", "log_on_each_node",
                     "disable_tqdm", "save_steps", "save_total_limit", "log_completions",
                     "num_completions_to_print"})  # fmt: skip

_TRAIN = {"lr": "learning_rate", "epochs": "num_train_epochs", "max_steps": "max_steps",
          "batch_size": "per_device_train_batch_size", "grad_accum": "gradient_accumulation_steps",
          "warmup_steps": "warmup_steps", "log_every": "logging_steps", "save_steps": "save_steps",
          "gradient_checkpointing": "activation_checkpointing"}  # fmt: skip
_GRPO = ("beta", "num_generations", "max_completion_length", "temperature", "use_vllm", "vllm_mode",
         "vllm_server_base_url", "vllm_gpu_memory_utilization")  # under the same names in train_args  # fmt: skip
# a stage's settings before train_args -> the TRL key each stood for (None: it never reached TRL)
OLD_NAMES: dict[str, dict[str, str | None]] = {
    "sft": dict(_TRAIN),
    "dpo": {**_TRAIN, "beta": "beta"},
    "grpo": {**_TRAIN, "max_length": None, **{k: k for k in _GRPO}},
}


def trl_config(stage: str) -> type:
    """The TRL config class of ``stage``; without trl, a ValueError that says how to install it."""
    module, name = TRL_CONFIG[stage].split(":")
    try:
        cls: type = getattr(import_module(module), name)
    except ImportError:
        need = "TRL's training arguments need trl (the train extra): pip install 'emoharbor[train]'"
        raise ValueError(need) from None
    return cls


@cache
def _fields(stage: str) -> dict[str, Any]:
    cls = trl_config(stage)
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


@cache
def _adapter(stage: str, key: str) -> TypeAdapter[Any]:
    return TypeAdapter(_fields(stage)[key])


def check_train_args(stage: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` checked against TRL's config class of ``stage``: every key one of its fields, not one emoharbor
    sets, its value of the field's type (read as TRL's own parser would: ``"1e-3"`` is a number). A ValueError
    names the key and what to write instead."""
    if not args:
        return args
    fields = _fields(stage)
    name = trl_config(stage).__name__
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key in OWNED[stage]:
            raise ValueError(f"{key} is set by emoharbor: use {OWNED[stage][key]}")
        if key in ALIASES:
            raise ValueError(f"{key} is transformers' old name of {ALIASES[key]}: write train_args.{ALIASES[key]}")
        if key not in fields:
            near = difflib.get_close_matches(key, list(fields), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise ValueError(f"{key} is not an argument of TRL's {name}{hint}")
        try:
            checked = _adapter(stage, key).validate_python(value)
        except ValidationError as e:
            raise ValueError(f"{key}: {value!r} is not what TRL's {name} takes ({e.errors()[0]['msg']})") from None
        out[key] = value if checked == value else checked
    return out


def from_old_names(stage: str, settings: dict[str, Any]) -> dict[str, Any]:
    """A stage's settings with those of its old names moved into ``train_args`` under TRL's names (None: left out,
    TRL's default); an old name beside the same key in ``train_args`` is a ValueError."""
    old = {k: settings[k] for k in OLD_NAMES[stage] if k in settings}
    if not old:
        return settings
    args = dict(settings.get("train_args") or {})
    for key, value in old.items():
        new = OLD_NAMES[stage][key]
        if new is None or value is None:
            continue
        if new in args:
            raise ValueError(f"{stage}.{key} and {stage}.train_args.{new} are one setting: keep train_args.{new}")
        args[new] = value
    return {**{k: v for k, v in settings.items() if k not in old}, "train_args": args}


def new_key(key: str) -> str:
    """A dotted ``--set`` key in today's names: ``sft.lr`` is ``sft.train_args.learning_rate``; others unchanged.
    A key of a setting that never reached TRL is a ValueError."""
    stage, _, name = key.partition(".")
    if stage not in OLD_NAMES or name not in OLD_NAMES[stage]:
        return key
    new = OLD_NAMES[stage][name]
    if new is None:
        raise ValueError(f"{key} never reached TRL (GRPO's prompts keep their length): leave it out")
    return f"{stage}.train_args.{new}"


def effective(stage: str, args: dict[str, Any]) -> dict[str, Any]:
    """emoharbor's defaults for ``stage`` with ``args`` (a stage's train_args) over them."""
    return {**DEFAULTS[stage], **args}
