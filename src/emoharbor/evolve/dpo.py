"""Direct preference optimisation of M(t) on (prompt, chosen, rejected) pairs, giving M(t+1).

The reference model is M(t) itself: its log-probabilities of every chosen and rejected reply are
computed once before training, then the same adapter is trained on
``-log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r)))``, so M(t+1) is again one adapter on the
base model and no second copy of the model is held in memory.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..errors import EmoharborError
from ..models.hf import load_hf, read_model_card, resolve_hf
from ..simulate.supporter import supporter_prompt
from .config import EvolveConfig
from .data import Encoded, encode
from .pairs import PreferencePair, read_pairs
from .trainer import Log, reply_logps, save_model, train


@dataclass
class EncodedPair:
    chosen: Encoded
    rejected: Encoded
    ref_chosen: float = 0.0
    ref_rejected: float = 0.0


def sequence_logps(model: Any, batch: list[Encoded], pad_id: int) -> torch.Tensor:
    """The summed log-probability of each sequence's reply tokens (those with a label)."""
    logp, _ = reply_logps(model, batch, pad_id)
    return logp.sum(dim=-1)


def dpo_loss(policy_c: torch.Tensor, policy_r: torch.Tensor, ref_c: torch.Tensor, ref_r: torch.Tensor,
             beta: float) -> tuple[torch.Tensor, dict[str, float]]:  # fmt: skip
    reward_c = beta * (policy_c - ref_c)
    reward_r = beta * (policy_r - ref_r)
    loss = -F.logsigmoid(reward_c - reward_r).mean()
    reward_c, reward_r = reward_c.detach(), reward_r.detach()
    return loss, {
        "reward_accuracy": float((reward_c > reward_r).float().mean()),
        "reward_margin": float((reward_c - reward_r).mean()),
        "reward_chosen": float(reward_c.mean()),
        "reward_rejected": float(reward_r.mean()),
    }


def encode_pairs(tok: Any, pairs: list[PreferencePair], system: str, max_length: int) -> tuple[
        list[EncodedPair], Counter[str]]:  # fmt: skip
    counts: Counter[str] = Counter()
    out: list[EncodedPair] = []
    for p in pairs:
        msgs = p.prompt if p.prompt and p.prompt[0]["role"] == "system" else [{"role": "system", "content": system},
                                                                              *p.prompt]  # fmt: skip
        c = encode(tok, msgs, p.chosen, max_length)
        r = encode(tok, msgs, p.rejected, max_length)
        if c is None or r is None:
            counts["too_long"] += 1
            continue
        out.append(EncodedPair(c, r))
    return out, counts


@torch.no_grad()
def reference_logps(model: Any, pairs: list[EncodedPair], pad_id: int, batch_size: int) -> None:
    model.eval()
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        lp = sequence_logps(model, [p.chosen for p in chunk] + [p.rejected for p in chunk], pad_id)
        for j, p in enumerate(chunk):
            p.ref_chosen, p.ref_rejected = float(lp[j]), float(lp[len(chunk) + j])


def run_dpo(cfg: EvolveConfig, model_dir: Path, pair_files: list[Path], out: Path, *, log: Log,
            hold: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Train M(t+1) into ``out`` from M(t) in ``model_dir`` on the pairs in ``pair_files``. ``hold``:
    M(t) already in memory (trainable), as the stage before left it; M(t+1) is left there."""
    if (out / "evolve_model.json").exists():
        raise EmoharborError(f"{out} already holds a trained model: give a new output folder")
    started = time.monotonic()
    parent = read_model_card(model_dir)
    pairs = [p for f in pair_files for p in read_pairs(f)]
    if not pairs:
        raise EmoharborError(f"no preference pairs in {', '.join(map(str, pair_files))}: nothing to optimise")
    if hold and "model" in hold:
        model, tok = hold["model"], hold["tokenizer"]
    else:
        model, tok = load_hf(resolve_hf(str(model_dir)), device=cfg.device, dtype=cfg.dtype, trainable=True,
                             gradient_checkpointing=cfg.dpo.gradient_checkpointing)  # fmt: skip
    system = supporter_prompt(cfg.system_prompt).text.strip()
    encoded, counts = encode_pairs(tok, pairs, system, cfg.dpo.max_length)
    log(f"dpo: {len(pairs)} pairs, {len(encoded)} encoded, {counts['too_long']} too long")
    reference_logps(model, encoded, tok.pad_token_id, cfg.dpo.batch_size)
    beta = cfg.dpo.beta

    def loss_fn(batch: list[EncodedPair]) -> tuple[torch.Tensor, dict[str, float]]:
        lp = sequence_logps(model, [p.chosen for p in batch] + [p.rejected for p in batch], tok.pad_token_id)
        n = len(batch)
        ref_c = torch.tensor([p.ref_chosen for p in batch], device=lp.device)
        ref_r = torch.tensor([p.ref_rejected for p in batch], device=lp.device)
        return dpo_loss(lp[:n], lp[n:], ref_c, ref_r, beta)

    report = train(model, encoded, loss_fn, cfg.dpo, seed=cfg.seed + int(parent.get("round", 0)) + 1, log=log)
    round_no = int(parent.get("round", 0)) + 1
    summary = {
        "stage": "dpo",
        "round": round_no,
        "pairs": {"read": len(pairs), "encoded": len(encoded), "too_long": counts["too_long"],
                  "files": [str(f) for f in pair_files]},
        "train": report.to_dict(),
        "wall_s": time.monotonic() - started,
    }  # fmt: skip
    card = {"base_model": parent["base_model"], "base": parent.get("base"), **summary, "parent": str(model_dir),
            "config": cfg.resolved()}  # fmt: skip
    save_model(model, tok, out, card)
    if hold is not None:
        hold.update(model=model, tokenizer=tok)
    log(f"dpo: saved M{round_no} to {out} ({report.steps} steps, {report.wall_s:.0f}s)")
    return summary
