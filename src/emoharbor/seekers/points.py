"""The rated points of ESConv files: where a help-seeker rated, during the talk, the supporter's replies just
before.

ESConv asked each seeker now and then how helpful the supporter's last replies were (1-5). The raw format
(``failed_dev.json``) keeps the answer as ``annotation.feedback`` on a seeker turn; MultiESC's release of
the validation talks (``valid_feedback.jsonl``) as ``feedback`` on a ``usr`` turn.

A point, in one talk:
- consecutive messages by one speaker are one turn (as everywhere in emoharbor's reading of ESConv); an
  empty message is left out, but an empty supporter message is kept long enough to tell an empty reply;
- a point is a seeker turn that carries a rating: the **rating** (the last one, if the seeker's turn holds
  several: each of its messages was rated), the **reply block** (the supporter's turn right before it: every
  supporter message since the seeker last spoke, joined by a space) and the **context** (the talk before the
  block: it ends on the seeker's turn, or is empty when the supporter spoke first and was rated at once);
- its **position**: the block's number among the supporter's turns (1 = the supporter's first).

Bad input is one line naming the file, the record and the field (no point is kept from such a file): a
rating outside 1-5 (``data.esconv``), a rating on a supporter turn, a rated turn with no supporter turn
before it, a reply block whose messages are all empty; a file with no rating at all is named too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..data.esconv import is_failed_set, parse_record, parse_turn, read_records, record_where, turn_where
from ..errors import DataError
from ..profiles.esconv_import import draft_profile
from ..reward.context import RewardContext, talk
from ..scoring.case import Case


@dataclass(frozen=True)
class Point:
    """One rated reply block: a case (its context, and the real reply that followed: the block)
    with the seeker's rating of it."""

    case: Case
    talk: str  # the record's id, "<file stem>:<index>": the unit a bootstrap resamples
    block: int  # the block's number among the supporter's turns (1 = the first)
    rating: int  # 1-5
    ratings: int  # how many ratings the seeker's turn held (the last is the rating)

    @property
    def key(self) -> tuple[str, str]:
        return self.talk, str(self.block)

    @property
    def reply(self) -> str:
        return self.case.real

    def to_dict(self) -> dict[str, Any]:
        return {**self.case.to_dict(), "talk": self.talk, "block": self.block, "rating": self.rating,
                "ratings": self.ratings}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Point:
        return cls(Case.from_dict(d), d["talk"], int(d["block"]), int(d["rating"]), int(d["ratings"]))


def _fields(rec: Any) -> tuple[str, str]:
    """A turn's text and rating fields as its format names them (raw, or usr/sys)."""
    raw = isinstance(rec, dict) and "content" in rec
    return ("content", "annotation.feedback") if raw else ("text", "feedback")


def talk_points(rec: Any, source: str, index: int, *, initial_trust: int, failed_set: bool = False) -> list[Point]:
    """The points of one record (see the module's doc), in their order in the talk."""
    dialog = parse_record(rec, source, index, failed_set)  # the record checked as every command reads it
    raw = [(i, parse_turn(t, turn_where(source, index, i))) for i, t in enumerate(rec["dialog"])]
    fields = [_fields(t) for t in rec["dialog"]]  # (text, rating) field names of each turn
    for i, t in raw:
        if t.speaker == "supporter" and t.feedback is not None:
            raise DataError(f"{turn_where(source, index, i)}: field '{fields[i][1]}': a rating on a supporter turn "
                            "(the seeker rates the supporter's replies, on the seeker's turn after them)")  # fmt: skip
    kept = [(i, t) for i, t in raw if t.text or t.speaker == "supporter" or t.feedback is not None]
    runs = [list(run) for _, run in itertools.groupby(kept, key=lambda x: x[1].speaker)]  # one speaker's turns
    profile = draft_profile(dialog, evaluation_only=True) if any(t.feedback is not None for _, t in kept) else None
    out: list[Point] = []
    for n, run in enumerate(runs):
        rated = [(i, t) for i, t in run if t.feedback is not None]
        if run[0][1].speaker != "seeker" or not rated:
            continue
        first = rated[0][0]
        if n == 0:
            raise DataError(f"{turn_where(source, index, first)}: field '{fields[first][1]}': a rating with no "
                            "supporter turn before it (nothing the seeker could have rated)")  # fmt: skip
        block = runs[n - 1]
        reply = " ".join(t.text for _, t in block if t.text)
        if not reply:
            span = ("dialog turns " if len(block) > 1 else "dialog turn ") + ", ".join(str(i + 1) for i, _ in block)
            raise DataError(f"{record_where(source, index)}: {span}: field '{fields[block[0][0]][0]}'"
                            f": the reply block the seeker rated at dialog turn {first + 1} is empty")  # fmt: skip
        before = [t for i, t in kept if i < block[0][0] and t.text]
        turns = talk(replace(dialog, turns=before))
        replies = sum(t.speaker == "supporter" for t in turns)
        case_id = f"{dialog.id}#{replies + 1}"
        assert profile is not None  # the record has a rating
        ctx = RewardContext(case_id, "esconv", profile, turns, profile.emotional_state.intensity, initial_trust,
                            replies, dialog.id)  # fmt: skip
        case = Case(case_id, "esconv", ctx, reply, dialog.problem_type)
        rating = rated[-1][1].feedback
        assert rating is not None  # a rated turn's
        out.append(Point(case, dialog.id, replies + 1, rating, len(rated)))
    return out


def file_points(path: Path, *, initial_trust: int) -> list[list[Point]]:
    """The points of every record of an ESConv file, one list per talk that has any."""
    failed = is_failed_set(path)
    talks = [talk_points(r, str(path), i, initial_trust=initial_trust, failed_set=failed)
             for i, r in enumerate(read_records(path))]  # fmt: skip
    talks = [t for t in talks if t]
    if not talks:
        raise DataError(f"{path}: no seeker turn carries a rating (annotation.feedback in the raw format, feedback "
                        "on usr turns in MultiESC's valid_feedback.jsonl): no point to compare with")  # fmt: skip
    return talks
