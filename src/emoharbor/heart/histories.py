"""Dialogue histories: the context every candidate reply answers.

A history is labelled by the speakers its file records, never by position. Where a file does not
record them (HEART's adversarial file), they are inferred from strict alternation when that is
consistent: the last turn is the seeker's (the history asks for the supporter's next reply), every
recorded speaker agrees, and, when none is recorded, the source's stated opener agrees. Items that
cannot be used (``UNUSABLE``: well formed, but no history the supporter answers) are skipped and counted with
the reason; an item that breaks the format (not an object, a field of the wrong type, a speaker list of the
wrong length) and a file that cannot be read at all are a ``DataError`` naming the file, the item and the
field, found before any model is reached.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import DataError

SEEKER, SUPPORTER = "seeker", "supporter"
SPEAKER_ALIASES = {"seeker": SEEKER, "usr": SEEKER, "supporter": SUPPORTER, "sys": SUPPORTER, "listener": SUPPORTER}
MAX_NOTES = 20
# the reasons an item is skipped and counted; any other reason is an error in the file
UNUSABLE = frozenset({"ends_on_supporter", "speakers_not_inferable", "speakers_unknown", "empty_history"})


@dataclass(frozen=True)
class Turn:
    speaker: str  # "seeker" | "supporter"
    text: str


@dataclass(frozen=True)
class Rating:
    """One person's rating of one reply to a history, from a file of replies rated by people (``heart.rated``)."""

    competitor: str
    rater: str
    dimension: str
    score: float


@dataclass
class History:
    id: str
    subset: str  # "regular" | "adversarial"
    source: str
    turns: list[Turn]
    emotion_type: str = ""
    problem_type: str = ""
    situation: str = ""
    human_reply: str | None = None  # the real human supporter's next reply, where the file has one
    speakers_inferred: bool = False
    # a file of rated replies: the given replies by competitor, and the people's ratings of them
    replies: dict[str, str] = field(default_factory=dict)
    ratings: list[Rating] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> History:
        turns = [Turn(t["speaker"], t["text"]) for t in d["turns"]]
        ratings = [Rating(**r) for r in d.get("ratings") or []]
        return cls(**{**d, "turns": turns, "ratings": ratings})

    @property
    def last_seeker_text(self) -> str:
        return next((t.text for t in reversed(self.turns) if t.speaker == SEEKER), "")


class Skips:
    """What a report of reading a file counts of the items it skipped: each reason, and the first
    ``MAX_NOTES`` skips with item and reason (a dataclass's base: the fields are the dataclass's own)."""

    skipped: Counter[str]
    notes: list[str]

    def skip(self, where: str, reason: str, detail: str) -> None:
        self.skipped[reason] += 1
        if len(self.notes) < MAX_NOTES:
            self.notes.append(f"{where}: {reason}: {detail}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "skipped": dict(self.skipped)}  # type: ignore[call-overload]


@dataclass
class LoadReport(Skips):
    """What happened to the items of one source."""

    source: str
    name: str
    examined: int = 0
    usable: int = 0
    used: int = 0
    inferred: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)  # the first few skips, with item and reason


