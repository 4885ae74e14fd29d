"""The control of a self-evolution run: a DPO model trained from M0 with the optimizer steps of all the rounds
together, on the same pairs, but each pair's chosen and rejected replies swapped at random (a seeded draw, each
pair with probability 1/2). It has had the same extra training as M1, M2, ... without their preferences, so a gain
of theirs over it is the preferences', not the training's (``emoharbor evolve control``; docs/evolve.md).

It reads the run folder ``evolve run`` wrote: ``m0/``, and the cards of ``m1/``, ``m2/``, ... (the pair files each
round trained on, and its steps); it writes ``control-pairs.jsonl`` and the model ``control/``, resumable as any
training stage, skipped once its card is there."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..models.folder import MODEL_CARD
from ..models.hf import read_model_card
from .config import EvolveConfig
from .pairs import PreferencePair, read_pairs, write_pairs
from .trainer import Log, main_log

FOLDER = "control"
PAIRS = "control-pairs.jsonl"


def round_cards(run: Path) -> list[dict[str, Any]]:
    """The cards of the run's trained rounds, M1, M2, ... in order (up to the first missing one)."""
    cards: list[dict[str, Any]] = []
    while (run / f"m{len(cards) + 1}" / MODEL_CARD).is_file():
        cards.append(read_model_card(run / f"m{len(cards) + 1}"))
    return cards


def round_pair_files(run: Path, cards: list[dict[str, Any]]) -> list[Path]:
    """Every pair file the rounds trained on, each once (a file added to every round, ``dpo.extra_pairs``, too)."""
    files: dict[Path, None] = {}
    for t, card in enumerate(cards, 1):
        for f in (card.get("pairs") or {}).get("files") or []:
            p = Path(f)
            if not p.is_file():
                raise EmoharborError(f"{run / f'm{t}' / MODEL_CARD}: field 'pairs.files': {f} not found (the pairs "
                                     f"round {t} trained on are what the control is trained on)")  # fmt: skip
            files.setdefault(p.resolve())
    return list(files)


def swapped(pairs: list[PreferencePair], seed: int) -> tuple[list[PreferencePair], int]:
    """Each pair with its chosen and rejected replies swapped with probability 1/2 (seeded), and how many were."""
    rng = random.Random(seed)
    out, n = [], 0
    for p in pairs:
        swap = rng.random() < 0.5
        n += swap
        chosen, rejected = (p.rejected, p.chosen) if swap else (p.chosen, p.rejected)
        out.append(PreferencePair(p.prompt, chosen, rejected, f"control:{p.id}", p.source,
                                  {**p.provenance, "control_swapped": swap}))  # fmt: skip
    return out, n


def run_control(cfg: EvolveConfig, run: Path, *, log: Log) -> dict[str, Any]:
    """Train the control of the run in ``run`` into ``run/control`` (resuming from a checkpoint there; skipped
    when it is whole)."""
    from .dpo import run_dpo

    say = main_log(log)
    folder = run / FOLDER
    if (folder / MODEL_CARD).is_file():
        say(f"control: {folder} is there, skipped")
        return read_model_card(folder) | {"skipped": True}
    m0 = run / "m0"
    if not (m0 / MODEL_CARD).is_file():
        raise EmoharborError(f"{run}: no m0/ with its model card: the control starts from the run's M0 (evolve run)")
    cards = round_cards(run)
    if not cards:
        raise EmoharborError(f"{run}: no trained round (m1/ with its model card): train the rounds first (evolve run)")
    round_steps = [int((c.get("train") or {}).get("steps", 0)) for c in cards]
    steps = sum(round_steps)
    files = round_pair_files(run, cards)
    pairs, n = swapped([p for f in files for p in read_pairs(f)], cfg.seed)
    if not pairs:
        raise EmoharborError(f"{run}: the rounds' pair files hold no pair: nothing to train the control on")
    write_pairs(run / PAIRS, pairs)  # the same file on every run of the same settings
    control = {"rounds": len(cards), "steps": steps, "pairs": len(pairs), "swapped": n, "seed": cfg.seed,
               "files": [str(f) for f in files], "round_steps": round_steps}  # fmt: skip
    say(f"control: {len(pairs)} pairs of {len(cards)} round(s), {n} swapped; {steps} steps from {m0}")
    budget = cfg.model_copy(deep=True)
    budget.dpo.train_args = {**budget.dpo.train_args, "max_steps": steps}  # the rounds' steps together
    return run_dpo(budget, m0, [run / PAIRS], folder, log=log, control=control)
