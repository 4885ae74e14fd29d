"""Exporting a run store to JSONL or CSV (one file per result table, plus calls, events and meta)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from .run_store import RunStore


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list, tuple)) else v for k, v in row.items()}


def write_rows(path: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        if fmt == "jsonl":
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        else:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))  # in order of first use
            w.writeheader()
            for r in rows:
                w.writerow(_flat(r))
    os.replace(tmp, path)
    return path


def export_run(
    store: RunStore, out: Path, fmt: str, tables: dict[str, list[dict[str, Any]]] | None = None
) -> list[Path]:
    """Every result table, the calls, the events and the meta; ``tables``: more files by name (a run kind's
    own analysis tables)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [write_rows(out / f"{name}.{fmt}", rows, fmt) for name, rows in (tables or {}).items()]
    for table in store.tables():
        rows = [{"key": k, **d} for k, d in store.items(table)]
        written.append(write_rows(out / f"{table}.{fmt}", rows, fmt))
    written.append(write_rows(out / f"calls.{fmt}", store.calls(), fmt))
    written.append(write_rows(out / f"events.{fmt}", store.events(), fmt))
    meta = {k: v for k, v in store.meta().items() if k != "config"}
    written.append(write_rows(out / f"meta.{fmt}", [{**meta, "config": store.config()}], fmt))
    return written
