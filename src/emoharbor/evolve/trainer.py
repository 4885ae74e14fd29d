"""Training on TRL, what SFT and DPO share: the machine (device, dtype, processes, 4-bit loading), the
LoRA config, TRL's training arguments, checkpoints and resuming, the training log, and saving a model
folder with its card.

One stage writes into its output folder: ``checkpoint-N/`` every ``train_args.save_steps`` steps (by default
the last two kept) and ``evolve_stage.json`` (the settings they were made with) while it trains; a stage started
again with the same settings resumes from the newest whole checkpoint. At the end the main process writes the
adapter, the tokenizer and, last, the model card (``evolve_model.json``), and removes the checkpoints: a
folder with a card is a whole model. Under ``accelerate launch`` every process trains (DDP, FSDP or
DeepSpeed, as the launch config says) and only the main process writes.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import resource
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..models.folder import MODEL_CARD
from ..models.hf import HFSource, load_hf, pick_device
from .card import write_card
from .config import EvolveConfig, LoraSettings
from .train_args import NEUTRAL, effective, trl_config

ENGINE = "trl"  # what trains (the bench reads it)
STAGE_FILE = "evolve_stage.json"  # the settings a stage folder's checkpoints were made with
DATA_DIR = "train-data"  # DPO's tokenized pairs, on disk so that every process reads the same file
# TRL's names in the training log -> emoharbor's (the others are kept as TRL writes them)
LOG_NAMES = {"learning_rate": "lr", "rewards/accuracies": "reward_accuracy", "rewards/margins": "reward_margin",
             "rewards/chosen": "reward_chosen", "rewards/rejected": "reward_rejected"}  # fmt: skip
# in the log lines
SHOWN = ("loss", "grad_norm", "lr", "mean_token_accuracy", "reward_margin", "reward_accuracy", "reward", "reward_std",
         "kl", "reward_unscored")  # fmt: skip
ITEMS = {"sft": "examples", "dpo": "pairs", "grpo": "completions"}  # what a stage trains on
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
Log = Callable[[str], None]


@dataclass
class TrainReport:
    engine: str = ENGINE
    steps: int = 0  # optimizer steps (the global step at the end)
    items: int = 0  # examples (SFT), pairs (DPO) or completions (GRPO) trained on in this run, all processes
    tokens: int = 0  # their tokens (a pair: the prompt twice, and both replies)
    logs: list[dict[str, float]] = field(default_factory=list)  # one per logging step, with the step
    wall_s: float = 0.0  # trainer.train(), resuming included
    peak_rss_mb: float = 0.0
    peak_gpu_mb: float | None = None
    world_size: int = 1  # processes that trained
    ranks: list[dict[str, int]] = field(default_factory=list)  # what each process trained on
    resumed_from_step: int | None = None  # the checkpoint this run started from

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def release_memory() -> None:
    """Free the last model before the next one loads (torch only if it is already in use)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class Processes:
    """This process among those ``accelerate launch`` (or torchrun) started; one process otherwise."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def processes() -> Processes:
    env = os.environ
    return Processes(int(env.get("WORLD_SIZE", "1")), int(env.get("RANK", "0")), int(env.get("LOCAL_RANK", "0")))


def main_log(log: Log) -> Log:
    """``log`` in the main process, nothing in the others (one copy of each line)."""
    return log if processes().main else lambda text: None


def check_machine(cfg: EvolveConfig) -> None:
    """What the settings need of this machine, checked before any data is read."""
    if cfg.quantization == "4bit":
        import torch

        if cfg.device == "cpu" or not torch.cuda.is_available():
            raise EmoharborError(
                "quantization: 4bit (QLoRA) needs a CUDA GPU (bitsandbytes' 4-bit kernels): on this machine set "
                "quantization: none"
            )
        if find_spec("bitsandbytes") is None:
            raise EmoharborError("quantization: 4bit needs bitsandbytes: pip install bitsandbytes")
    if cfg.report_to == "tensorboard" and find_spec("tensorboard") is None and find_spec("tensorboardX") is None:
        raise EmoharborError("report_to: tensorboard needs the tensorboard package: pip install tensorboard")
    pick_device(cfg.device)


@dataclass(frozen=True)
class Placement:
    device: str  # where the model is loaded: cpu, cuda, cuda:N
    dtype: str  # float32 | bfloat16 | float16
    cpu: bool  # training on the CPU
    bf16: bool  # TRL's mixed precision flags
    fp16: bool


def placement(cfg: EvolveConfig) -> Placement:
    dev = pick_device(cfg.device)
    dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if dev == "cuda" else "float32")
    load_on = dev
    p = processes()
    if dev == "cuda" and p.world_size > 1:
        sharded = any(os.environ.get(k, "").lower() in ("1", "true")
                      for k in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"))  # fmt: skip
        # FSDP and DeepSpeed place (and shard) the weights themselves; DDP: each process on its own GPU
        load_on = "cpu" if sharded else f"cuda:{p.local_rank}"
    return Placement(load_on, dtype, dev == "cpu", dev == "cuda" and dtype == "bfloat16",
                     dev == "cuda" and dtype == "float16")  # fmt: skip


def load_model(cfg: EvolveConfig, src: HFSource, *, trainable: bool) -> tuple[Any, Any]:
    """(model, tokenizer) for training: the base model, in 4 bits when ``quantization: 4bit``, with the
    adapter of ``src`` (if any) loaded trainable or frozen."""
    place = placement(cfg)
    if cfg.quantization != "4bit":
        return load_hf(src, device=place.device, dtype=place.dtype, trainable=trainable)
    if src.gguf_file:
        raise EmoharborError("quantization: 4bit needs a Hugging Face model folder as base_model, not a GGUF file")
    import torch
    from peft import PeftModel, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    compute = torch.float16 if place.dtype == "float16" else torch.bfloat16
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,  # type: ignore[no-untyped-call]
                               bnb_4bit_compute_dtype=compute, bnb_4bit_quant_storage=compute)  # fmt: skip
    tok_from = src.adapter if src.adapter and (Path(src.adapter) / "tokenizer_config.json").is_file() else src.base
    tokenizer = AutoTokenizer.from_pretrained(tok_from)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    device_map = {"": place.device if place.device != "cuda" else torch.cuda.current_device()}
    model: Any = AutoModelForCausalLM.from_pretrained(src.base, quantization_config=quant, dtype=compute,
                                                      device_map=device_map)  # fmt: skip
    model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)  # type: ignore[no-untyped-call]
    if src.adapter:
        model = PeftModel.from_pretrained(model, src.adapter, is_trainable=trainable)
    return model, tokenizer


def lora_config(model: Any, lora: LoraSettings) -> Any:
    from peft import LoraConfig

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in lora.target_modules if t not in names]
    if missing:
        raise EmoharborError(
            f"lora.target_modules {missing} are not modules of this model: pick from its linear layers"
        )
    n_layers = int(getattr(model.config.get_text_config(), "num_hidden_layers", 0) or 0)
    top = None if lora.top_layers is None or not n_layers else list(range(max(0, n_layers - lora.top_layers), n_layers))
    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules,
                      layers_to_transform=top, task_type="CAUSAL_LM")  # fmt: skip


def training_args(stage: str, cfg: EvolveConfig, out: Path, *, seed: int) -> Any:
    """TRL's SFTConfig, DPOConfig or GRPOConfig of a stage: emoharbor's defaults, the stage's ``train_args`` over
    them, and the keys emoharbor sets itself (``train_args.OWNED``) from its own settings. Made before the model
    is loaded: under DeepSpeed ZeRO-3 transformers then loads the weights already partitioned."""
    s = getattr(cfg, stage)
    place = placement(cfg)
    owned: dict[str, Any] = {
        "output_dir": str(out), "seed": seed, "data_seed": seed, "use_cpu": place.cpu, "bf16": place.bf16,
        "fp16": place.fp16, "report_to": [] if cfg.report_to == "none" else [cfg.report_to], "save_strategy": "steps",
        "save_only_model": False, "resume_from_checkpoint": None, "logging_nan_inf_filter": False,
    }  # fmt: skip
    if stage == "sft":
        owned.update(max_length=s.max_length, completion_only_loss=True)
    elif stage == "dpo":
        owned.update(max_length=s.max_length, precompute_ref_log_probs=True)
    else:  # the reward reads the context column
        owned.update(remove_unused_columns=False)
    args = {**effective(stage, s.train_args), **owned}
    cls = trl_config(stage)
    try:
        return cls(**args)
    except (ValueError, TypeError) as e:  # TRL's own checks of the arguments together
        why = str(e).splitlines()[0]
        raise EmoharborError(f"{stage}.train_args: TRL's {cls.__name__} refuses them: {why}") from None


def stage_settings(cfg: EvolveConfig, stage: str, **inputs: Any) -> dict[str, Any]:
    """What a stage's checkpoints depend on (a resumed stage must have the same): its settings, with the training
    arguments in effect (emoharbor's defaults included) but those that change no output."""
    train = getattr(cfg, stage).model_dump(mode="json")
    train["train_args"] = {k: v for k, v in effective(stage, train["train_args"]).items() if k not in NEUTRAL}
    return {"stage": stage, "base_model": cfg.base_model, "seed": cfg.seed, "system_prompt": cfg.system_prompt,
            "holdout": cfg.holdout, "lora": cfg.lora.model_dump(mode="json"), "quantization": cfg.quantization,
            "dtype": cfg.dtype, stage: train, **inputs}  # fmt: skip


def _flat(d: dict[str, Any], head: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{head}{k}.") if isinstance(v, dict) else {f"{head}{k}": v})
    return out


def checkpoints(out: Path) -> list[tuple[int, Path]]:
    """The whole checkpoints in ``out`` (their trainer state, written last, is there and whole: a process
    killed while writing it leaves a file that is empty or cut short), oldest first."""
    if not out.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in out.iterdir() if (m := _CHECKPOINT.match(p.name)) and p.is_dir()]
    return sorted((n, p) for n, p in found if _whole(p / "trainer_state.json"))


def _whole(state: Path) -> bool:
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def begin_stage(out: Path, settings: dict[str, Any], stage: str) -> None:
    """Before training: checkpoints already in ``out`` must come from the same settings; records them."""
    f = out / STAGE_FILE
    if f.is_file() and checkpoints(out):
        old, new = _flat(json.loads(f.read_text(encoding="utf-8"))), _flat(settings)
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if changed:
            raise EmoharborError(
                f"{out} holds checkpoints of a {stage} stage with other settings ({', '.join(changed)}): start it "
                "again with the settings it had, or give a new output folder"
            )
    if processes().main:
        out.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(settings, indent=2, sort_keys=True), encoding="utf-8")


