"""The records of a simulated conversation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Termination = Literal["user_ended_satisfied", "user_disengaged", "max_turns", "safety_escalation", "error"]
Decision = Literal["continue", "end_satisfied", "disengage"]


def words(text: str) -> int:
    """A message's length in words: its whitespace-separated tokens (every word count of a reply or message but the
    realism figures', which count runs of letters and digits: ``realism.text.words``)."""
    return len(text.split())


class UserState(BaseModel):
    """The simulated user's inner world after one supporter message (turn 0: before any)."""

    turn: int
    intensity: int = Field(ge=0, le=100)
    trust: int = Field(ge=0, le=100)
    needs_met: list[str] = Field(default_factory=list)
    needs_missed: list[str] = Field(default_factory=list)
    thought: str = ""


class Turn(BaseModel):
    speaker: Literal["user", "supporter"]
    text: str
    inner: dict[str, Any] | None = None  # the user's appraisal, state and decision behind this message


class Conversation(BaseModel):
    id: str
    profile_id: str
    supporter: str
    repeat: int = 0
    seed: int = 0
    turns: list[Turn] = Field(default_factory=list)
    states: list[UserState] = Field(default_factory=list)
    termination: Termination = "max_turns"
    status: Literal["ok", "unscored", "error"] = "ok"  # error: a model call failed for good (the unit is redone)
    error: str = ""
    events: list[tuple[str, str]] = Field(default_factory=list)
    wall_s: float = 0.0

    @property
    def supporter_words(self) -> float | None:
        """The supporter's mean words a message in this conversation (None: it wrote none)."""
        mine = [words(t.text) for t in self.turns if t.speaker == "supporter"]
        return sum(mine) / len(mine) if mine else None

    @property
    def intensity_change(self) -> int | None:
        if len(self.states) < 2:
            return None
        return self.states[-1].intensity - self.states[0].intensity

    def transcript(self, user_label: str = "User", supporter_label: str = "Supporter") -> str:
        return "\n".join(f"{user_label if t.speaker == 'user' else supporter_label}: {t.text}" for t in self.turns)
