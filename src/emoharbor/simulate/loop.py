"""The conversation loop: the user opens, then supporter and user take turns until the user ends,
disengages, a safety escalation happens, or the turn limit is reached."""

from __future__ import annotations

import time

from ..models.base import ModelCallError
from .conversation import Conversation, Turn
from .supporter import Replier
from .user_agent import UserAgent, UserSimulationError, UserStep


def talk_seed(seed: int, profile_index: int, repeat: int) -> int:
    """A talk's seed: the same for every supporter of one profile and repeat (the user opens alike, so supporters
    are compared in pairs)."""
    return seed + 1_000_003 * repeat + 7919 * profile_index


def _user_turn(step: UserStep) -> Turn:
    inner = dict(step.inner or {})
    if step.state is not None:
        inner["state"] = step.state.model_dump()
    inner["decision"] = step.decision
    if step.events:  # where each event happened: the printed transcript marks it at this message
        inner["events"] = [list(e) for e in step.events]
    return Turn(speaker="user", text=step.text, inner=inner)


async def converse(
    conv: Conversation, user: UserAgent, supporter: Replier, *, max_turns: int, seed: int
) -> Conversation:
    """Fill ``conv`` (id, profile and supporter already set) with a whole conversation.

    ``max_turns`` counts supporter replies. A model call that fails for good ends the conversation
    with termination ``error`` and the message; what was said until then is kept.
    """
    started = time.perf_counter()
    first = user.initial_state()
    if first is not None:
        conv.states.append(first)
    try:
        step = await user.open(seed)
        conv.events.extend(step.events)
        conv.turns.append(_user_turn(step))
        conv.termination = "max_turns"
        for i in range(max_turns):
            reply, events = await supporter.reply(conv.turns, seed=seed + i)
            conv.events.extend(events)
            marks = {"events": [list(e) for e in events]} if events else None  # shown where they happened
            conv.turns.append(Turn(speaker="supporter", text=reply, inner=marks))
            step = await user.react(conv.turns, seed=seed + 1000 + i)
            conv.events.extend(step.events)
            if step.state is not None:
                conv.states.append(step.state)
            if step.text:
                conv.turns.append(_user_turn(step))
            if step.safety_escalation:
                conv.termination = "safety_escalation"
                break
            if step.decision == "end_satisfied":
                conv.termination = "user_ended_satisfied"
                break
            if step.decision == "disengage":
                conv.termination = "user_disengaged"
                break
    except ModelCallError as e:
        conv.termination, conv.status = "error", "error"
        conv.error = str(e)
        conv.events.append(("model_error", str(e)[:200]))
    except UserSimulationError as e:  # the simulated user's output did not parse: not redone
        conv.termination, conv.status = "error", "unscored"
        conv.error = str(e)
        conv.events.extend(e.events)
    conv.wall_s = time.perf_counter() - started
    return conv
