"""The measured records of the simulated user: what each suite that measures it wrote, kept beside the call
cache so that other runs can state it, and the ones shipped for the embedded model (``measured/``).

A finished run of a suite that measures the user (``emoharbor sensitivity``, ``seekers``, ``realism``,
``ladder``) writes one small JSON record (``write``, stamped with its run: ``stamp``) to
``<cache dir>/<suite>/<model>-<prompts hash>-<run hash>.json``: the user model, the versions of the prompts it
read, the suite's figures, its size and the line a run's health quotes (``line``). Each suite's record and its
line are its own (``sensitivity/record.py``, ``seekers/record.py``, ...).
``lookup(model, prompt_versions, suite)`` gives a suite's best record made with that model and those prompt
versions (another prompt's version, such as a supporter's, is not compared); an EmoHarbor or validate run's health
quotes the sensitivity's (``health_lines``, ``report.health``), or says it has not been measured, then every
other suite's (``quoted``), so a new suite reaches the health without a change here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from .models.cache import default_cache_dir
from .simulate.agents import same_user
from .store.record import user_model
from .store.run_store import RunStore

# what the chain's reaction reads (``simulate.chain_user.REACTION_PROMPTS``), named here so that a report
# reading the records imports no model code
PROMPTS = ("user_system", "user_appraise", "user_feel", "user_feel_scale", "persona_card")
SENSITIVITY = "sensitivity"  # the suite whose record a run's health quotes first (or says is missing)
SHIPPED = Path(__file__).resolve().parent / "measured"  # the records measured for the embedded model
HEADLINES = ("user reward (expected)", "user reward")  # the row a run's health quotes: the first there is


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


def user_of(store: RunStore) -> tuple[str, dict[str, str]] | None:
    """The simulated user's model of the run in ``store`` and the versions of its reaction prompts; None for a
    run without one (or whose user read no reactions)."""
    cfg = store.config()
    model = user_model(cfg)
    versions = chain_versions(cfg.get("prompt_versions"))
    return None if not model or versions is None else (str(model), versions)


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


def lookup(model_name: str | None, prompt_versions: dict[str, Any] | None, suite: str = SENSITIVITY,
           settings: dict[str, Any] | None = None) -> dict[str, Any] | None:  # fmt: skip
    """The record of ``suite`` with the most cases (``size``; the newest among equals) of ``model_name`` whose
    prompts the run (``prompt_versions``, which may name more) read at the same versions: the user's reaction
    prompts for the sensitivity and seekers suites, every prompt of its user for the realism suite; None if
    there is none. A record without its ``line`` (a sensitivity record written before it kept one) is passed
    over: a new run of the suite writes one."""
    if not model_name or not prompt_versions:
        return None
    size = "cases" if suite == SENSITIVITY else "size"
    for where in (default_cache_dir() / suite, SHIPPED / suite):
        found: list[dict[str, Any]] = []
        for p in where.glob(f"{safe(model_name)}-*.json") if where.is_dir() else []:
            try:
                rec = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if matches(rec, model_name, prompt_versions, settings) and isinstance(rec.get("line"), str):
                found.append(rec)
        if found:
            return max(found, key=lambda r: (int(r.get(size) or 0), str(r.get("date", ""))))
    return None


def quoted(model_name: str | None, prompt_versions: dict[str, Any] | None,
           settings: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
    """(suite, record) of every suite besides the sensitivity's with a record for this user model and these
    prompts (its best, ``lookup``), by suite name."""
    if not model_name:
        return []
    suites = {p.name for root in (default_cache_dir(), SHIPPED) if root.is_dir() for p in root.iterdir() if p.is_dir()}
    out = []
    for suite in sorted(suites - {SENSITIVITY}):
        rec = lookup(model_name, prompt_versions, suite, settings)
        if rec is not None:
            out.append((suite, rec))
    return out


def health_lines(model_name: str | None, prompt_versions: dict[str, Any] | None,
                 settings: dict[str, Any] | None = None) -> list[str]:  # fmt: skip
    """What a run's health says of its simulated user in text: its measured sensitivity (or how to measure it,
    for a user whose reactions are read), then every other suite's line."""
    if not model_name:
        return []
    rec = lookup(model_name, prompt_versions)
    out = [rec["line"] if rec else not_measured(model_name)] if chain_versions(prompt_versions) else []
    return out + [r["line"] for _, r in quoted(model_name, prompt_versions, settings)]


def not_measured(model: str) -> str:
    return (
        f"The simulated user's sensitivity has not been measured for {model} with these prompts: "
        f"`emoharbor sensitivity --esconv FILE --model {model}`"
    )
