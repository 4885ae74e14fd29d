"""One run record for every kind of run: ``open_run`` writes it (or checks it on a resume), ``read_run``
reads it back.

The record is the resolved config, plus the versions of the prompts the kind's units use (only those: a
change to another prompt does not block a resume) and a hash of the contents of every input file (profiles,
histories, ESConv, strategies...). Its hash leaves out the settings that change no output (``SETTINGS``:
how many calls at once, time-outs, retries, prices, ports): a resume that changes only those is allowed, and
what changed goes into the run's history; any other difference is refused, naming where it lies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..prompts import load_prompt
from .run_store import RunStore

SETTINGS = frozenset({"concurrency", "workers", "timeout_s", "max_retries", "price", "port"})
INPUTS = "input_files"
PROMPTS = "prompt_versions"


def hash_config(resolved: dict[str, Any]) -> str:
    """A short hash of a resolved config (JSON with sorted keys): part of default run folders' names."""
    blob = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def outcome_part(resolved: Any) -> Any:
    """The config without the settings that change no output, at any depth."""
    if isinstance(resolved, dict):
        return {k: outcome_part(v) for k, v in resolved.items() if k not in SETTINGS}
    if isinstance(resolved, list):
        return [outcome_part(v) for v in resolved]
    return resolved


def input_hashes(paths: Iterable[Path]) -> dict[str, str]:
    """The contents of each input file by path (a folder: every file in it; a missing file: "missing"), so
    that a run is not resumed over edited, moved or deleted profiles or histories."""
    out: dict[str, str] = {}
    for p in paths:
        if not p.exists():
            out[str(p)] = "missing"
            continue
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            try:
                with f.open("rb") as fh:
                    out[str(f)] = hashlib.file_digest(fh, "sha256").hexdigest()[:16]
            except OSError as e:
                raise EmoharborError(f"{f}: cannot be read ({e.strerror or e})") from None
    return out


def run_record(resolved: dict[str, Any], prompts: Iterable[str] = (), inputs: Iterable[Path] = ()) -> dict[str, Any]:
    return {**resolved, PROMPTS: {n: load_prompt(n).version for n in sorted(prompts)}, INPUTS: input_hashes(inputs)}


def record_hash(record: dict[str, Any]) -> str:
    return hash_config(outcome_part(record))


def open_run(folder: Path, kind: str, resolved: dict[str, Any], *, prompts: Iterable[str] = (),
             inputs: Iterable[Path] = ()) -> RunStore:  # fmt: skip
    """Start the run of ``kind`` in ``folder``, or resume it: ``resolved`` (the config) with the versions of
    ``prompts`` and the hashes of ``inputs`` must match what the run was started with, but for ``SETTINGS``."""
    return open_record(folder, kind, run_record(resolved, prompts, inputs))


def open_record(folder: Path, kind: str, record: dict[str, Any]) -> RunStore:
    """``open_run`` with the run record made already (``run_record``): a plan that holds it."""
    return RunStore.create_or_resume(folder, kind, record, record_hash(record))


def read_run(folder: Path, *kinds: str) -> tuple[RunStore, dict[str, Any]]:
    """The run in ``folder`` (of one of ``kinds``) and its config as it was resolved, without the versions and
    hashes ``open_run`` added."""
    store = RunStore.open_existing(folder, *kinds)
    return store, config_part(store.config())


def config_part(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in (PROMPTS, INPUTS)}


def user_model(record: dict[str, Any]) -> str | None:
    """The simulated user's model of any run, from its record: ``user`` in a suite's options (realism, sensitivity,
    seekers, validate, ladder), ``roles.user`` in an EmoHarbor run's config; None for a run without one."""
    spec = record.get("user") or (record.get("roles") or {}).get("user") or {}
    model = spec.get("model") if isinstance(spec, dict) else None
    return str(model) if model else None
