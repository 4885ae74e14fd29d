"""Whether the simulated user's inner state agrees with itself, turn by turn.

For every supporter message the Appraiser gives a fit verdict ("good", "mixed" or "poor") and the Feeler
then moves emotion intensity. A turn is incoherent when the two run against each other: a good fit after
which intensity rose, or a poor fit after which it fell. A mixed fit, or an intensity that stayed, agrees
with anything. A turn is checked when its appraisal gave a good or poor fit, its feeling parsed (an
unparsed one leaves the state as it was, which says nothing) and the intensity before it is known.

The records are read from the turns' ``inner``: a simulated conversation keeps the appraisal and the state
on the user's reply, a replay (validate, stored in the table "replay") on the supporter turn itself; both are
the same ``Conversation`` shape, so both are read the same way. The intensity before a message is the
state of the turn before in ``Conversation.states``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .conversation import Conversation

GOOD, POOR = "good", "poor"


@dataclass(frozen=True)
class Coherence:
    incoherent: int = 0  # checked turns whose fit and intensity move disagree
    checked: int = 0

    def __add__(self, other: Coherence) -> Coherence:
        return Coherence(self.incoherent + other.incoherent, self.checked + other.checked)

    @property
    def rate(self) -> float | None:
        return self.incoherent / self.checked if self.checked else None


def _reactions(conv: Conversation) -> list[dict[str, Any]]:
    """The inner records holding a reaction to a supporter message (an appraisal and the state after it)."""
    return [t.inner for t in conv.turns if t.inner and "state" in t.inner and "appraisal" in t.inner]


def conversation_coherence(conv: Conversation) -> Coherence:
    """The incoherent turns and the turns checked in one conversation (see the module's text)."""
    intensity = {s.turn: s.intensity for s in conv.states}  # the trajectory, from turn 0 (before any message)
    incoherent = checked = 0
    for inner in _reactions(conv):
        state, fit = inner["state"], (inner.get("appraisal") or {}).get("fit")
        before = intensity.get(int(state["turn"]) - 1)
        if before is None or fit not in (GOOD, POOR) or not inner.get("feeling"):
            continue
        checked += 1
        after = int(state["intensity"])
        incoherent += after > before if fit == GOOD else after < before
    return Coherence(incoherent, checked)


def total_coherence(convs: Iterable[Conversation]) -> Coherence:
    """The sum over conversations, e.g. all of one supporter's."""
    return sum((conversation_coherence(c) for c in convs), Coherence())
