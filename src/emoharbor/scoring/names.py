"""The names the scorers' records use, in a module of their own, so that reading a run's figures imports
neither a run nor model code."""

from __future__ import annotations

USER = "user"  # the scorer name of the simulated user's reaction
REAL = "real"  # the name of the real reply (beside the bad replies' makers)
