"""The five HEART dimensions (descriptions in our own words) and the keyword tagging of rationales."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from .. import userfiles
from ..errors import DataError

OVERALL = "overall"


@dataclass(frozen=True)
class Dimension:
    key: str
    name: str
    description: str


DIMENSIONS: dict[str, Dimension] = {
    d.key: d
    for d in [
        Dimension(
            "human_alignment",
            "Human alignment",
            "reads like something a thoughtful person would really write here: natural and conversational, "
            "not scripted, generic or robotic",
        ),
        Dimension(
            "empathic_responsiveness",
            "Empathic responsiveness",
            "notices what the seeker feels and answers that feeling accurately and with care",
        ),
        Dimension(
            "attunement",
            "Attunement",
            "fits where the seeker is right now: follows their cues, pace and tone, and adapts when they resist, "
            "withdraw or change direction",
        ),
        Dimension(
            "resonance",
            "Resonance",
            "feels sincere and connecting; likely to land with this seeker and make them feel understood",
        ),
        Dimension(
            "task_following",
            "Task-following",
            "does the supporter's job for this turn: one coherent reply that continues the conversation, stays on "
            "the seeker's concern and keeps to a supportive role",
        ),
    ]
}
DIMENSION_KEYS: tuple[str, ...] = tuple(DIMENSIONS)


def describe(keys: list[str]) -> str:
    lines = [f"- {k} ({DIMENSIONS[k].name}): {DIMENSIONS[k].description}" for k in keys]
    lines.append(f"- {OVERALL}: all things considered, the better next message for this seeker")
    return "\n".join(lines)


# -- rationale tagging by keyword lexicon -----------------------------------------------------
Lexicon = dict[str, list[str]]
LEXICON_NOTE = (
    "rationale dimensions are tagged by a keyword lexicon (emoharbor/heart/dimension_lexicon.yaml or the "
    "config's lexicon_file), not by a model: a rationale 'talks about' a dimension when it contains one of its keywords"
)


def parse_lexicon(raw: object, where: str) -> Lexicon:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: the top level must map dimension keys to lists of keywords")
    out: Lexicon = {}
    for key, words in raw.items():
        if key not in DIMENSIONS:
            raise DataError(f"{where}: key '{key}': not a HEART dimension ({', '.join(DIMENSION_KEYS)})")
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise DataError(f"{where}: key '{key}': must be a list of non-empty keywords")
        out[str(key)] = [w.strip().lower() for w in words]
    return out


@cache
def builtin_lexicon() -> Lexicon:
    text = resources.files(__package__).joinpath("dimension_lexicon.yaml").read_text(encoding="utf-8")
    return parse_lexicon(yaml.safe_load(text), "dimension_lexicon.yaml")


def load_lexicon(path: Path | None) -> Lexicon:
    if path is None:
        return builtin_lexicon()
    raw = userfiles.read(path, "lexicon file", DataError)
    return parse_lexicon(raw, str(path))


def keyword_pattern(word: str) -> re.Pattern[str]:
    """A lexicon's keyword as a pattern on lower-cased text: "word*" matches any word starting with "word", a phrase
    its words separated by any whitespace."""
    stem = word.endswith("*")
    body = r"\s+".join(re.escape(part) for part in word.rstrip("*").split())
    return re.compile(rf"\b{body}" + (r"\w*" if stem else r"\b"))


@cache
def _compiled(items: tuple[tuple[str, tuple[str, ...]], ...]) -> list[tuple[str, list[re.Pattern[str]]]]:
    return [(key, [keyword_pattern(w) for w in words]) for key, words in items]


def tag_dimensions(text: str, lexicon: Lexicon) -> list[str]:
    """The dimensions whose keywords occur in ``text`` ("word*" matches any word starting with "word")."""
    low = text.lower()
    compiled = _compiled(tuple((k, tuple(v)) for k, v in lexicon.items()))
    return [key for key, pats in compiled if any(p.search(low) for p in pats)]