class Skip(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def infer_speakers(n: int, known: list[str | None], opener: str) -> list[str]:
    """Speakers for ``n`` turns by strict alternation ending on the seeker, or ``Skip`` when the
    recorded speakers (``known``, None where unknown) or the opener contradict it."""
    pattern = [SEEKER if (n - 1 - i) % 2 == 0 else SUPPORTER for i in range(n)]
    clash = [i + 1 for i, k in enumerate(known) if k is not None and k != pattern[i]]
    if clash:
        raise Skip(
            "speakers_not_inferable",
            f"the recorded speakers of turns {clash[:5]} break the alternation that ends on the seeker",
        )
    if all(k is None for k in known) and opener != "any" and pattern[0] != opener:
        raise Skip(
            "speakers_not_inferable",
            f"alternation ending on the seeker would open with the {pattern[0]}, but this source's "
            f"histories open with the {opener}",
        )
    return pattern


def _speakers(item: dict[str, Any], n: int, unknown: str, opener: str) -> tuple[list[str], bool]:
    raw = item.get("prev_speakers")
    if raw is not None and not isinstance(raw, list):
        raise Skip("bad_field", "field 'prev_speakers' must be a list of 'seeker'/'supporter' or null")
    if raw is not None and len(raw) != n:
        raise Skip(
            "speakers_length_mismatch",
            f"field 'prev_speakers' has {len(raw)} entries for {n} turns of 'dialogue_history'",
        )
    known = [SPEAKER_ALIASES.get(str(s).strip().lower()) if s is not None else None for s in (raw or [None] * n)]
    if all(k is not None for k in known):
        return [k for k in known if k is not None], False
    if unknown == "skip":
        raise Skip("speakers_unknown", "the speakers are not recorded and this source skips such items")
    return infer_speakers(n, known, opener), True


def _text(value: Any, field_name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Skip("bad_field", f"field '{field_name}' must be text")
    return value.strip()


def parse_heart_item(item: Any, hid: str, subset: str, source: str, unknown: str, opener: str) -> History:
    if not isinstance(item, dict):
        raise Skip("not_an_object", "the item is not a JSON object")
    lines = item.get("dialogue_history")
    if not isinstance(lines, list):
        raise Skip("bad_field", "field 'dialogue_history' must be a list of turns (strings)")
    if not lines:
        raise Skip("empty_history", "field 'dialogue_history' is empty")
    bad = [i + 1 for i, t in enumerate(lines) if not isinstance(t, str) or not t.strip()]
    if bad:
        raise Skip("bad_turn", f"field 'dialogue_history': turns {bad[:5]} are empty or not text")
    speakers, inferred = _speakers(item, len(lines), unknown, opener)
    if speakers[-1] != SEEKER:
        raise Skip(
            "ends_on_supporter", "the last turn is the supporter's, so the next reply would not be the supporter's"
        )
    reply = item.get("vanilla_completion")
    return History(
        id=hid,
        subset=subset,
        source=source,
        turns=[Turn(s, t.strip()) for s, t in zip(speakers, lines, strict=True)],
        emotion_type=_text(item.get("emotion_type"), "emotion_type"),
        problem_type=_text(item.get("problem_type"), "problem_type"),
        situation=_text(item.get("situation"), "situation"),
        human_reply=_text(reply, "vanilla_completion") if reply is not None else None,
        speakers_inferred=inferred,
    )


def read_items(path: Path) -> list[tuple[int, Any, str]]:
    """The items of a JSON array or JSON-lines file: (0-based index, item, where it is). A JSON line
    that does not parse comes back as a ``Skip`` object, for the caller to count."""
    text = userfiles.read_text(path, "history file", DataError)
    try:
        whole: Any = json.loads(text)
    except json.JSONDecodeError as e:
        if text.lstrip().startswith("["):
            raise DataError(f"{path}: not valid JSON ({e.msg}, line {e.lineno}): fix the file") from None
        whole = None  # JSON lines, read one by one below
    if isinstance(whole, dict):  # one history (a one-line JSON-lines file)
        whole = [whole]
    if whole is not None:
        if not isinstance(whole, list):
            raise DataError(f"{path}: expected a JSON array of histories or JSON lines of objects")
        if not whole:
            raise DataError(f"{path}: no histories in it (an empty JSON array)")
        return [(i, it, f"item {i + 1} (index {i})") for i, it in enumerate(whole)]
    out: list[tuple[int, Any, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                item: Any = json.loads(line)
            except json.JSONDecodeError as e:
                item = Skip("bad_json", f"not valid JSON ({e.msg})")
            out.append((len(out), item, f"line {n}"))
    if not out:
        raise DataError(f"{path}: no histories in it (expected a JSON array or JSON lines of objects)")
    return out
