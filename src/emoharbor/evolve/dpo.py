"""Direct preference optimisation of M(t) on (prompt, chosen, rejected) pairs, giving M(t+1), trained
by ``trl.DPOTrainer``.

The reference model is M(t) itself: TRL copies M(t)'s adapter as a frozen ``ref`` adapter, computes the
reference log-probabilities of every chosen and rejected reply once before training
(``precompute_ref_log_probs``), and the copy is then dropped; the same adapter is trained on the sigmoid
DPO loss, so M(t+1) is again one adapter on the base model and no second copy of the model is held.
The pairs go to TRL tokenized by emoharbor (``data.encode_pair``), as for SFT.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..models.hf import read_model_card, resolve_hf
from ..simulate.supporter import supporter_prompt
from .card import TRAINED_PROFILES, trained_profiles
from .config import EvolveConfig
from .data import EncodedPair, encode_pair, fitting
from .pairs import PreferencePair, read_pairs
from .personal import shown_record
from .trainer import (
    DATA_DIR,
    Log,
    begin_stage,
    check_machine,
    fit,
    load_model,
    main_log,
    processes,
    refuse_if_card,
    save_stage,  # fmt: skip
    stage_settings,
    training_args,
)


def encode_pairs(tok: Any, pairs: list[PreferencePair], system: str, max_length: int) -> tuple[
        list[EncodedPair], Counter[str]]:  # fmt: skip
    """Each pair after the system prompt (``system`` where its prompt has none), and the counts (``data.fitting``)."""
    return fitting(encode_pair(tok, p.prompt if p.prompt and p.prompt[0]["role"] == "system"
                               else [{"role": "system", "content": system}, *p.prompt], p.chosen, p.rejected,
                               max_length) for p in pairs)  # fmt: skip


def teachers(pairs: list[PreferencePair]) -> dict[str, list[str]]:
    """The models other than the policy that wrote part of the pairs: the reflectors (``refine.reflector``) that
    wrote the reflections the chosen replies were written from."""
    found = sorted({str(p.provenance["reflector"]) for p in pairs if p.provenance.get("reflector")})
    return {"reflector": found} if found else {}


def _trainer_class() -> Any:
    from trl.trainer.dpo_trainer import DPOTrainer

    class Trainer(DPOTrainer):
        """DPOTrainer on pairs that emoharbor has tokenized (``prompt_ids``, ``chosen_ids``, ``rejected_ids``:
        the columns TRL's own preparation makes), which it would otherwise tokenize again from text."""

        def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any, dataset_name: str) -> Any:
            if "prompt_ids" in dataset.column_names:
                return dataset
            return super()._prepare_dataset(dataset, processing_class, args, dataset_name)

    return Trainer


def run_dpo(cfg: EvolveConfig, model_dir: Path, pair_files: list[Path], out: Path, *, log: Log,
            hold: dict[str, Any] | None = None, control: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Train M(t+1) into ``out`` (resuming from a checkpoint there) from M(t) in ``model_dir`` on the pairs
    in ``pair_files``. ``hold``: M(t) already in memory (trainable), as the stage before left it; M(t+1)
    is left there. ``control``: this is the run's control (``control.py``), as its card says."""
    refuse_if_card(out)
    check_machine(cfg)
    say = main_log(log)
    started = time.monotonic()
    parent = read_model_card(model_dir)
    pairs = [p for f in pair_files for p in read_pairs(f)]
    if not pairs:
        raise EmoharborError(f"no preference pairs in {', '.join(map(str, pair_files))}: nothing to optimise")
    round_no = int(parent.get("round", 0)) + 1
    args = training_args("dpo", cfg, out, seed=cfg.seed + round_no)
    inputs = {"parent": str(Path(model_dir).resolve()), "pairs": [str(Path(f).resolve()) for f in pair_files]}
    with args.main_process_first(desc="the stage folder"):
        begin_stage(out, stage_settings(cfg, "dpo", **inputs), "dpo")
    if hold and "model" in hold:
        model, tok = hold["model"], hold["tokenizer"]
    else:
        model, tok = load_model(cfg, resolve_hf(str(model_dir)), trainable=True)
    system = supporter_prompt(cfg.system_prompt).text.strip()
    encoded, counts = encode_pairs(tok, pairs, system, cfg.dpo.max_length)
    say(f"dpo: {len(pairs)} pairs, {len(encoded)} encoded, {counts['too_long']} too long for max_length "
        f"{cfg.dpo.max_length}, {counts['history_truncated']} with their oldest turns cut")  # fmt: skip
    if not encoded:
        raise EmoharborError(f"no pair fits dpo.max_length {cfg.dpo.max_length}: nothing to optimise")
    from datasets import Dataset, load_from_disk

    # on disk, so that TRL caches the reference log-probabilities in one file every process reads
    with args.main_process_first(desc="the tokenized pairs"):
        if processes().main:
            Dataset.from_list([e.row() for e in encoded]).save_to_disk(str(out / DATA_DIR))
        dataset = load_from_disk(str(out / DATA_DIR))
    trainer = _trainer_class()(model=model, args=args, train_dataset=dataset, processing_class=tok)
    # the reference log-probabilities are computed: the copy can go (under DeepSpeed it is left alone, its
    # parameters being partitioned with the model's; it is not saved either way)
    if "ref" in trainer.model.peft_config and not trainer.is_deepspeed_enabled:
        trainer.model.delete_adapter("ref")
    report = fit(trainer, out, stage="dpo", log=log)
    summary = {
        "stage": "dpo",
        "round": round_no,
        "pairs": {"read": len(pairs), "encoded": len(encoded), "too_long": counts["too_long"],
                  "history_truncated": counts["history_truncated"], "files": [str(f) for f in pair_files]},
        "shown": shown_record(cfg.refine.personal_share, [bool(p.provenance.get("personal")) for p in pairs]),
        "teachers": teachers(pairs), TRAINED_PROFILES: trained_profiles(parent, pairs),
        "train": report.to_dict(),
        "wall_s": time.monotonic() - started,
        **({"control": control} if control is not None else {}),
    }  # fmt: skip
    card = {"base_model": parent["base_model"], "base": parent.get("base"), **summary, "parent": str(model_dir),
            "config": cfg.resolved()}  # fmt: skip
    save_stage(trainer, out, card)
    if hold is not None:
        hold.update(model=trainer.model, tokenizer=tok)
    say(f"dpo: saved {'the control' if control else f'M{round_no}'} to {out} ({report.steps} steps, "
        f"{report.wall_s:.0f}s)")  # fmt: skip
    return summary
