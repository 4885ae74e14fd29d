"""The simulated user's measured realism, kept beside the call cache so that other runs can state it
(``measurements``: one record per realism run, under ``<cache dir>/realism/``).

A realism run writes (``record``), from the cuts it has finished: the user model, the versions of every prompt
its user reads (a run's health quotes it only for a user that reads the same), the cuts and talks, the headline
figures and the line an EmoHarbor run's health (and the demo) quotes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..measurements import stamp, write
from ..store.record import user_model
from ..store.run_store import RunStore
from .analysis import CHECKS, agent_of, next_table

SUITE = "realism"


def _pct(e: dict[str, Any] | None) -> str:
    return "n/a" if not e or e.get("value") is None else f"{100 * e['value']:.0f}%"


def line(rec: dict[str, Any]) -> str:
    """The run-health line of a realism record: the next-message figures against people's."""
    rows = {r["figure"]: r for r in rec["rows"]}
    words = rows["words"]
    auroc = rec.get("auroc") or {}
    floor = rec.get("auroc_floor") or {}
    parts = [
        f"words per message {words['sim']['value']:.0f} (people {words['real']['value']:.0f})",
        f"thanks {_pct(rows['gratitude']['sim'])} (people {_pct(rows['gratitude']['real'])})",
        f"the supporter's voice {_pct(rows['voice']['sim'])}",
        f"narrates its inner state {_pct(rows['narrates']['sim'])}",
    ]
    stops = rec.get("false_stops")
    if stops and stops["sim"]["value"] is not None:
        parts.append(f"ends the talk at {100 * stops['sim']['value']:.0f}% of cuts where the real seeker went on")
    if auroc.get("value") is not None:
        real = f"; real against real {floor['value']:.2f}" if floor.get("value") is not None else ""
        parts.append(f"told apart from people at AUROC {auroc['value']:.2f}{real}")
    met = sum(1 for g in rec["verdicts"].values() if g == "met")
    return (f"Simulated user's measured realism (emoharbor realism, {rec['user_agent']} user, {rec['size']} cuts of "
            f"{rec['talks']} ESConv talks, {rec['date'][:10]}): {', '.join(parts)}; {met} of "
            f"{len(rec['verdicts'])} goals met")  # fmt: skip


def record(store: RunStore, *, seed: int = 0, n_boot: int = 1000) -> Path | None:
    """Write the record of the realism run in ``store`` (open); its path, or None when no cut is finished yet
    or the cache folder cannot be written."""
    cfg = store.config()
    model = user_model(cfg)
    versions = {k: str(v) for k, v in (cfg.get("prompt_versions") or {}).items()}
    nxt = next_table(store, seed=seed, n_boot=n_boot)  # the whole talks are not in the record: not made
    if not model or not nxt["cuts"] or not nxt["rows"]:
        return None
    disc = nxt.get("discriminator") or {}
    verdicts = {r["figure"]: r["verdict"] for r in nxt["rows"]}
    verdicts |= {k: nxt[k]["verdict"] for k in CHECKS if nxt.get(k)}
    rec: dict[str, Any] = {
        "suite": SUITE,
        "user_model": model,
        "user_agent": agent_of(store),
        "prompt_versions": versions,
        "size": nxt["cuts"],
        "talks": nxt["talks"],
        "rows": nxt["rows"],
        "auroc": disc.get("sim_vs_real"),
        "auroc_floor": disc.get("real_vs_real"),
        "false_stops": nxt.get("false_stops"),
        "verdicts": verdicts,
        **stamp(store),
    }
    rec["line"] = line(rec)
    return write(SUITE, model, versions, rec)
