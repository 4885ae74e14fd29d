"""Phase 1, experience acquisition: LoRA supervised fine-tuning on emotional-support conversations
(each supporter turn given its history; loss on the reply only), optionally mixed with general
instructions, trained by ``trl.SFTTrainer``. The result, M0, is an adapter folder with its model card.

The examples go to TRL already tokenized, as prompt-completion rows (``input_ids`` and a
``completion_mask`` that is 1 on the reply): emoharbor's encoding (``data.encode``) decides the
tokens, so what is trained on is what the model generates when it is served (see docs/evolve.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..models.hf import resolve_hf
from ..simulate.supporter import supporter_prompt
from .config import EvolveConfig
from .data import completion_row, encode, esconv_examples, fitting, general_examples, mix_examples
from .guard import load_guard
from .personal import Personal, shown_record
from .trainer import (
    Log,
    begin_stage,
    check_machine,
    fit,
    load_model,
    lora_config,
    main_log,
    refuse_if_card,
    save_stage,  # fmt: skip
    stage_settings,
    training_args,
)
from .voice_data import seeker_examples


def run_sft(cfg: EvolveConfig, out: Path, *, log: Log, hold: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train M0 from ``cfg.base_model`` into ``out`` (resuming from a checkpoint there). ``hold``: where
    to leave the trained model and tokenizer for the next stage, which then need not load them again."""
    refuse_if_card(out)
    check_machine(cfg)
    say = main_log(log)
    started = time.monotonic()
    src = resolve_hf(cfg.base_model)
    if src.adapter:
        raise EmoharborError(f"base_model {cfg.base_model!r} already has an adapter: give the base model itself")
    args = training_args("sft", cfg, out, seed=cfg.seed)
    with args.main_process_first(desc="the stage folder"):
        begin_stage(out, stage_settings(cfg, "sft"), "sft")
    system = supporter_prompt(cfg.system_prompt).text.strip()
    guard = load_guard(cfg.holdout)
    if cfg.sft.role == "user":
        es, held_out = seeker_examples(cfg.data_of("sft"), guard)
    else:
        es, held_out = esconv_examples(cfg.data_of("sft"), system, guard, Personal(cfg.sft.personal_share, cfg.seed))
    general = general_examples(cfg.sft.general_data) if cfg.sft.general_data and cfg.sft.general_share > 0 else []
    examples = mix_examples(es, general, share=cfg.sft.general_share, max_examples=cfg.sft.max_examples, seed=cfg.seed)
    # the seeker's voice always sees its persona (the voice prompt): what a supporter's prompt showed is not asked
    shown = shown_record(cfg.sft.personal_share, [e.personal for e in examples if e.source == "esconv"]) if (
        cfg.sft.role == "supporter") else None  # fmt: skip
    told = f"; {shown['with_situation']} shown the seeker's situation" if shown else ""
    say(f"sft: {len(es)} ESConv examples ({held_out} dialogues held out), {len(examples)} in the mix "
        f"({sum(e.source == 'general' for e in examples)} general{told})")  # fmt: skip
    base, tok = load_model(cfg, src, trainable=False)
    encoded, counts = fitting(encode(tok, ex.messages, ex.reply, cfg.sft.max_length) for ex in examples)
    say(f"sft: {len(encoded)} encoded, {counts['too_long']} too long for max_length {cfg.sft.max_length}, "
        f"{counts['history_truncated']} with their oldest turns cut")  # fmt: skip
    if not encoded:
        raise EmoharborError("nothing to train on: no usable examples")
    from datasets import Dataset
    from trl.trainer.sft_trainer import SFTTrainer

    trainer = SFTTrainer(model=base, args=args, train_dataset=Dataset.from_list([completion_row(e) for e in encoded]),
                         processing_class=tok, peft_config=lora_config(base, cfg.lora))  # fmt: skip
    report = fit(trainer, out, stage="sft", log=log)
    summary = {
        "stage": "sft",
        "round": 0,
        "examples": {"esconv": len(es), "held_out_dialogues": held_out, "mixed": len(examples),
                     "general": sum(e.source == "general" for e in examples), "encoded": len(encoded),
                     "too_long": counts["too_long"], "history_truncated": counts["history_truncated"]},
        "shown": shown,
        "train": report.to_dict(),
        "wall_s": time.monotonic() - started,
    }  # fmt: skip
    card = {"base_model": cfg.base_model, "base": src.identity, "role": cfg.sft.role, **summary, "parent": None,
            "config": cfg.resolved()}  # fmt: skip
    save_stage(trainer, out, card)
    if hold is not None:
        hold.update(model=trainer.model, tokenizer=tok)
    say(f"sft: saved M0 to {out} ({report.steps} steps, {report.wall_s:.0f}s, peak RSS {report.peak_rss_mb:.0f} MB)")
    return summary
