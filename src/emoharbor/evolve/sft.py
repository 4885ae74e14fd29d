"""Phase 1, experience acquisition: LoRA supervised fine-tuning on emotional-support conversations
(each supporter turn given its history; loss on the reply only), optionally mixed with general
instructions. The result, M0, is an adapter folder with its model card."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from ..errors import EmoharborError
from ..models.hf import load_hf, resolve_hf
from ..simulate.supporter import supporter_prompt
from .config import EvolveConfig
from .data import Encoded, encode, esconv_examples, general_examples, mix_examples
from .guard import load_guard
from .trainer import Log, add_lora, reply_logps, save_model, train


def sft_loss(model: Any, pad_id: int) -> Any:
    """The mean negative log-likelihood of the batch's reply tokens (the prompt carries no loss)."""

    def loss_fn(batch: list[Encoded]) -> tuple[torch.Tensor, dict[str, float]]:
        logp, used = reply_logps(model, batch, pad_id)
        n = used.sum()
        return -logp.sum() / n, {"reply_tokens": float(n)}

    return loss_fn


def run_sft(cfg: EvolveConfig, out: Path, *, log: Log, hold: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train M0 from ``cfg.base_model`` into ``out``. ``hold``: where to leave the trained model and
    tokenizer for the next stage, which then need not load them again."""
    if (out / "evolve_model.json").exists():
        raise EmoharborError(f"{out} already holds a trained model: give a new output folder")
    started = time.monotonic()
    system = supporter_prompt(cfg.system_prompt).text.strip()
    guard = load_guard(cfg.holdout)
    es, held_out = esconv_examples(cfg.sft.data, system, guard)
    general = general_examples(cfg.sft.general_data) if cfg.sft.general_data and cfg.sft.general_share > 0 else []
    examples = mix_examples(es, general, share=cfg.sft.general_share, max_examples=cfg.sft.max_examples, seed=cfg.seed)
    log(f"sft: {len(es)} ESConv examples ({held_out} dialogues held out), {len(examples)} in the mix "
        f"({sum(e.source == 'general' for e in examples)} general)")  # fmt: skip
    src = resolve_hf(cfg.base_model)
    if src.adapter:
        raise EmoharborError(f"base_model {cfg.base_model!r} already has an adapter: give the base model itself")
    base, tok = load_hf(src, device=cfg.device, dtype=cfg.dtype, gradient_checkpointing=cfg.sft.gradient_checkpointing)
    base_card: dict[str, Any] = {"base_model": cfg.base_model, "base": src.identity}
    counts: Counter[str] = Counter()
    encoded: list[Encoded] = []
    for ex in examples:
        e = encode(tok, ex.messages, ex.reply, cfg.sft.max_length)
        if e is None:
            counts["too_long"] += 1
            continue
        counts["history_truncated"] += e.dropped_turns > 0
        encoded.append(e)
    log(f"sft: {len(encoded)} encoded, {counts['too_long']} too long for max_length {cfg.sft.max_length}, "
        f"{counts['history_truncated']} with their oldest turns cut")  # fmt: skip
    model = add_lora(base, cfg.lora)
    report = train(model, encoded, sft_loss(model, tok.pad_token_id), cfg.sft, seed=cfg.seed, log=log)
    summary = {
        "stage": "sft",
        "round": 0,
        "examples": {"esconv": len(es), "held_out_dialogues": held_out, "mixed": len(examples),
                     "general": sum(e.source == "general" for e in examples), "encoded": len(encoded),
                     "too_long": counts["too_long"], "history_truncated": counts["history_truncated"]},
        "train": report.to_dict(),
        "wall_s": time.monotonic() - started,
    }  # fmt: skip
    save_model(model, tok, out, {**base_card, **summary, "parent": None, "config": cfg.resolved()})
    if hold is not None:
        hold.update(model=model, tokenizer=tok)
    log(f"sft: saved M0 to {out} ({report.steps} steps, {report.wall_s:.0f}s, peak RSS {report.peak_rss_mb:.0f} MB)")
    return summary
