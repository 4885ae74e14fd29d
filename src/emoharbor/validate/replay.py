"""Replaying a real ESConv conversation through the Chain-of-Agent user.

The simulated user takes the seeker's place, with a draft profile built from the record (situation,
emotion, problem type, the seeker's own initial intensity: see ``profiles.esconv_import``). The real
turns are kept as they were said; for every real supporter turn the user's Appraiser and Feeler run as if
the message had been said to it (``ChainUser.perceive``), so the user gets an inner state that moves, and
no reply is generated. The seeker's real turns stay in the transcript the chain and the judges read.

``max_supporter_turns`` (0 = no cap) keeps the conversation up to and including that many supporter
turns, so a long ESConv dialog costs a bounded number of calls; the chain and both judges then see that
same opening part. The seekers' survey ratings are about the whole conversation, so a tight cap makes the
comparison looser: the record says how many supporter turns there were and how many were replayed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..data.esconv import EsconvDialog, EsconvTurn
from ..models.base import ModelCallError
from ..profiles.schema import Profile
from ..simulate.conversation import Conversation, Turn
from ..simulate.user_agent import PerceivingUser

SUPPORTER = "esconv-human"  # the supporter's name in a replay: the real human supporter


@dataclass(frozen=True)
class ReplayPlan:
    turns: list[EsconvTurn]  # the turns to replay
    supporter_turns_total: int
    supporter_turns_replayed: int

    @property
    def truncated(self) -> bool:
        return self.supporter_turns_replayed < self.supporter_turns_total


def plan_replay(dialog: EsconvDialog, max_supporter_turns: int) -> ReplayPlan:
    """The merged turns up to and including the ``max_supporter_turns``-th supporter turn (0: all)."""
    merged = dialog.merged_turns()
    ends = [i for i, t in enumerate(merged) if t.speaker == "supporter"]  # where each supporter turn is
    if max_supporter_turns <= 0 or len(ends) <= max_supporter_turns:
        return ReplayPlan(merged, len(ends), len(ends))
    return ReplayPlan(merged[: ends[max_supporter_turns - 1] + 1], len(ends), max_supporter_turns)


def esconv_facts(dialog: EsconvDialog, plan: ReplayPlan) -> dict[str, Any]:
    """What the record says, kept beside the replay: the seeker's own ratings and the failure label."""
    return {
        "source": dialog.source,
        "index": dialog.index,
        "emotion_type": dialog.emotion_type,
        "problem_type": dialog.problem_type,
        "survey": dict(dialog.survey),
        "intensity_drop": dialog.intensity_drop,
        "failed": dialog.failed,
        "from_failed_set": dialog.from_failed_set,
        "supporter_turns_total": plan.supporter_turns_total,
        "supporter_turns_replayed": plan.supporter_turns_replayed,
        "truncated": plan.truncated,
    }


async def replay(
    user: PerceivingUser, dialog: EsconvDialog, profile: Profile, plan: ReplayPlan, *, seed: int
) -> Conversation:
    """The conversation as the simulated user lived it: the real turns, the user's inner record on every
    supporter turn (its reaction to that message) and its state trajectory. A model call that fails for
    good ends the replay with termination ``error``; what was perceived until then is kept."""
    started = time.perf_counter()
    conv = Conversation(id=dialog.id, profile_id=profile.id, supporter=SUPPORTER, seed=seed)
    conv.states.append(user.state)
    heard = 0
    try:
        for t in plan.turns:
            if t.speaker == "seeker":
                conv.turns.append(Turn(speaker="user", text=t.text))
                continue
            conv.turns.append(Turn(speaker="supporter", text=t.text))
            step = await user.perceive(conv.turns, seed=seed + 1000 + heard)
            heard += 1
            conv.events.extend(step.events)
            inner = dict(step.inner or {})
            if step.state is not None:
                conv.states.append(step.state)
                inner["state"] = step.state.model_dump()
            if step.safety_escalation:
                conv.events.append(("crisis_referral_heard", f"supporter turn {heard}"))
            conv.turns[-1].inner = inner
    except ModelCallError as e:
        conv.termination, conv.status = "error", "error"
        conv.error = str(e)
        conv.events.append(("model_error", str(e)[:200]))
    conv.wall_s = time.perf_counter() - started
    return conv