def _log_entry(h: dict[str, Any]) -> dict[str, float]:
    return {"step": float(h["step"])} | {LOG_NAMES.get(k, k): float(v) for k, v in h.items()
                                         if k != "step" and isinstance(v, int | float)}  # fmt: skip


def _callbacks(log: Log, stage: str) -> Any:
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        """The last step is always logged; a log line per logging step; a non-finite loss stops training."""

        bad: tuple[int, float] | None = None

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if state.max_steps and state.global_step >= state.max_steps:
                control.should_log = True
            return control

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> Any:
            if not logs or "loss" not in logs:
                return control
            if not math.isfinite(float(logs["loss"])):
                self.bad = (state.global_step, float(logs["loss"]))
                control.should_training_stop = True
            if state.is_world_process_zero:
                e = _log_entry({**logs, "step": state.global_step})
                shown = {k: v for k, v in e.items() if k in SHOWN}
                log(f"  {stage} step {state.global_step}/{state.max_steps}  "
                    + "  ".join(f"{k} {v:.4g}" for k, v in shown.items()))  # fmt: skip
            return control

    return Progress()


class _Counted:
    """Counts the examples and tokens this process trains on, batch by batch as the loss is computed
    (a DPO batch holds each pair's chosen and rejected sequence; a GRPO batch, sampled completions)."""

    def __init__(self, trainer: Any, pairs: bool) -> None:
        self.inner = trainer.compute_loss
        self.pairs = pairs
        self.examples = 0
        self.tokens = 0

    def __call__(self, model: Any, inputs: dict[str, Any], *args: Any, **kw: Any) -> Any:
        if model.training and "completion_ids" in inputs:  # GRPO: sampled completions and their prompts
            self.examples += int(inputs["completion_ids"].shape[0])
            self.tokens += int(inputs["prompt_mask"].sum()) + int(inputs["completion_mask"].sum())
        elif model.training:
            ids = inputs["input_ids"]
            self.examples += int(ids.shape[0]) // (2 if self.pairs else 1)
            mask = inputs.get("attention_mask")
            self.tokens += int(mask.sum()) if mask is not None else int(ids.numel())
        return self.inner(model, inputs, *args, **kw)


