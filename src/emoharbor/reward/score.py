"""The reward of a supporter reply: the simulated user reacts to it in its context (``perceive``: the chain's
Appraiser and Feeler, or any agent with reactions, ``settings.user_agent``), and the reaction and the
penalties make one number (``settings`` says how).

Every reply gets a ``Scored``: ``ok`` with its reward; ``unscored`` when the Appraiser's or the Feeler's
answer did not parse (no reward: the sample is dropped and counted); ``error`` when a model call failed for
good (no reward either). An empty reply is not shown to the user: its reward is minus its penalty.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

from ..models.base import ChatModel, ModelCallError
from ..simulate.agents import perceiving_user
from ..simulate.chain_user import FIT
from ..simulate.conversation import Turn, UserState
from ..simulate.user_agent import UserStep
from ..store.units import in_groups
from .context import RewardContext
from .penalties import penalties
from .settings import RewardSettings

Status = Literal["ok", "unscored", "error"]


@dataclass
class Scored:
    context: str
    reply: str
    status: Status
    reward: float | None
    relief: float | None = None  # feel_better / user_agent.intensity_step
    trust: float | None = None  # trust_change / user_agent.trust_step
    fit: float | None = None
    penalties: list[str] = field(default_factory=list)
    thought: str = ""  # the user's inner thought on the reply
    error: str = ""
    expected: dict[str, float | None] | None = None  # relief, trust, fit read as probabilities (None: none given)
    readout: str = "written"  # which the reward used: "expected" (settings.readout, when readable) or "written"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def combine(relief: float, trust: float, fit: float, hit: list[str], s: RewardSettings) -> float:
    cost = sum(float(getattr(s.penalties, p)) for p in hit)
    return s.relief * relief + s.trust * trust + s.fit * fit - cost


def expected_parts(
    appraisal: dict[str, Any], feeling: dict[str, Any], s: RewardSettings
) -> dict[str, float | None] | None:
    """The reaction's parts from the user's probability-weighted readouts (on the reward's scale), or None
    where the step has none (a backend without log-probabilities)."""
    keys = ("feel_better_expected", "trust_change_expected")
    if "fit_expected" not in appraisal and not any(k in feeling for k in keys):
        return None
    b, t, f = feeling.get(keys[0]), feeling.get(keys[1]), appraisal.get("fit_expected")
    if b is None and t is None and f is None:
        return None
    u = s.user_agent
    return {"relief": None if b is None else b / u.intensity_step, "trust": None if t is None else t / u.trust_step,
            "fit": None if f is None else float(f)}  # fmt: skip


@dataclass(frozen=True)
class Reaction:
    """A user's reaction to one reply on the reward's scale: the written parts, the expected ones, and which
    the reward uses (``used``: relief, trust, fit)."""

    relief: float
    trust: float
    fit: float
    expected: dict[str, float | None] | None
    readout: str
    used: tuple[float, float, float]


def reaction(step: UserStep, s: RewardSettings) -> Reaction | str:
    """The reaction in a user's step (``perceive`` or ``react``), or why there is none (a parse failure)."""
    failed = [f"{k}: {v}" for k, v in step.events if k.startswith("parse_failure")]
    appraisal = (step.inner or {}).get("appraisal") or {}
    feeling = (step.inner or {}).get("feeling")
    if failed or not feeling or appraisal.get("fit") not in FIT:
        return "; ".join(failed) or "no reaction"
    relief = feeling["feel_better"] / s.user_agent.intensity_step
    trust = feeling["trust_change"] / s.user_agent.trust_step
    fit = FIT[appraisal["fit"]]
    ex = expected_parts(appraisal, feeling, s)
    if s.readout == "expected" and ex is not None and all(v is not None for v in ex.values()):
        used = cast(tuple[float, float, float], (ex["relief"], ex["trust"], ex["fit"]))  # every one is there
        return Reaction(relief, trust, fit, ex, "expected", used)
    return Reaction(relief, trust, fit, ex, "written", (relief, trust, fit))


class UserReward:
    """``await UserReward(model, settings).score(context, reply)``; ``score_many`` for a batch, at most
    ``settings.concurrency`` at once. ``model`` is any ChatModel (the embedded model, vLLM, an API), or None
    for a user that calls none (``rules``)."""

    def __init__(self, model: ChatModel | None, settings: RewardSettings | None = None) -> None:
        self.model = model
        self.s = settings or RewardSettings()
        self._gate = asyncio.Semaphore(self.s.concurrency)

    async def score(self, ctx: RewardContext, reply: str, *, seed: int | None = None) -> Scored:
        hit = penalties(reply, ctx.texts(), self.s)
        if hit == ["empty"]:
            return Scored(ctx.id, reply, "ok", combine(0.0, 0.0, 0.0, hit, self.s), penalties=hit)
        user = perceiving_user(self.model, ctx.profile, self.s.user_agent, "the reward")
        user.state = UserState(turn=ctx.turn, intensity=ctx.intensity, trust=ctx.trust)
        turns = [*ctx.turns, Turn(speaker="supporter", text=reply.strip())]
        async with self._gate:
            try:
                step = await user.perceive(turns, self.s.seed if seed is None else seed)
            except ModelCallError as e:
                return Scored(ctx.id, reply, "error", None, penalties=hit, error=str(e))
        parts = reaction(step, self.s)
        if isinstance(parts, str):
            return Scored(ctx.id, reply, "unscored", None, penalties=hit, error=parts)
        return Scored(ctx.id, reply, "ok", combine(*parts.used, hit, self.s), parts.relief, parts.trust, parts.fit,
                      hit, step.state.thought if step.state else "", expected=parts.expected,
                      readout=parts.readout)  # fmt: skip

    async def score_many(self, items: Sequence[tuple[RewardContext, str]], *, seed: int | None = None,
                         on_scored: Callable[[int, Scored], None] | None = None) -> list[Scored]:  # fmt: skip
        """Every reply scored, in the order given. The replies to one context are scored one after another
        by one worker (``settings.concurrency`` workers, each on a context of its own): they share the
        context's long prompt prefix, which a server keeps per slot, so the first reads it and the rest reuse
        it; sent together, each would land on another slot and read it anew (on the embedded server with
        4 slots, four replies to one context read about 1,000 prompt tokens each). ``on_scored(index,
        scored)``, if given, is called as each reply is done (in the order they finish; ``index`` into
        ``items``): to show progress or save it as it comes."""
        out: dict[int, Scored] = {}

        async def one(i: int) -> None:
            out[i] = await self.score(*items[i], seed=seed)
            if on_scored is not None:
                on_scored(i, out[i])

        await in_groups(range(len(items)), lambda i: items[i][0].id, one, self.s.concurrency)
        return [out[i] for i in range(len(items))]


def tally(scored: Sequence[Scored]) -> dict[str, Any]:
    """Counts of a batch: by status, by penalty, and the mean reward of the scored ones."""
    rewards = [s.reward for s in scored if s.reward is not None]
    return {"replies": len(scored), **{k: sum(s.status == k for s in scored) for k in ("ok", "unscored", "error")},
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "penalties": dict(sorted(Counter(p for s in scored for p in s.penalties).items()))}  # fmt: skip
