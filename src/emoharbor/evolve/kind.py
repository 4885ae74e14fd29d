"""Evolve's kinds of run (``kinds.py``): a refine round's folder (``evolve.rounds``) and an evaluation's reply card
(``evolve.reply_card``), named in messages only."""

from __future__ import annotations

from ..kinds import RunKind


class RefineKind(RunKind):
    name = "evolve_refine"
    title = "an evolve refine round"


class RepliesKind(RunKind):
    """``evolve eval``'s reply card (``evolve.reply_card``): each model's replies to held-out contexts, scored."""

    name = "evolve_replies"
    title = "an evolve eval reply card"
