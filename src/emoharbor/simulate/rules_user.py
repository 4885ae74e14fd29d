"""A rule-based simulated user: no model, its reaction computed from the reply's words, so the same reply
always gets the same reaction (a verifiable user: a reward that can be checked by hand, and tests that need
no server). Registered as the agent ``rules``.

For each supporter message:
- it is *heard* when the reply uses the seeker's own words: at least ``echo_words`` of the content words of
  the seeker's last message (words of four letters or more, not the common ones below);
- it is *advice* when the reply tells the seeker what to do ("you should", "have you tried", "try to"...);
- it is *dismissive* when it waves the feeling away ("calm down", "don't worry", "at least", "cheer up"...).

Heard and not advice nor dismissive: relief (7 on the chain's scale of 1-7, "much better") and trust up;
heard with advice: a little better (5); advice alone: no different (4); dismissive, or none of the seeker's
words: worse (2). The appraisal's fit is good, mixed or poor alike, in the chain's record, so the reward
(``reward.score``) reads it as it reads the chain's. Its messages disclose the profile's story one sentence
per turn, retold in the first person (``first_person``: "I was let go", not "Darnell was let go"); it ends
satisfied when its intensity falls to ``satisfied_below`` (after ``min_turns`` replies)
and disengages when trust falls to ``disengage_below``.
"""

from __future__ import annotations

import re

from pydantic import Field

from ..models.base import ChatModel
from ..profiles.schema import Profile
from .agents import ReactionSettings, register_agent
from .chain_user import story_facts
from .conversation import Decision, Turn, UserState
from .first_person import first_person
from .user_agent import UserStep

WORD = re.compile(r"[a-z']+")
COMMON = frozenset(  # words too common to show the seeker was heard
    WORD.findall(
        "about after again also because been before being could didn't does doesn't don't even every from have just "
        "know like little make much need really should since some still that their them then there these they thing "
        "think this those through very want what when where which while with would your you're feel feeling felt"
    )
)
ADVICE = re.compile(r"\b(you should|you need to|you must|have you tried|try to|why don'?t you|i suggest|"
                    r"i'?d suggest|i recommend|make sure|the best thing is)\b", re.IGNORECASE)  # fmt: skip
DISMISSIVE = re.compile(r"\b(calm down|don'?t worry|at least|cheer up|it'?s not (?:a|that) big|"
                        r"everyone (?:goes|feels)|get over|look on the bright side|could be worse)\b",
                        re.IGNORECASE)  # fmt: skip
FIT_SCALE = {"good": 7, "mixed": 5, "neutral": 4, "poor": 2}  # the chain's 1-7 scale: 4 no different


class RulesSettings(ReactionSettings):
    min_turns: int = Field(default=2, ge=0)  # supporter replies before the user may end
    echo_words: int = Field(default=2, ge=1)  # the seeker's own words a reply must use to be heard
    satisfied_below: int = Field(default=30, ge=0, le=100)
    disengage_below: int = Field(default=10, ge=0, le=100)


def content_words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) >= 4 and w not in COMMON}


def verdict(reply: str, seeker: str, echo_words: int) -> tuple[str, list[str]]:
    """The fit of ``reply`` to the seeker's last message ``seeker`` (good, mixed, neutral or poor), and the
    seeker's words it used."""
    echoed = sorted(content_words(seeker) & content_words(reply))
    heard = len(echoed) >= echo_words
    if DISMISSIVE.search(reply) or not echoed:
        return "poor", echoed
    if ADVICE.search(reply):
        return ("mixed" if heard else "neutral"), echoed
    return ("good" if heard else "neutral"), echoed


def step_of(point: int, bound: int) -> int:
    """A point of the 1-7 scale as a change of at most ``bound`` (as the chain's ``scale_step``)."""
    return round((point - 4) / 3 * bound)


def told_facts(profile: Profile) -> list[str]:
    """The profile's story, one sentence a fact, in the seeker's voice."""
    return [first_person(fact, profile) for fact in story_facts(profile)]


def fact_at(profile: Profile, facts: list[str], turn: int) -> str:
    """What the seeker tells at ``turn`` (0: the opening): the next fact, or how it still feels once all are told."""
    return facts[turn] if turn < len(facts) else f"I still feel {profile.emotional_state.emotion}."


def opening(profile: Profile, facts: list[str] | None = None) -> str:
    """The rules user's first message (no model): its emotion and the first fact of its story. ``facts``: the
    profile's ``told_facts``, where they are at hand."""
    first = fact_at(profile, told_facts(profile) if facts is None else facts, 0)
    return f"Hi. I feel {profile.emotional_state.emotion}. {first}"


class RulesUser:
    def __init__(self, profile: Profile, settings: RulesSettings) -> None:
        self.profile = profile
        self.s = settings
        self.facts = told_facts(profile)
        self.state = UserState(turn=0, intensity=profile.emotional_state.intensity, trust=settings.initial_trust)

    def initial_state(self) -> UserState:
        return self.state

    def _fact(self, turn: int) -> str:
        return fact_at(self.profile, self.facts, turn)

    async def open(self, seed: int) -> UserStep:
        return UserStep(text=opening(self.profile, self.facts), inner={"opening": True})

    async def perceive(self, turns: list[Turn], seed: int) -> UserStep:
        reply = turns[-1].text
        seeker = next((t.text for t in reversed(turns[:-1]) if t.speaker == "user"), "")
        fit, echoed = verdict(reply, seeker, self.s.echo_words)
        point = FIT_SCALE[fit]
        better, d_trust = step_of(point, self.s.intensity_step), step_of(point, self.s.trust_step)
        prev = self.state
        thought = "it used my words: " + ", ".join(echoed) if echoed else "it missed me"
        self.state = UserState(turn=prev.turn + 1, intensity=max(0, min(100, prev.intensity - better)),
                               trust=max(0, min(100, prev.trust + d_trust)),
                               needs_met=["to be heard"] if fit in ("good", "mixed") else [],
                               needs_missed=["to be heard"] if fit == "poor" else [],
                               thought=thought)  # fmt: skip
        appraisal = {"fit": "mixed" if fit == "neutral" else fit, "fit_expected": None, "echoed": echoed,
                     "advice": bool(ADVICE.search(reply)), "dismissive": bool(DISMISSIVE.search(reply))}  # fmt: skip
        feeling = {"feel_better": better, "intensity_change": -better, "trust_change": d_trust,
                   "feel_better_expected": None, "trust_change_expected": None}  # fmt: skip
        return UserStep(text="", state=self.state, inner={"appraisal": appraisal, "feeling": feeling})

    async def react(self, turns: list[Turn], seed: int) -> UserStep:
        step = await self.perceive(turns, seed)
        decision: Decision = "continue"
        if self.state.turn >= self.s.min_turns and self.state.intensity <= self.s.satisfied_below:
            decision = "end_satisfied"
        elif self.state.turn >= self.s.min_turns and self.state.trust <= self.s.disengage_below:
            decision = "disengage"
        step.text = "Thank you, that really helps." if decision == "end_satisfied" else self._fact(self.state.turn)
        step.decision = decision
        return step


def _make(model: ChatModel | None, profile: Profile, settings: RulesSettings) -> RulesUser:
    return RulesUser(profile, settings)


register_agent("rules", RulesSettings, _make, reactions=True, needs_model=False)
