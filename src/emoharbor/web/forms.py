"""The rating forms: which fields an item has, what values they take, and what is still missing.

A pair item has, for each HEART dimension and ``overall``, ``choice.<dim>`` (``A`` = the reply shown on
the left, ``B`` = the right one, or ``tie``) and ``strength.<dim>`` (1-5, needed for A or B), plus a
free-text ``reason``. A conversation item has ``score.<dim>`` (1-5) for each of the 10 dimensions.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..assess.dimensions import keys as conversation_keys
from ..heart.dimensions import DIMENSIONS, OVERALL

PAIR, CONVERSATION = "pair", "conversation"
CHOICES = ("A", "B", "tie")
SCALE = ("1", "2", "3", "4", "5")
MAX_TEXT = 4000
NOT_ANSWERS = ("csrf", "action")


class FormError(ValueError):
    """A posted field that is not part of the form or has a value it cannot take."""


def pair_keys(dims: list[str]) -> list[str]:
    return [*dims, OVERALL]


def dimension_name(key: str) -> str:
    return DIMENSIONS[key].name if key in DIMENSIONS else key.replace("_", " ").capitalize()


def allowed(rated: str, dims: list[str]) -> dict[str, tuple[str, ...] | None]:
    """Field name -> its allowed values (None: free text)."""
    if rated == PAIR:
        out: dict[str, tuple[str, ...] | None] = {"reason": None}
        for d in pair_keys(dims):
            out[f"choice.{d}"] = CHOICES
            out[f"strength.{d}"] = SCALE
        return out
    return {f"score.{d}": SCALE for d in conversation_keys()}


def clean(rated: str, dims: list[str], form: Mapping[str, str]) -> dict[str, str]:
    """The answers in a posted form, checked; ``FormError`` names the first bad field."""
    fields = allowed(rated, dims)
    out: dict[str, str] = {}
    for name, raw in form.items():
        if name in NOT_ANSWERS:
            continue
        if name not in fields:
            raise FormError(f"field {name!r} is not part of this form")
        values = fields[name]
        value = raw.strip() if values is not None else raw.replace("\r\n", "\n")
        if values is None:
            if len(value) > MAX_TEXT:
                raise FormError(f"field {name!r}: at most {MAX_TEXT} characters")
        elif value not in values:
            if value == "":
                continue  # an unanswered control
            raise FormError(f"field {name!r}: {value[:20]!r} is not one of {', '.join(values)}")
        out[name] = value
    return out


def missing(rated: str, dims: list[str], answers: Mapping[str, str]) -> list[str]:
    """What must still be answered before the item can be submitted, in words."""
    out = []
    if rated == PAIR:
        for d in pair_keys(dims):
            choice = answers.get(f"choice.{d}")
            if choice not in CHOICES:
                out.append(f"{dimension_name(d)}: choose A, B or tie")
            elif choice != "tie" and answers.get(f"strength.{d}") not in SCALE:
                out.append(f"{dimension_name(d)}: choose how strongly (1-5)")
        return out
    return [f"{dimension_name(d)}: choose a score (1-5)" for d in conversation_keys()
            if answers.get(f"score.{d}") not in SCALE]  # fmt: skip


def side_of(shown: str | None, first: str) -> str | None:
    """The pair side ("a" | "b" | "tie") of a choice of the reply shown as A or B, given whose reply was A."""
    if shown == "tie":
        return "tie"
    if shown in ("A", "B"):
        return first if shown == "A" else ("b" if first == "a" else "a")
    return None
