"""The simulated user's measured sensitivity, kept beside the call cache so that other runs can state it
(``measurements``: one record per sensitivity run, under ``<cache dir>/sensitivity/``).

A finished sensitivity run with a simulated user writes (``record``): the user model, the versions of the
prompts its reaction reads (the chain's ``REACTION_PROMPTS``: user_system, user_appraise, user_feel, the
Feeler's scales and the persona card), the cases, the suite's version, the user rows' "all kinds" share with
its interval and tie rate and their shares per bad reply, the run folder, the date and the line an EmoHarbor or
validate run's health quotes (``line``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..measurements import HEADLINES, SENSITIVITY, prompts_hash, stamp, user_of, write
from ..stats.bootstrap import TOO_SMALL
from ..store.run_store import RunStore
from .render import pct

USER_ROWS = ("user reward", "user reaction", "user fit", "user relief", "user trust")


def _rows(data: dict[str, Any], column: str) -> dict[str, dict[str, Any]]:
    out = {}
    for r in data["rows"]:
        if r["scorer"].split(" (")[0] not in USER_ROWS:
            continue
        c = r[column]
        out[r["scorer"]] = {"share": c["share"], "lo": c["lo"], "hi": c["hi"], "n": c["n"], "ties": c["ties"],
                            "tie_rate": r["tie_rate"], "pairs": r["pairs"],
                            "kinds": {k: v["share"] for k, v in r["cells"].items()}}  # fmt: skip
    return out


def record(store: RunStore, table: Callable[..., dict[str, Any]], column: str, *, seed: int = 0,
           n_boot: int = 2000) -> Path | None:  # fmt: skip
    """Write the measured record of the sensitivity run in ``store`` (open): the figures of the cases it
    has finished (a run stopped part-way writes its own, and a resumed one writes it anew), from
    ``table(store, seed=, n_boot=)`` (``analysis.sensitivity_table``, made only when there is a user to
    record), its shares read from its ``column`` (the one over every bad reply); its path, or None
    when the run has no simulated user, no finished case or no user row (nothing
    is written) or the cache folder cannot be written (the run's own results are not affected)."""
    user = user_of(store)
    if user is None:
        return None
    model, versions = user
    cfg = store.config()
    data = table(store, seed=seed, n_boot=n_boot)
    if not data["cases"]:
        return None
    rows = _rows(data, column)
    headline = next((h for h in HEADLINES if h in rows), None)
    if headline is None:
        return None
    rec = {
        "user_model": model,
        "prompt_versions": versions,
        "prompts_hash": prompts_hash(versions),
        "cases": data["cases"],
        "sources": data["sources"],
        "kinds": data["kinds"],
        "suite": data["suite"],
        "reward": cfg.get("reward"),
        "headline": headline,
        "rows": rows,
        **stamp(store),
    }
    return write(SENSITIVITY, model, versions, {**rec, "line": line(rec)})


def line(rec: dict[str, Any]) -> str:
    """The run-health line of a sensitivity record."""
    row = rec["rows"][rec["headline"]]
    if row["share"] is None:
        share = "n/a"
    elif row["lo"] is None:
        share = f"{pct(row['share'])}% ({TOO_SMALL})"
    else:
        share = f"{pct(row['share'])}% [{pct(row['lo'])}, {pct(row['hi'])}]"
    date = str(rec.get("date", ""))[:10]
    return (
        f"Simulated user's measured sensitivity (emoharbor sensitivity, {rec['cases']} cases, {date}): prefers "
        f"the real reply in {share} of pairs (ties {pct(row['tie_rate'])}%)"
    )
