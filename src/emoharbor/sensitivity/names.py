"""The names a sensitivity run's records and table use, in a module of their own below the run and its
analysis, so that reading a run's figures (the table, the calibration record other runs quote) imports
neither the run nor model code."""

from __future__ import annotations

USER = "user"  # the scorer name of the simulated user's reaction
REAL = "real"  # the reply kind of the real reply
ALL = "all kinds"  # the table's column over every kind of bad reply
