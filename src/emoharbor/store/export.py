"""Exporting a run store to JSONL or CSV (one file per result kind, plus calls and events)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from .run_store import RunStore


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for k, v in row.items()}


def _write(path: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        if fmt == "jsonl":
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        else:
            fields: list[str] = []
            for r in rows:
                fields += [k for k in r if k not in fields]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in rows:
                w.writerow(_flat(r))
    os.replace(tmp, path)
    return path


def export_run(store: RunStore, out: Path, fmt: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in store.kinds():
        rows = [{"key": k, **d} for k, d in store.items(kind)]
        written.append(_write(out / f"{kind}.{fmt}", rows, fmt))
    written.append(_write(out / f"calls.{fmt}", store.calls(), fmt))
    written.append(_write(out / f"events.{fmt}", store.events(), fmt))
    meta = {k: v for k, v in store.meta().items() if k != "config"}
    written.append(_write(out / f"meta.{fmt}", [{**meta, "config": store.config()}], fmt))
    return written