def fit(trainer: Any, out: Path, *, stage: str, log: Log) -> TrainReport:
    """``trainer.train()``, from the newest checkpoint in ``out`` if there is one."""
    import torch
    from accelerate.utils import gather_object
    from transformers import PrinterCallback

    p = processes()
    say = main_log(log)
    trainer.remove_callback(PrinterCallback)  # it prints every log to stdout; the log lines go to ``log``
    progress = _callbacks(say, stage)
    trainer.add_callback(progress)
    counted = _Counted(trainer, pairs=stage == "dpo")
    trainer.compute_loss = counted
    found = checkpoints(out)
    resumed = found[-1] if found else None
    if resumed:
        say(f"{stage}: resuming from {resumed[1].name} (step {resumed[0]})")
    start = time.monotonic()
    trainer.train(resume_from_checkpoint=str(resumed[1]) if resumed else None)
    wall = time.monotonic() - start
    if progress.bad is not None:
        step, loss = progress.bad
        raise EmoharborError(f"the {stage} loss became {loss} at step {step}: lower the learning rate")
    world = int(trainer.accelerator.num_processes)
    log(f"{stage}: process {p.rank} of {world} trained on {counted.examples} "
        f"{ITEMS[stage]} ({counted.tokens} tokens)")  # fmt: skip
    ranks = gather_object([{"rank": p.rank, "items": counted.examples, "tokens": counted.tokens}])
    return TrainReport(
        steps=int(trainer.state.global_step), items=sum(r["items"] for r in ranks),
        tokens=sum(r["tokens"] for r in ranks), logs=[_log_entry(h) for h in trainer.state.log_history if "loss" in h],
        wall_s=wall, peak_rss_mb=peak_rss_mb(),
        peak_gpu_mb=torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None,
        world_size=world, ranks=sorted(ranks, key=lambda r: r["rank"]),
        resumed_from_step=resumed[0] if resumed else None,
    )  # fmt: skip


def save_stage(trainer: Any, out: Path, card: dict[str, Any]) -> None:
    """Every process calls it (FSDP and ZeRO-3 gather the adapter from its shards); the main process writes
    the adapter and the tokenizer, then the model card, and removes what training left in ``out``."""
    trainer.save_model(str(out))
    if trainer.accelerator.is_main_process:
        (out / "training_args.bin").unlink(missing_ok=True)  # TRL's pickled arguments
        write_card(out, {**card, "out": str(out)})  # in place of TRL's template README; the card comes last
        for p in out.glob("checkpoint-*"):  # the whole ones and any a kill cut short
            shutil.rmtree(p, ignore_errors=True)
        shutil.rmtree(out / DATA_DIR, ignore_errors=True)
        shutil.rmtree(out / "ref", ignore_errors=True)  # DPO's reference copy of the adapter, if it was kept
        (out / STAGE_FILE).unlink(missing_ok=True)
    trainer.accelerator.wait_for_everyone()


def refuse_if_card(out: Path) -> None:
    if (out / MODEL_CARD).exists():
        raise EmoharborError(f"{out} already holds a trained model: give a new output folder")
