"""The name a sensitivity run's table gives its column over every kind of bad reply (the scorers' names are
``scoring.names``'), in a module of its own below the run and its analysis."""

from __future__ import annotations

ALL = "all kinds"  # the table's column over every kind of bad reply
