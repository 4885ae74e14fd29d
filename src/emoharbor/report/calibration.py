"""The simulated user's measured sensitivity, kept beside the call cache so that other runs can state it.

A finished sensitivity run with a simulated user writes one small JSON record (``record``) to
``<cache dir>/sensitivity/<model>-<prompts hash>-<run hash>.json``: the user model, the versions of the
prompts its reaction reads (the chain's ``REACTION_PROMPTS``: user_system, user_appraise, user_feel, the
Feeler's scales and the persona card), the cases, the suite's version, the user rows' "all kinds" share with
its interval and tie rate and their per-kind shares, the run folder and the date.
``lookup(model, prompt_versions)`` gives the newest record made with that model and those prompt versions
(another prompt's version, such as a supporter's, is not compared); an EmoHarbor or validate run's health
names it (``report.health``), or says it has not been measured.

Another suite that measures the user against people (``emoharbor seekers``: the seekers' own ratings) writes
its records the same way (``write``) under a folder of its own name, each with the line a run's health quotes
(``line``) and its size (``size``, the points it stands on): ``quoted`` gives the line of every such suite's
best record for the run's user model and prompts, so a new suite reaches the health without a change here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..models.cache import default_cache_dir
from ..simulate.agents import same_user
from ..stats.bootstrap import TOO_SMALL
from ..store.record import user_model
from ..store.run_store import RunStore

# what the chain's reaction reads (``simulate.chain_user.REACTION_PROMPTS``), named here so that a report
# reading the records imports no model code
PROMPTS = ("user_system", "user_appraise", "user_feel", "user_feel_scale", "persona_card")
FOLDER = "sensitivity"
SHIPPED = Path(__file__).resolve().parent.parent / "measured"  # the records measured for the embedded model
HEADLINES = ("user reward (expected)", "user reward")  # the row a run's health quotes: the first there is
USER_ROWS = ("user reward", "user reaction", "user fit", "user relief", "user trust")


def chain_versions(prompt_versions: dict[str, Any] | None) -> dict[str, str] | None:
    """The versions of the prompts the user's reaction reads, from a run's ``prompt_versions`` (which may
    name more); None when one of them is missing (the run's user did not read them)."""
    got = prompt_versions or {}
    if any(not got.get(p) for p in PROMPTS):
        return None
    return {p: str(got[p]) for p in PROMPTS}


def prompts_hash(versions: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def key_prefix(model: str, versions: dict[str, str]) -> str:
    return f"{safe(model)}-{prompts_hash(versions)}"


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


def user_of(store: RunStore) -> tuple[str, dict[str, str]] | None:
    """The simulated user's model of the run in ``store`` and the versions of its reaction prompts; None for a
    run without one (or whose user read no reactions)."""
    cfg = store.config()
    model = user_model(cfg)
    versions = chain_versions(cfg.get("prompt_versions"))
    return None if not model or versions is None else (str(model), versions)


def record(store: RunStore, table: Callable[..., dict[str, Any]], column: str, *, seed: int = 0,
           n_boot: int = 2000) -> Path | None:  # fmt: skip
    """Write the calibration record of the sensitivity run in ``store`` (open): the figures of the cases it
    has finished (a run stopped part-way writes its own, and a resumed one writes it anew), from
    ``table(store, seed=, n_boot=)`` (``analysis.sensitivity_table``, made only when there is a user to
    record), its shares read from its ``column`` (the one over every kind of bad reply); its path, or None
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
    return write(FOLDER, model, versions, rec)


def stamp(store: RunStore) -> dict[str, Any]:
    """What every measured record says of the run it comes from: its folder, its config hash, when it was written,
    and its simulated user's settings (``matches`` compares them with a run's, where both say them)."""
    return {"run": str(store.folder.resolve()), "config_hash": store.meta().get("config_hash", ""),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "user_settings": store.config().get("user_agent")}  # fmt: skip


def write(suite: str, model: str, versions: dict[str, str], rec: dict[str, Any]) -> Path | None:
    """Write ``rec`` (stamped with its run: ``stamp``) as the record of its run folder in ``suite``'s folder of the
    cache (one file per run, replaced whole); its path, or None when the folder cannot be written."""
    run_hash = hashlib.sha256(str(rec["run"]).encode()).hexdigest()[:8]
    path = default_cache_dir() / suite / f"{key_prefix(model, versions)}-{run_hash}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(rec, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def matches(rec: Any, model_name: str, prompt_versions: dict[str, Any], settings: dict[str, Any] | None = None) -> bool:
    """Whether ``rec`` was measured on ``model_name`` with every prompt it names at the version the run read, and,
    where both say them, with the run's simulated user's settings (``user_settings``: its ``user_agent:`` block;
    how a seeker talks and when it ends depend on them)."""
    versions = rec.get("prompt_versions") if isinstance(rec, dict) else None
    said = rec.get("user_settings") if isinstance(rec, dict) else None
    return (isinstance(versions, dict) and bool(versions) and rec.get("user_model") == model_name
            and all(prompt_versions.get(k) == v for k, v in versions.items())
            and (settings is None or not isinstance(said, dict) or same_user(said, settings)))  # fmt: skip


def lookup(model_name: str | None, prompt_versions: dict[str, Any] | None, suite: str = FOLDER,
           settings: dict[str, Any] | None = None) -> dict[str, Any] | None:  # fmt: skip
    """The record of ``suite`` with the most cases (``size``; the newest among equals) of ``model_name`` whose
    prompts the run (``prompt_versions``, which may name more) read at the same versions: the user's reaction
    prompts for the sensitivity and seekers suites, every prompt of its user for the realism suite; None if
    there is none."""
    if not model_name or not prompt_versions:
        return None
    size = "cases" if suite == FOLDER else "size"
    for where in (default_cache_dir() / suite, SHIPPED / suite):
        found: list[dict[str, Any]] = []
        for p in where.glob(f"{safe(model_name)}-*.json") if where.is_dir() else []:
            try:
                rec = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if matches(rec, model_name, prompt_versions, settings):
                found.append(rec)
        if found:
            return max(found, key=lambda r: (int(r.get(size) or 0), str(r.get("date", ""))))
    return None


def quoted(model_name: str | None, prompt_versions: dict[str, Any] | None,
           settings: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
    """(suite, record) of every suite besides the sensitivity's with a record for this user model and these
    prompts (its best, ``lookup``) that has a ``line`` to quote, by suite name."""
    if not model_name:
        return []
    suites = {p.name for root in (default_cache_dir(), SHIPPED) if root.is_dir() for p in root.iterdir() if p.is_dir()}
    out = []
    for suite in sorted(suites - {FOLDER}):
        rec = lookup(model_name, prompt_versions, suite, settings)
        if rec is not None and isinstance(rec.get("line"), str):
            out.append((suite, rec))
    return out


def health_lines(model_name: str | None, prompt_versions: dict[str, Any] | None,
                 settings: dict[str, Any] | None = None) -> list[str]:  # fmt: skip
    """What a run's health says of its simulated user in text: its measured sensitivity (or how to measure it,
    for a user whose reactions are read), then every other suite's line."""
    if not model_name:
        return []
    rec = lookup(model_name, prompt_versions)
    out = [sentence(rec) if rec else not_measured(model_name)] if chain_versions(prompt_versions) else []
    return out + [r["line"] for _, r in quoted(model_name, prompt_versions, settings)]


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}"


def sentence(rec: dict[str, Any]) -> str:
    """The run-health line of a calibration record."""
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


def not_measured(model: str) -> str:
    return (
        f"The simulated user's sensitivity has not been measured for {model} with these prompts: "
        f"`emoharbor sensitivity --esconv FILE --model {model}`"
    )
