"""What every simulated user offers the conversation loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .conversation import Decision, Turn, UserState


class UserSimulationError(Exception):
    """The simulated user could not produce a message: the conversation ends with termination 'error'."""

    def __init__(self, message: str, events: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.events = events


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


@runtime_checkable
class PerceivingUser(UserAgent, Protocol):
    """A user whose state moves on a supporter message without writing a reply (an agent with ``perceives``):
    a replay of a real conversation, the reward. ``state`` may be set to start it mid-conversation."""

    state: UserState

    async def perceive(self, turns: list[Turn], seed: int) -> UserStep: ...
