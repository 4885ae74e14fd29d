"""Typed records for the nouns of a run at the store boundary (DESIGN.md): an Assessment of a conversation by
a judge, a Candidate reply to a HEART history, a Comparison of two candidates by a judge in one order, and a
model Call with the key of the unit that made it.

Readers in other packages take these instead of reading the stored dicts by key. (A conversation is read as
``simulate.conversation.Conversation``, which the store, below it, does not import.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..profiles.schema import Profile
from .keys import Key
from .run_store import RunStore


@dataclass(frozen=True)
class Assessment:
    conversation: str
    judge: str
    status: str  # ok | unscored | error
    scores: dict[str, int | None] = field(default_factory=dict)
    expected: dict[str, float | None] | None = None  # probability-weighted scores, for cards that ask for them
    evidence: dict[str, str] = field(default_factory=dict)
    attempts: int = 1
    error: str = ""
    saw: str = "replayed"  # validate runs: what the judge was shown (the replayed turns, or all)

    @classmethod
    def of(cls, d: dict[str, Any]) -> Assessment:
        return cls(str(d["conversation"]), str(d["judge"]), str(d["status"]), dict(d.get("scores") or {}),
                   d.get("expected"), dict(d.get("evidence") or {}), int(d.get("attempts", 1)),
                   str(d.get("error") or ""), str(d.get("saw") or "replayed"))  # fmt: skip

    @property
    def scored(self) -> bool:
        return self.status == "ok"

    def under(self, scoring: str) -> dict[str, Any] | None:
        """The scores under ``scoring``: the integers written (``argmax``) or the probability-weighted ones
        (``expected``); None where it has none under that scoring (unscored, or judged without
        log-probabilities), so that callers count it as unscored instead of mixing the two."""
        if not self.scored:
            return None
        if scoring == "argmax":
            return dict(self.scores)
        ex = self.expected or {}
        return dict(ex) if any(v is not None for v in ex.values()) else None


@dataclass(frozen=True)
class Candidate:
    history_id: str
    competitor: str
    status: str  # ok | unscored (a missing or empty reply: ``reason``) | error
    text: str = ""
    words: int = 0
    reason: str = ""

    @classmethod
    def of(cls, d: dict[str, Any]) -> Candidate:
        return cls(str(d["history_id"]), str(d["competitor"]), str(d["status"]), str(d.get("text", "")),
                   int(d.get("words", 0)), str(d.get("reason", "")))  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    history_id: str
    a: str
    b: str
    judge: str
    order: str  # "ab": a's reply shown first
    first: str  # the competitor shown first
    status: str  # ok | unscored | error
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # dimension -> winner, strength, rationale
    subset: str = ""
    words: dict[str, int] = field(default_factory=dict)  # competitor -> words of its reply

    @classmethod
    def of(cls, d: dict[str, Any]) -> Comparison:
        return cls(str(d["history_id"]), str(d["a"]), str(d["b"]), str(d["judge"]), str(d["order"]),
                   str(d.get("first", "")), str(d["status"]), dict(d.get("verdicts") or {}), str(d.get("subset", "")),
                   {k: int(v) for k, v in (d.get("words") or {}).items()})  # fmt: skip


@dataclass(frozen=True)
class Call:
    """A model call as the store keeps it: the unit it was made for (``table`` "" and ``unit`` () for none)
    and what it cost."""

    table: str  # the store's column ``unit_kind``
    unit: Key
    role: str
    cached: bool
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float

    @classmethod
    def of(cls, d: dict[str, Any]) -> Call:
        return cls(str(d["unit_kind"] or ""), tuple(d["unit_key"]), str(d["role"] or ""), bool(d["cached"]),
                   int(d["prompt_tokens"] or 0), int(d["completion_tokens"] or 0), float(d["cost_usd"] or 0.0),
                   float(d["latency_s"] or 0.0))  # fmt: skip

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def calls(store: RunStore) -> list[Call]:
    return [Call.of(d) for d in store.calls()]


def assessments(store: RunStore) -> list[Assessment]:
    return [Assessment.of(d) for _, d in store.items("assessment")]


def candidates(store: RunStore) -> dict[tuple[str, str], Candidate]:
    return {(c.history_id, c.competitor): c for c in (Candidate.of(d) for _, d in store.items("candidate"))}


def comparisons(store: RunStore) -> list[Comparison]:
    return [Comparison.of(d) for _, d in store.items("comparison")]


PROFILE = "profile"  # the store table of an EmoHarbor run's profiles


def stored_profiles(store: RunStore) -> dict[str, Profile]:
    """The profiles a run was made with, as it stored them (none in a run made before they were stored)."""
    return {d["id"]: Profile.model_validate(d) for _, d in store.items(PROFILE)}
