"""The episode's reward ``judge`` (``grpo.episodes.reward: judge``): when an episode ends, a conversation
judge card (``episodes.judge``; by default ``user``, the simulated user rating the talk it lived through on
the 10 dimensions, User-as-a-Judge) rates the whole talk, through the assessment a run makes
(``assess.stage.make_judges``, ``assess.judge.judge_conversation``).

Its score: the mean of the card's dimensions (with ``scoring: expected``, the probability-weighted ones that
could be read), less the midpoint of the rubric's values, over half their range: ``(mean - 3) / 2`` on the
1-5 scale, so -1..1 as a reaction's reward with the default weights. The episode's reward is that minus every
penalty and guard hit (``env.cost``, as ``final``). A rating that does not parse (or has no readable
probability-weighted score) leaves the episode unscored; a model call that fails for good, an error.

The card's model: its own (``model:``), else ``episodes.judge_model``, else the user's. A user agent that calls
no model (``rules``) with neither is refused (``episode_judge``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ..assess.judge import check_logprobs, judge_conversation
from ..assess.stage import Judge, judge_models, make_judges
from ..errors import ConfigError
from ..models.base import ChatModel, ModelCallError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..reward.context import RewardContext
from ..simulate.agents import user_agent
from ..simulate.conversation import Conversation, Termination, Turn, UserState
from .settings import EpisodeSettings


def episode_judge(settings: EpisodeSettings, user: ModelSpec, agent: str) -> Judge:
    """The judge of ``settings.judge`` as a run makes it, on its card's model, else ``settings.judge_model``,
    else ``user`` (the user's model, when ``agent`` calls one)."""
    spec = settings.judge_model or user
    try:
        judge = make_judges([settings.judge], spec, spec)[0]
    except ConfigError as e:
        raise ConfigError(f"grpo.episodes.judge: {e}") from None
    if judge.card.model is None and settings.judge_model is None and not user_agent(agent).needs_model:
        raise ConfigError(
            f"grpo.episodes.reward: judge needs a model: the user agent {agent!r} calls none; set "
            "grpo.episodes.judge_model (any model spec) or give a judge card with its own model"
        )
    return judge


def judge_score(record: dict[str, Any], judge: Judge) -> float | None:
    """The rating's score on -1..1 (the module's mapping); None when it has none or misses a dimension."""
    values = judge.card.rubric_file().values()
    low, high = min(values), max(values)
    scores = record.get("expected") if judge.card.scoring == "expected" else record.get("scores")
    got = list((scores or {}).values())
    if record.get("status") != "ok" or not got or None in got:  # a dimension left unread: no mean of the rest
        return None
    return (sum(float(v) for v in got) / len(got) - (low + high) / 2) / ((high - low) / 2)


@dataclass(frozen=True)
class EpisodeJudge:
    """A judge with its model open, rating episodes."""

    judge: Judge
    model: ChatModel

    async def rate(self, ctx: RewardContext, turns: list[Turn], states: list[UserState], ended: str,
                   seed: int) -> dict[str, Any]:  # fmt: skip
        """The judge's record of the talk that ended (``ended``: how, as a conversation's termination;
        ``turns``, the user's ``states`` from the start): its assessment with ``score`` (None unless ``status``
        is ok)."""
        conv = Conversation(id=ctx.id, profile_id=ctx.profile.id, supporter="policy", seed=seed, turns=turns,
                            states=states, termination=cast(Termination, ended))  # fmt: skip
        name = self.judge.name
        try:
            rec = await judge_conversation(self.judge.card, self.model, name, conv, ctx.profile, seed=seed)
        except ModelCallError as e:
            return {"judge": name, "scores": {}, "status": "error", "error": str(e), "score": None}
        score = judge_score(rec, self.judge)
        if rec["status"] == "ok" and score is None:
            rec = {**rec, "status": "unscored", "error": f"no probability-weighted score: {rec.get('expected_error')}"}
        return {**rec, "score": score}


async def open_judge(judge: Judge, pool: ModelPool | None, model: ChatModel | None = None) -> EpisodeJudge:
    """``judge`` on ``model`` (one already open) or on its spec opened in ``pool``; a card set to
    ``scoring: expected`` is checked for log-probabilities first."""
    if model is None:
        assert pool is not None, "a judge with no model open needs a pool"
        model = (await judge_models(pool, [judge]))[judge.name]
    else:
        await check_logprobs(judge.card, model)
    return EpisodeJudge(judge, model)
