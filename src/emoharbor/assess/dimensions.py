"""The 10 dimensions of personalised support and their anchored rubric (a data file)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True)
class Dimension:
    key: str
    group: str  # generic | personal | outcome
    ask: str
    levels: dict[int, str]


def _rubric_text() -> str:
    return resources.files(__package__).joinpath("rubric.yaml").read_text("utf-8")


def rubric_version() -> str:
    return hashlib.sha256(_rubric_text().encode()).hexdigest()[:10]


@cache
def dimensions() -> tuple[Dimension, ...]:
    raw: dict[str, Any] = yaml.safe_load(_rubric_text())
    return tuple(
        Dimension(key, d["group"], d["ask"], {int(k): str(v) for k, v in d["levels"].items()}) for key, d in raw.items()
    )


def keys() -> list[str]:
    return [d.key for d in dimensions()]


def group_keys(group: str) -> list[str]:
    return [d.key for d in dimensions() if d.group == group]


def rubric_text() -> str:
    lines = []
    for d in dimensions():
        lines.append(f"- {d.key}: {d.ask}")
        lines += [f"    {lvl} = {txt}" for lvl, txt in sorted(d.levels.items())]
    return "\n".join(lines)


def scores_schema() -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}, "evidence": {"type": "string"}},
        "required": ["score", "evidence"],
    }
    return {"type": "object", "properties": {k: item for k in keys()}, "required": keys()}
