"""What every simulated user offers the conversation loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .conversation import Decision, Turn, UserState


@dataclass
class UserStep:
    text: str
    decision: Decision = "continue"
    state: UserState | None = None
    inner: dict[str, Any] | None = None  # appraisal, feeling, expression records for this message
    events: list[tuple[str, str]] = field(default_factory=list)
    safety_escalation: bool = False


class UserAgent(Protocol):
    def initial_state(self) -> UserState | None: ...

    async def open(self, seed: int) -> UserStep: ...

    async def react(self, turns: list[Turn], seed: int) -> UserStep: ...
