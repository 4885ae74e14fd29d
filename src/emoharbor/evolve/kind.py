"""Evolve's kind of run (``kinds.py``): a refine round's folder (``evolve.rounds``), named in messages only."""

from __future__ import annotations

from ..kinds import RunKind


class RefineKind(RunKind):
    name = "evolve_refine"
    title = "an evolve refine round"
