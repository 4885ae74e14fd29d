"""Preference pairs: JSONL in the conversational prompt/chosen/rejected form TRL reads, plus an id,
a source and the provenance of each pair.

``{"prompt": [{"role": "system"|"user"|"assistant", "content": ...}, ...],
   "chosen": [{"role": "assistant", "content": ...}], "rejected": [{"role": "assistant", "content": ...}],
   "id": ..., "source": "self_refine"|"emoharbor"|"heart", "provenance": {...}}``
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.jsonl import read_jsonl
from ..errors import DataError
from ..models.base import Message

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class PreferencePair:
    prompt: list[Message]
    chosen: str
    rejected: str
    id: str = ""
    source: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "chosen": [{"role": "assistant", "content": self.chosen}],
            "rejected": [{"role": "assistant", "content": self.rejected}],
            "id": self.id,
            "source": self.source,
            "provenance": self.provenance,
        }


def is_messages(value: Any) -> bool:
    """A list of ``{role, content}`` messages (an empty list too)."""
    return isinstance(value, list) and all(
        isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str) for m in value
    )


def _messages(value: Any, where: str) -> list[Message]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not is_messages(value):
        raise DataError(f"{where}: a string or a list of {{role, content}} messages")
    return [{"role": m["role"], "content": m["content"]} for m in value]


def _reply(value: Any, where: str) -> str:
    if isinstance(value, str):
        text = value
    else:
        msgs = _messages(value, where)
        if len(msgs) != 1 or msgs[0]["role"] != "assistant":
            raise DataError(f"{where}: one assistant message")
        text = msgs[0]["content"]
    if not text.strip():
        raise DataError(f"{where}: empty reply")
    return text


def parse_pair(rec: Any, where: str) -> PreferencePair:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: not a JSON object")
    for key in ("prompt", "chosen", "rejected"):
        if key not in rec:
            raise DataError(f"{where}: field '{key}' is missing")
    prov = rec.get("provenance") or {}
    return PreferencePair(
        _messages(rec["prompt"], f"{where}: field 'prompt'"),
        _reply(rec["chosen"], f"{where}: field 'chosen'"),
        _reply(rec["rejected"], f"{where}: field 'rejected'"),
        str(rec.get("id", "")),
        str(rec.get("source", "")),
        prov if isinstance(prov, dict) else {"note": str(prov)},
    )


def read_pairs(path: str | Path) -> list[PreferencePair]:
    p = Path(path)
    return [parse_pair(rec, f"{p}: line {n}") for n, rec in read_jsonl(p, "pair file")]


def write_pairs(path: str | Path, pairs: list[PreferencePair]) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair.to_json(), ensure_ascii=False) + "\n")
    tmp.replace(p)
