"""The episode reward `judge`: when the talk ends, a conversation judge card rates it (a scripted judge's fixed
ratings here, the rule-based user as the environment); the reward is the rating's mean mapped to -1..1,
(mean - 3) / 2, minus every penalty and guard hit. A rating that does not parse leaves the episode unscored,
a judge call that fails for good is an error; a user agent with no model and no judge model is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emoharbor.assess.dimensions import load_rubric
from emoharbor.episodes.env import Episode
from emoharbor.episodes.judged import EpisodeJudge, episode_judge, open_judge
from emoharbor.episodes.reward_func import EpisodeRewardFunc
from emoharbor.episodes.settings import EpisodeSettings
from emoharbor.errors import ConfigError
from emoharbor.evolve.config import load_evolve_config
from emoharbor.evolve.plan import EvolvePlan
from emoharbor.models.base import ChatModel, Message, ModelCallError
from emoharbor.models.pool import ModelPool
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.spec import ModelSpec
from emoharbor.profiles.loader import resolve_profiles
from emoharbor.reward.context import openings
from emoharbor.simulate.agents import perceiving_user
from emoharbor.testing.fake_server import FakeOpenAIServer, digit_probs
from report_helpers import fake_spec
from test_episodes import GOOD_1, MIXED_2, POOR, RULES

KEYS = load_rubric().keys()
SCORES = [5, 4, 4, 3, 5, 2, 3, 4, 1, 4]  # mean 3.5: (3.5 - 3) / 2 = 0.25
RATING = json.dumps({k: {"score": v, "evidence": "you said so"} for k, v in zip(KEYS, SCORES, strict=True)})


async def judged_episode(model: ChatModel | None, *, card: str = "user", spec: ModelSpec | None = None,
                         pool: ModelPool | None = None) -> Episode:  # fmt: skip
    """p001's opening, the rules user, ``reward: judge``: the card on ``model`` (a ChatModel), or on ``spec``
    opened in ``pool``."""
    s = EpisodeSettings(reward="judge", judge=card, judge_model=spec or ModelSpec(model="scripted"), max_turns=3)
    rater = await open_judge(episode_judge(s, ModelSpec(), "rules"), pool, model)
    made, _ = await openings(resolve_profiles(["builtin:p001*"]), None, seed=0, settings=RULES.user_agent)
    user = perceiving_user(None, made[0].profile, RULES.user_agent, "a test")
    return Episode(made[0], user, RULES, s, judge=rater)


async def play(ep: Episode, replies: list[str]) -> None:
    ep.reset()
    for r in replies:
        assert not ep.done
        await ep.step(r)
    assert ep.done


async def test_the_reward_is_the_judges_mean_mapped_to_minus_one_to_one_less_the_penalties() -> None:
    judge = ScriptedModel([RATING])
    ep = await judged_episode(judge)
    await play(ep, [GOOD_1 + " You are so brave.", MIXED_2, POOR])
    r = ep.result()
    assert r.status == "ok" and r.ended == "max_turns" and r.penalties() == ["flattery"]
    assert r.reward == pytest.approx((3.5 - 3) / 2 - 1.0)  # the rating, less the flattery guard's cost
    assert len(judge.calls) == 1  # once, when the talk ended
    asked = "\n".join(m["content"] for m in judge.calls[0])
    assert POOR in asked and "intensity 58, trust 54" in asked  # the transcript and the user's inner record
    row = json.loads(json.dumps(r.to_dict()))  # as episodes.jsonl keeps it
    assert row["judge"]["judge"] == "user" and row["judge"]["status"] == "ok"
    assert row["judge"]["scores"] == dict(zip(KEYS, SCORES, strict=True))
    assert row["judge"]["score"] == pytest.approx(0.25) and row["reward"] == pytest.approx(-0.75)


async def test_a_rating_that_does_not_parse_leaves_the_episode_unscored() -> None:
    judge = ScriptedModel(["I liked the talk, roughly a four."])
    ep = await judged_episode(judge)
    await play(ep, [GOOD_1, MIXED_2, POOR])
    r = ep.result()
    assert (r.status, r.reward, r.ended) == ("unscored", None, "max_turns")  # the talk ended; its rating did not
    assert r.judge is not None and r.judge["status"] == "unscored" and r.judge["score"] is None
    assert all(v is None for v in r.judge["scores"].values()) and "JSON" in r.error
    logged = await EpisodeRewardFunc(EpisodeSettings(reward="judge"))([], [], episode=[json.dumps(r.to_dict())])
    assert logged == [None]  # TRL gets no reward for it, never 0


async def test_a_judge_call_that_fails_for_good_is_an_error() -> None:
    def down(messages: list[Message], schema: dict[str, Any] | None) -> str:
        raise ModelCallError("judge unreachable")

    ep = await judged_episode(ScriptedModel(down))
    await play(ep, [GOOD_1, MIXED_2, POOR])
    r = ep.result()
    assert (r.status, r.reward, r.error) == ("error", None, "judge unreachable")


async def test_an_expected_card_is_scored_by_its_probability_weighted_mean() -> None:
    with FakeOpenAIServer() as srv:
        async with ModelPool(cache_path=None) as pool:
            spec = ModelSpec.model_validate(fake_spec(srv.base_url))
            ep = await judged_episode(None, card="third_party_overall", spec=spec, pool=pool)
            await play(ep, [GOOD_1, MIXED_2, POOR])
    r = ep.result()
    assert r.status == "ok" and r.judge is not None and r.penalties() == []
    written = r.judge["scores"]["overall"]
    expected = sum(v * p for v, p in digit_probs(written).items())
    assert r.judge["expected"]["overall"] == pytest.approx(expected)
    assert r.reward == pytest.approx((expected - 3) / 2)


def test_a_user_with_no_model_and_no_judge_model_is_refused_in_one_line(tmp_path: Any) -> None:
    rules = {"reward": {"user_agent": "rules"}, "episodes": {"enabled": True, "reward": "judge"}}
    with pytest.raises(ConfigError) as e:
        load_evolve_config(None, {"grpo": rules})
    assert "grpo.episodes.reward: judge needs a model" in str(e.value) and "\n" not in str(e.value)
    assert "grpo.episodes.judge_model" in str(e.value)
    given = load_evolve_config(None, {"grpo": {**rules, "episodes": {**rules["episodes"], "judge_model": "scripted"}}})
    assert given.grpo.episode_judge().model == ModelSpec(model="scripted")
    chain = load_evolve_config(None, {"grpo": {"episodes": {"enabled": True, "reward": "judge"}}})
    assert chain.grpo.episode_judge().model == chain.grpo.user  # the user's model, by default
    with pytest.raises(ConfigError, match="a judge of one reply"):
        load_evolve_config(None, {"grpo": {"episodes": {"reward": "judge", "judge": "third_party_reply"}}})
    # a card file is read once its path is resolved: preflight refuses it the same way
    card = tmp_path / "mine.yaml"
    card.write_text("name: mine\nkind: third_party\n")
    cfg = load_evolve_config(None, {"grpo": {**rules, "episodes": {**rules["episodes"], "judge": str(card)}}})
    with pytest.raises(ConfigError, match=r"grpo\.episodes\.reward: judge needs a model"):
        EvolvePlan.of(cfg, "evolve.yaml")
    card.write_text("name: mine\nkind: third_party\nmodel: scripted\n")
    EvolvePlan.of(cfg, "evolve.yaml")  # the card's own model


async def test_an_episode_with_reward_judge_needs_its_judge() -> None:
    ep = await judged_episode(ScriptedModel([RATING]))
    with pytest.raises(ValueError, match="needs its judge"):
        Episode(ep.ctx, ep.user, RULES, ep.s)
    assert isinstance(ep.judge, EpisodeJudge)
