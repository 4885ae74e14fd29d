"""The training loop shared by SFT and DPO: AdamW on the LoRA weights, gradient accumulation,
warmup then linear decay, clipping, a log every few steps, and a hard stop on a non-finite loss."""

from __future__ import annotations

import gc
import json
import math
import random
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch

from ..errors import EmoharborError
from ..models.hf import MODEL_CARD
from .config import LoraSettings, TrainSettings
from .data import IGNORE, Encoded

T = TypeVar("T")
LossFn = Callable[[list[T]], tuple[torch.Tensor, dict[str, float]]]
Log = Callable[[str], None]


@dataclass
class TrainReport:
    steps: int = 0
    items: int = 0
    logs: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0
    peak_rss_mb: float = 0.0
    peak_gpu_mb: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def add_lora(model: Any, lora: LoraSettings) -> Any:
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in lora.target_modules if t not in names]
    if missing:
        raise EmoharborError(
            f"lora.target_modules {missing} are not modules of this model: pick from its linear layers"
        )
    n_layers = int(getattr(model.config, "num_hidden_layers", 0) or 0)
    top = None
    if lora.top_layers is not None and n_layers:
        top = list(range(max(0, n_layers - lora.top_layers), n_layers))
    cfg = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules,
                     layers_to_transform=top, task_type="CAUSAL_LM")  # fmt: skip
    return get_peft_model(model, cfg)


def trainable_snapshot(model: Any) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def _batches(items: Sequence[T], size: int, rng: random.Random) -> Iterator[list[T]]:
    while True:
        order = list(range(len(items)))
        rng.shuffle(order)
        for i in range(0, len(order), size):
            yield [items[j] for j in order[i : i + size]]


def planned_steps(n_items: int, s: TrainSettings) -> int:
    per_epoch = math.ceil(n_items / (s.batch_size * s.grad_accum))
    total = per_epoch * s.epochs
    return min(total, s.max_steps) if s.max_steps else total


def train(model: Any, items: Sequence[T], loss_fn: LossFn[T], s: TrainSettings, *, seed: int, log: Log) -> TrainReport:
    if not items:
        raise EmoharborError("nothing to train on: no usable examples")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.0)
    total = planned_steps(len(items), s)

    def factor(step: int) -> float:  # warmup, then linear decay to a tenth
        if step < s.warmup_steps:
            return (step + 1) / (s.warmup_steps + 1)
        span = max(1, total - s.warmup_steps)
        return 1.0 - 0.9 * (step - s.warmup_steps) / span

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    report = TrainReport()
    start = time.monotonic()
    window: dict[str, list[float]] = {}
    batches = _batches(items, s.batch_size, rng)
    model.train()
    for step in range(1, total + 1):
        for _ in range(s.grad_accum):
            batch = next(batches)
            loss, metrics = loss_fn(batch)
            if not torch.isfinite(loss):
                raise EmoharborError(f"the loss became {loss.item()} at step {step}: lower the learning rate")
            scaled: Any = loss / s.grad_accum
            scaled.backward()
            report.items += len(batch)
            for k, v in {"loss": float(loss.item()), **metrics}.items():
                window.setdefault(k, []).append(v)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, 1.0))
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        window.setdefault("grad_norm", []).append(grad_norm)
        if step % s.log_every == 0 or step == total:
            entry = {"step": float(step), **{k: sum(v) / len(v) for k, v in window.items()},
                     "lr": float(sched.get_last_lr()[0]), "elapsed_s": time.monotonic() - start}  # fmt: skip
            report.logs.append(entry)
            log("  " + "  ".join(f"{k} {v:.4g}" for k, v in entry.items()))
            window = {}
    report.steps = total
    report.wall_s = time.monotonic() - start
    report.peak_rss_mb = peak_rss_mb()
    if torch.cuda.is_available():
        report.peak_gpu_mb = torch.cuda.max_memory_allocated() / 2**20
    return report


def release_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def left_pad(seqs: list[list[int]], value: int) -> torch.Tensor:
    n = max(len(s) for s in seqs)
    return torch.tensor([[value] * (n - len(s)) + s for s in seqs], dtype=torch.long)


def reply_logps(model: Any, batch: list[Encoded], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities of the reply tokens, and the mask of where they are (batch x K).

    Sequences are padded on the left, so every reply ends at the last position and the model is asked
    for the logits of the last K positions only (``logits_to_keep``): the vocabulary projection and
    its softmax are not computed over the prompt, which is most of every sequence.
    """
    dev = model.device
    ids = left_pad([e.input_ids for e in batch], pad_id).to(dev)
    labels = left_pad([e.labels for e in batch], IGNORE).to(dev)
    mask = left_pad([[1] * len(e.input_ids) for e in batch], 0).to(dev)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    keep = 1 + max(sum(1 for x in e.labels if x != IGNORE) for e in batch)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep).logits
    target = labels[:, -keep + 1 :]
    used = target != IGNORE
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    token = torch.gather(logp, 2, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return token * used, used


def save_model(model: Any, tokenizer: Any, out: Path, card: dict[str, Any]) -> None:
    """The adapter, the tokenizer and the model card, written to a temporary folder then moved in
    place, so a folder with a card is always a whole model."""
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / MODEL_CARD).write_text(json.dumps(card, indent=2, sort_keys=True), encoding="utf-8")
    if out.exists():
        raise EmoharborError(f"{out} already exists: give a new output folder")
    tmp.rename(out)
