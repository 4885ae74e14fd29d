"""Episodes with the rule-based user as the environment: a scripted policy's replies in, the user's answers,
the end of the talk and the episode's reward out (worked out by hand from rules_user's rules); the guards
against reward hacking; the rollout's token masks with the tiny model; the shuffled-reward control."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from emoharbor.episodes.env import Episode
from emoharbor.episodes.guards import guard_hits
from emoharbor.episodes.reward_func import EpisodeRewardFunc
from emoharbor.episodes.settings import EpisodeSettings
from emoharbor.profiles.loader import resolve_profiles
from emoharbor.reward.context import RewardContext, openings
from emoharbor.reward.settings import RewardSettings
from emoharbor.simulate.agents import perceiving_user

RULES = RewardSettings.model_validate({"user_agent": "rules"})
# p001's story, one sentence a turn: the opening tells the first (Darnell, nineteen years at Hendley)
GOOD_1 = "Nineteen years at Hendley Components, then an eleven minute call. What has that been like?"
MIXED_2 = "Three months of severance and a mortgage: you should make a budget."
POOR = "Okay."


async def episode(**settings: object) -> Episode:
    profile = resolve_profiles(["builtin:p001*"])[0]
    made, failed = await openings([profile], None, seed=0, settings=RULES.user_agent)
    assert failed == 0
    ctx: RewardContext = made[0]
    user = perceiving_user(None, ctx.profile, RULES.user_agent, "a test")
    return Episode(ctx, user, RULES, EpisodeSettings.model_validate(settings))


async def play(ep: Episode, replies: list[str]) -> None:
    ep.reset()
    for r in replies:
        assert not ep.done
        await ep.step(r)


async def test_the_rules_user_answers_each_reply_and_the_episode_is_rewarded() -> None:
    ep = await episode(max_turns=3)
    turns = ep.reset()
    assert turns[-1].text.startswith("Hi. I feel anxiety. After nineteen years at Hendley Components")
    s1 = await ep.step(GOOD_1)  # heard (his words), no advice: +15 relief, +20 trust, fit good
    assert (s1.intensity, s1.trust, s1.fit) == (53, 60, 1.0) and s1.reward == pytest.approx(1.0)
    assert s1.user.startswith("I have three months of severance") and not ep.done  # his story, as "I"
    s2 = await ep.step(MIXED_2)  # heard, with advice: a little better (+5, +7), fit mixed
    assert (s2.intensity, s2.trust, s2.fit) == (48, 67, 0.0)
    assert s2.reward == pytest.approx(0.5 * 5 / 15 + 0.3 * 7 / 20)
    s3 = await ep.step(POOR)  # none of his words: worse (-10, -13), fit poor; the turn cap: perceived, no message
    assert (s3.intensity, s3.trust, s3.fit, s3.user) == (58, 54, -1.0, "")
    assert ep.done and ep.ended == "max_turns"
    r = ep.result()
    assert r.status == "ok" and (r.start, r.end) == ((68, 40), (58, 54))
    # final: the change over the talk, weighted as one reply's reaction: 0.5 * 10/15 + 0.3 * 14/20 + 0.2 * -1
    assert r.reward == pytest.approx(0.5 * 10 / 15 + 0.3 * 14 / 20 - 0.2)
    summed = await episode(max_turns=3, reward="sum")
    await play(summed, [GOOD_1, MIXED_2, POOR])
    assert summed.result().reward == pytest.approx(1.0 + (0.5 * 5 / 15 + 0.3 * 7 / 20) - (0.5 * 10 / 15 + 0.3 * 13 / 20
                                                                                          + 0.2))  # fmt: skip


async def test_the_user_ends_satisfied_or_disengages() -> None:
    ep = await episode(max_turns=6)
    ep.reset()
    await ep.step(GOOD_1)
    await ep.step("Three months of severance, a mortgage, and Keisha starting at Wayne State. That is a lot.")
    assert not ep.done  # intensity 38: not yet
    await ep.step("Your mother worked at the same plant for thirty years; telling her feels heavy.")
    assert ep.done and ep.ended == "user_ended_satisfied" and ep.user.state.intensity == 23
    assert ep.result().reward == pytest.approx(0.5 * 45 / 15 + 0.3 * 60 / 20 + 0.2)
    cold = await episode(max_turns=6)
    await play(cold, [POOR, POOR, POOR])  # trust 40 -> 27 -> 14 -> 1
    assert cold.done and cold.ended == "user_disengaged" and len(cold.result().steps) == 3


def test_the_guards_catch_flattery_and_an_early_goodbye() -> None:
    assert guard_hits("You are so strong. What happened at work?", 3, 2) == ["flattery"]
    assert guard_hits("I'm glad I could help. Take care!", 1, 2) == ["ends_early"]
    assert guard_hits("I'm glad I could help. Take care!", 3, 2) == []  # after the talk had its turns
    assert guard_hits("Is there anything else on your mind?", 2, 2) == ["ends_early"]
    assert guard_hits("That sounds so hard. What happened next?", 1, 2) == []


async def test_a_guard_costs_its_weight_per_step_on_top_of_the_penalties() -> None:
    ep = await episode(max_turns=2)
    await play(ep, [GOOD_1 + " You are so brave. Goodbye!", "Supporter: goodbye then"])
    r = ep.result()
    assert r.steps[0].penalties == ["flattery", "ends_early"] and r.steps[1].penalties == ["labels", "ends_early"]
    assert r.penalties() == ["flattery", "ends_early", "labels", "ends_early"]
    assert r.steps[0].reward == pytest.approx(1.0 - 2)
    # 68 -> 53 -> 63, trust 40 -> 60 -> 47, the last fit poor; four hits of cost 1
    assert r.reward == pytest.approx(0.5 * 5 / 15 + 0.3 * 7 / 20 - 0.2 - 4)


async def test_the_shuffled_control_hands_trl_the_rewards_in_another_order(tmp_path: Path) -> None:
    records = [json.dumps({"reward": float(i), "status": "ok", "turns": 1, "penalties": []}) for i in range(8)]
    records[3] = json.dumps({"reward": None, "status": "unscored", "turns": 1, "penalties": []})
    plain = EpisodeRewardFunc(EpisodeSettings(), log=tmp_path / "a.jsonl")
    assert await plain([], [], episode=records) == [0.0, 1.0, 2.0, None, 4.0, 5.0, 6.0, 7.0]
    shuffled = EpisodeRewardFunc(EpisodeSettings(shuffle_rewards=True), log=tmp_path / "b.jsonl")
    got = await shuffled([], [], episode=records)
    assert got[3] is None and sorted(x for x in got if x is not None) == [0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 7.0]
    assert got != [0.0, 1.0, 2.0, None, 4.0, 5.0, 6.0, 7.0]
    rows = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [0.0, 1.0, 2.0, None, 4.0, 5.0, 6.0, 7.0]  # the log keeps the true ones
    assert [r["trained_on"] for r in rows] == got


def test_the_rollout_masks_the_users_turns_and_keeps_the_policys_tokens(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from emoharbor.episodes.rollout import generate_with, play
    from evolve_helpers import tiny_model_dir

    folder = tiny_model_dir(tmp_path / "tiny")
    tok, model = AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder)
    eos = [tok.eos_token_id]
    config = GenerationConfig(max_new_tokens=10, do_sample=True, eos_token_id=eos, pad_token_id=tok.pad_token_id)
    episodes = [asyncio.run(episode(max_turns=3)), asyncio.run(episode(max_turns=2))]
    prompts = [e.ctx.messages("Be kind.") for e in episodes]
    talks = play(prompts, episodes, tok, generate_with(model, tok, config, eos, "cpu"), asyncio.run, eos)
    for talk, e in zip(talks, episodes, strict=True):
        assert talk.prompt_ids == tok(tok.apply_chat_template(prompts[0 if e is episodes[0] else 1], tokenize=False,
                                                              add_generation_prompt=True),
                                      add_special_tokens=False)["input_ids"]  # fmt: skip
        assert len(talk.completion_ids) == len(talk.env_mask) and talk.env_mask[0] == 1 and talk.env_mask[-1] == 1
        runs: list[tuple[int, list[int]]] = []  # (mask value, tokens) in order
        for t, m in zip(talk.completion_ids, talk.env_mask, strict=True):
            if runs and runs[-1][0] == m:
                runs[-1][1].append(t)
            else:
                runs.append((m, [t]))
        policy = [ids for m, ids in runs if m == 1]
        between = [tok.decode(ids) for m, ids in runs if m == 0]
        assert len(policy) == len(talk.replies) == len(talk.result.steps) == e.s.max_turns
        assert [tok.decode(ids, skip_special_tokens=True).strip() for ids in policy] == talk.replies
        assert [s.reply for s in talk.result.steps] == talk.replies  # the user read what the policy wrote
        users = [s.user for s in talk.result.steps[:-1]]
        assert len(between) == len(users)
        assert all(u in b and "<|im_start|>user" in b for u, b in zip(users, between, strict=True))
        assert all(b.endswith("<|im_start|>assistant\n") for b in between)
