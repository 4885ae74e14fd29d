"""The name a sensitivity run's table gives its column over every bad reply (the scorers' names are
``scoring.names``'), in a module of its own below the run and its analysis."""

from __future__ import annotations

ALL = "all kinds"  # the table's column over every bad reply
# A bad reply is named by its maker (``bad.MAKERS``); what the suite writes keeps the older names that runs,
# exports and records already hold: this column, "kinds" (the makers, in a table's data and a measured record),
# "kind" (a tidy row's and a CSV row's maker) and "bad_kind" (a stored pair's)
