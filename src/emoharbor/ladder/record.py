"""The ladder's measured record, kept beside the call cache so that other runs can state it
(``measurements``: one record per ladder run, under ``<cache dir>/ladder/``): the user model, the versions of
the prompts its user reads (a run's health quotes it only for a user that reads the same), the profiles and rungs,
each scorer's mean tau and resolution, the goals' verdicts, and the line an EmoHarbor run's health and the demo
quote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..measurements import stamp, write
from ..simulate.agents import user_agent
from ..store.record import user_model
from ..store.run_store import RunStore
from .analysis import LIVED, ladder_table
from .render import share

SUITE = "ladder"


def _tau(rows: dict[str, Any], name: str) -> str:
    t = (rows.get(name) or {}).get("tau") or {}
    return "n/a" if t.get("value") is None else f"{t['value']:.2f}"


def line(rec: dict[str, Any]) -> str:
    """The run-health line of a ladder record."""
    rows = rec["rows"]
    user, third = rows.get("user") or {}, rows.get("third_party") or {}
    judge = str(third.get("scorer", "third_party")).split(": ")[0]
    met = sum(1 for g in rec["verdicts"].values() if g == "met")
    scored = sum(1 for g in rec["verdicts"].values() if g != "n/a")
    return (f"Ladder of supporters of known quality (emoharbor ladder, {rec['user_agent']} user, {rec['size']} "
            f"profiles x {len(rec['rungs'])} rungs, {rec['date'][:10]}): default above dismissive by the user's "
            f"rating in {share(user.get('default>dismissive'), '%')} of profiles, by the third-party judge ({judge}) "
            f"in "
            f"{share(third.get('default>dismissive'), '%')}; mean tau against the known order: the user's rating "
            f"{_tau(rows, 'user')}, its final intensity {_tau(rows, LIVED)}, the third-party judge "
            f"{_tau(rows, 'third_party')}; {met} of {scored} goals met")  # fmt: skip


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Each headline scorer's tau, resolution and pairs (by "above>below"), keyed user, third_party, lived."""
    picks = {"user": ("user", "overall"), LIVED: (LIVED, "final intensity (lower better)")}
    third = next((r["group"] for r in data["rows"] if r["group"].startswith("third_party")), None)
    if third:
        picks["third_party"] = (third, "overall")
    out = {}
    for name, (group, scorer) in picks.items():
        row = next((r for r in data["rows"] if (r["group"], r["scorer"]) == (group, scorer)), None)
        if row is not None:
            out[name] = {"scorer": f"{group}: {scorer}", "tau": row["tau"], "resolution": row["resolution"],
                         **{f"{p['above']}>{p['below']}": p for p in row["pairs"]}}  # fmt: skip
    return out


def record(store: RunStore, *, seed: int = 0, n_boot: int = 1000) -> Path | None:
    """Write the record of the ladder run in ``store`` (open); its path, or None when no profile has every rung
    finished yet, the run has no user model, or the cache folder cannot be written."""
    cfg = store.config()
    model = user_model(cfg)
    agent = (cfg.get("user_agent") or {}).get("agent", "chain")
    wanted = set(user_agent(agent).prompts)
    versions = {k: str(v) for k, v in (cfg.get("prompt_versions") or {}).items() if k in wanted}
    data = ladder_table(store, seed=seed, n_boot=n_boot)
    if not model or not data["complete_profiles"]:
        return None
    rec: dict[str, Any] = {
        "suite": SUITE,
        "user_model": model,
        "user_agent": agent,
        "judges": data["judges"],
        "prompt_versions": versions,
        "size": data["complete_profiles"],
        "rungs": data["rungs"],
        "rows": summary(data),
        "verdicts": {g["goal"]: g["verdict"] for g in data["goals"]},
        **stamp(store),
    }
    rec["line"] = line(rec)
    return write(SUITE, model, versions, rec)
