"""The simulated user as an environment: an episode is one context (a profile's opening, or an ESConv or
HEART history cut at the seeker, as ``reward.context`` makes them) and the configured user agent.

``reset()`` gives the talk so far (ending on the user's opening); ``step(reply)`` shows the supporter's reply
to the user, who reacts (``react``: its next message, its state, whether it goes on) and says whether the
episode is done and why: the user ended satisfied, disengaged, a safety escalation, or the turn cap
(``max_turns`` replies: the last reply is only perceived, no message is written after it).

Each step's reply is checked by the reward's penalties (``reward.penalties``) and the guards (``guards``);
its own reward is the reaction weighted as ``grpo.reward`` weighs one reply's, minus what it hit. The
episode's reward (``EpisodeSettings.reward``): ``final`` the change over the whole talk (intensity drop over
``intensity_step``, trust change over ``trust_step``, the last reply's fit, weighted likewise), ``sum`` the
steps' rewards added up, or ``judge`` a judge card's rating of the whole talk once it ends (``judged``: -1..1,
recorded with the episode); all minus every penalty and guard hit, per step. A reaction that does not parse
(or a user that cannot write its message, or a judge's rating that does not parse) leaves the episode
``unscored`` (no reward); a model call that fails for good, ``error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..models.base import ModelCallError
from ..reward.context import RewardContext
from ..reward.penalties import penalties
from ..reward.score import combine, reaction
from ..reward.settings import RewardSettings
from ..simulate.conversation import Turn, UserState
from ..simulate.user_agent import PerceivingUser, UserSimulationError
from .guards import guard_hits
from .settings import EpisodeSettings

if TYPE_CHECKING:
    from .judged import EpisodeJudge

Status = Literal["ok", "unscored", "error"]
GUARDS = ("flattery", "ends_early")
ENDINGS = {"end_satisfied": "user_ended_satisfied", "disengage": "user_disengaged"}  # the user's decision -> ended


@dataclass
class Step:
    turn: int  # the supporter's reply number in the episode, from 1
    reply: str
    user: str  # the user's next message ("" when none was written)
    intensity: int  # the user's state after the reply
    trust: int
    relief: float | None = None  # the reaction, on the reward's scale (None: it did not parse)
    trust_change: float | None = None
    fit: float | None = None
    reward: float | None = None  # this reply's own: the reaction minus its penalties and guards
    penalties: list[str] = field(default_factory=list)  # the reward's penalties and the guards it hit
    thought: str = ""


@dataclass
class EpisodeResult:
    context: str
    status: Status
    reward: float | None
    # user_ended_satisfied | user_disengaged | safety_escalation | max_turns | unscored | error (a step stopped
    # it; a judge that gave no rating leaves how the talk ended here, and its status in ``status``)
    ended: str
    start: tuple[int, int]  # intensity, trust
    end: tuple[int, int]
    steps: list[Step]
    error: str = ""
    judge: dict[str, Any] | None = None  # reward judge: the judge's rating of the talk (its scores; "score" -1..1)

    def penalties(self) -> list[str]:
        """Every penalty and guard hit, once per step that hit it."""
        return [p for s in self.steps for p in s.penalties]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "turns": len(self.steps), "penalties": self.penalties()}


def cost(hit: Sequence[str], reward: RewardSettings, settings: EpisodeSettings) -> float:
    """What the penalties and guards in ``hit`` cost."""
    return sum(float(getattr(settings.guards if p in GUARDS else reward.penalties, p)) for p in hit)


class Episode:
    def __init__(self, ctx: RewardContext, user: PerceivingUser, reward: RewardSettings, settings: EpisodeSettings,
                 *, seed: int = 0, judge: EpisodeJudge | None = None) -> None:  # fmt: skip
        if settings.reward == "judge" and judge is None:
            raise ValueError("grpo.episodes.reward: judge: the episode needs its judge (episodes.judged)")
        self.ctx, self.user, self.r, self.s, self.seed, self.judge = ctx, user, reward, settings, seed, judge
        self.turns: list[Turn] = []
        self.states: list[UserState] = []  # the user's, from the start: what a judge of the form user is shown
        self.rating: dict[str, Any] | None = None
        self.steps: list[Step] = []
        self.done = False
        self.ended = ""
        self.status: Status = "ok"
        self.error = ""

    def reset(self) -> list[Turn]:
        """The talk so far, ending on the user's message the first reply answers; the user in its state there."""
        self.turns = [Turn(speaker=t.speaker, text=t.text) for t in self.ctx.turns]
        self.user.state = UserState(turn=self.ctx.turn, intensity=self.ctx.intensity, trust=self.ctx.trust)
        self.states, self.rating = [self.user.state.model_copy()], None
        self.steps, self.done, self.ended, self.status, self.error = [], False, "", "ok", ""
        return list(self.turns)

    async def step(self, reply: str) -> Step:
        """The user's answer to ``reply``; ``done`` and ``ended`` say whether the episode is over and why."""
        if self.done:
            raise RuntimeError("the episode is over: reset() it first")
        turn = len(self.steps) + 1
        text = reply.strip()
        hit = penalties(text, [t.text for t in self.turns], self.r) + guard_hits(text, turn, self.s.guard_turns)
        self.turns.append(Turn(speaker="supporter", text=text))
        last = turn >= self.s.max_turns
        before = self.user.state
        try:
            said = await (self.user.perceive if last else self.user.react)(self.turns, self.seed + turn)
        except (ModelCallError, UserSimulationError) as e:
            status: Status = "error" if isinstance(e, ModelCallError) else "unscored"
            return self._stop(Step(turn, text, "", before.intensity, before.trust, penalties=hit), status, str(e))
        state = self.user.state
        parts = reaction(said, self.r)
        step = Step(turn, text, "" if last else said.text, state.intensity, state.trust, penalties=hit,
                    thought=state.thought)  # fmt: skip
        if isinstance(parts, str):
            return self._stop(step, "unscored", parts)
        step.relief, step.trust_change, step.fit = parts.relief, parts.trust, parts.fit
        step.reward = combine(*parts.used, [], self.r) - cost(hit, self.r, self.s)
        self.steps.append(step)
        self.states.append(state.model_copy())
        if step.user:
            self.turns.append(Turn(speaker="user", text=step.user))
        end = ENDINGS.get(said.decision, "max_turns" if last else "")
        ended = "safety_escalation" if said.safety_escalation else end
        self.done, self.ended = bool(ended), ended  # not done before this step (step() refuses one that is)
        if self.done and self.judge is not None and self.s.reward == "judge":
            await self._rate()
        return step

    async def _rate(self) -> None:
        """The judge's rating of the talk that just ended; the episode is unscored (or an error) without one."""
        assert self.judge is not None
        self.rating = await self.judge.rate(self.ctx, list(self.turns), list(self.states), self.ended, self.seed)
        if self.rating["status"] != "ok":
            self.status, self.error = self.rating["status"], str(self.rating["error"])

    def _stop(self, step: Step, status: Status, error: str) -> Step:
        self.steps.append(step)
        self.done, self.ended, self.status, self.error = True, status, status, error
        return step

    def result(self) -> EpisodeResult:
        """The episode's record and its reward (``EpisodeSettings.reward``; None unless every step was scored)."""
        start = (self.ctx.intensity, self.ctx.trust)
        end = (self.user.state.intensity, self.user.state.trust)
        reward = None
        rewards = [s.reward for s in self.steps]
        last_fit = self.steps[-1].fit if self.steps else None
        if self.status == "ok" and self.steps and None not in rewards and last_fit is not None:
            hits = cost([p for s in self.steps for p in s.penalties], self.r, self.s)
            if self.s.reward == "sum":
                reward = sum(r for r in rewards if r is not None)
            elif self.s.reward == "judge":
                assert self.rating is not None and self.rating["score"] is not None
                reward = float(self.rating["score"]) - hits
            else:
                u = self.r.user_agent
                relief, trust = (start[0] - end[0]) / u.intensity_step, (end[1] - start[1]) / u.trust_step
                reward = combine(relief, trust, last_fit, [], self.r) - hits
        return EpisodeResult(self.ctx.id, self.status, reward, self.ended, start, end, list(self.steps), self.error,
                             self.rating)  # fmt: skip
