"""The simulated user's measured agreement with the seekers, kept beside the call cache so that other runs can
state it (``measurements``: one record per seekers run, under ``<cache dir>/seekers/``).

A seekers run with a simulated user writes (``record``), from the points every scorer has finished: the user
model, the versions of the prompts its reaction reads, the points, talks and within-talk pairs, its headline
row (the expected reward where the run has readouts, else the written one) with its Spearman rho, its
within-talk pairwise agreement, their margins over the best baseline and their verdicts, and the line an
EmoHarbor or validate run's health quotes for the same model and prompts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..measurements import HEADLINES, stamp, user_of, write
from ..store.run_store import RunStore
from ..tables import interval, num
from .analysis import seekers_table

SUITE = "seekers"


def _num(e: dict[str, Any], signed: bool = False) -> str:
    if e.get("value") is not None and e.get("lo") is None:
        return f"{num(e['value'], signed=signed)} (too few talks for an interval)"
    return interval(e.get("value"), e.get("lo"), e.get("hi"), signed=signed)


VERDICT = {"yes": "above it", "below": "below it", "no": "not shown above it", "n/a": "no interval"}


def line(rec: dict[str, Any]) -> str:
    """The run-health line of a seekers record."""
    row = rec["row"]
    return (
        f"Simulated user's measured agreement with the seekers' own ratings (emoharbor seekers, {rec['size']} "
        f"points in {rec['talks']} talks, {rec['date'][:10]}): {rec['headline']} orders the seeker's within-talk "
        f"pairs as the seeker did in {_num(row['pairs'])} (best baseline {row['pairs_best']}, margin "
        f"{_num(row['pairs_margin'], True)}: {VERDICT[row['pairs_beats']]}); Spearman with the rating "
        f"{_num(row['rho'])}"
    )


def record(store: RunStore, *, seed: int = 0, n_boot: int = 2000) -> Path | None:
    """Write the record of the seekers run in ``store`` (open); its path, or None when the run has no simulated
    user, no finished point or no user row, or the cache folder cannot be written."""
    user = user_of(store)
    if user is None:
        return None
    model, versions = user
    data = seekers_table(store, seed=seed, n_boot=n_boot, by_file=False)
    rows = {r["scorer"]: r for r in data["rows"] if not r["baseline"]}
    headline = next((h for h in HEADLINES if h in rows), None)
    if not data["points"] or headline is None:
        return None
    keep = ("rho", "pairs", "rho_margin", "pairs_margin", "rho_best", "pairs_best", "rho_beats", "pairs_beats")
    rec: dict[str, Any] = {
        "suite": SUITE,
        "user_model": model,
        "prompt_versions": versions,
        "size": data["points"],
        "talks": data["talks"],
        "pairs": data["pairs"],
        "sources": data["sources"],
        "headline": headline,
        "row": {k: rows[headline][k] for k in keep},
        **stamp(store),
    }
    rec["line"] = line(rec)
    return write(SUITE, model, versions, rec)
