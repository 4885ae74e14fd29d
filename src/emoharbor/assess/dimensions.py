"""The 10 dimensions of personalised support and their anchored rubric (a data file).

A judge card may name another rubric of the same form (``builtin:NAME`` for a file shipped here, or a
path): ``load_rubric``. The module-level functions speak of the built-in 10-dimension rubric."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import ConfigError

DEFAULT_RUBRIC = "builtin:support10"
BUILTIN_RUBRICS = {"support10": "rubric.yaml", "overall": "rubric_overall.yaml", "reply": "rubric_reply.yaml"}
GROUPS = ("generic", "personal", "outcome")


@dataclass(frozen=True)
class Dimension:
    key: str
    group: str  # generic | personal | outcome
    ask: str
    levels: dict[int, str]


@dataclass(frozen=True)
class Rubric:
    ref: str  # builtin:NAME or the path it was read from
    source: str  # the file's text: its hash is the rubric's version
    dims: tuple[Dimension, ...]

    @property
    def version(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:10]

    def keys(self) -> list[str]:
        return [d.key for d in self.dims]

    def group_keys(self, group: str) -> list[str]:
        return [d.key for d in self.dims if d.group == group]

    def values(self) -> list[int]:
        """The score values every dimension allows (the levels the rubric anchors)."""
        return sorted({lvl for d in self.dims for lvl in d.levels})

    def prompt_text(self) -> str:
        lines = []
        for d in self.dims:
            lines.append(f"- {d.key}: {d.ask}")
            lines += [f"    {lvl} = {txt}" for lvl, txt in sorted(d.levels.items())]
        return "\n".join(lines)

    def schema(self, evidence: bool = True) -> dict[str, Any]:
        """The judge's reply: per dimension ``{"score": n, "evidence": "..."}``, or the bare integer."""
        score = {"type": "integer", "enum": self.values()}
        item = {"type": "object", "properties": {"score": score, "evidence": {"type": "string"}},
                "required": ["score", "evidence"]} if evidence else score  # fmt: skip
        return {"type": "object", "properties": {k: item for k in self.keys()}, "required": self.keys()}


def parse_rubric(ref: str, source: str) -> Rubric:
    """A rubric file: a mapping of dimension keys to ``group`` (generic, personal or outcome), ``ask`` and
    ``levels`` (integer level -> anchor text). A file that is not of that form is named in the error."""
    raw = userfiles.parse(ref if not ref.startswith("builtin:") else "rubric.yaml", source)
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{ref}: a rubric is a mapping of dimension keys to group, ask and levels")
    dims = []
    for key, d in raw.items():
        if not isinstance(d, dict) or not {"group", "ask", "levels"} <= set(d):
            raise ConfigError(f"{ref}: dimension {key!r} needs group, ask and levels")
        unknown = sorted(set(d) - {"group", "ask", "levels"})
        if unknown:
            raise ConfigError(f"{ref}: dimension {key!r}: unknown keys {unknown}: a dimension has group, ask, levels")
        if d["group"] not in GROUPS:
            raise ConfigError(f"{ref}: dimension {key!r}: group must be one of {', '.join(GROUPS)}, not {d['group']!r}")
        try:
            levels = {int(k): str(v) for k, v in dict(d["levels"]).items()}
        except (TypeError, ValueError):
            raise ConfigError(f"{ref}: dimension {key!r}: levels must map whole numbers to anchor texts") from None
        if len(levels) < 2:
            raise ConfigError(f"{ref}: dimension {key!r}: give at least two levels (whole number -> anchor text)")
        dims.append(Dimension(str(key), str(d["group"]), str(d["ask"]), levels))
    return Rubric(ref, source, tuple(dims))


@cache
def load_rubric(ref: str = DEFAULT_RUBRIC) -> Rubric:
    if ref.startswith("builtin:"):
        name = ref.removeprefix("builtin:")
        if name not in BUILTIN_RUBRICS:
            raise ConfigError(
                f"no built-in rubric {ref!r}; built-in: {', '.join(f'builtin:{n}' for n in BUILTIN_RUBRICS)}"
            )
        return parse_rubric(ref, resources.files(__package__).joinpath(BUILTIN_RUBRICS[name]).read_text("utf-8"))
    path = Path(ref)
    return parse_rubric(str(path), userfiles.read_text(path, "rubric file"))


def dimensions() -> tuple[Dimension, ...]:
    return load_rubric().dims


def keys() -> list[str]:
    return load_rubric().keys()


def group_keys(group: str) -> list[str]:
    return load_rubric().group_keys(group)
