"""`evolve grpo` with `grpo.episodes` on the CPU: the tiny policy talks whole episodes with the rule-based user
through TRL's rollout_func, real GRPO steps; the episode log per step, the guards in the report, a SIGKILLed
stage resumed with no episode lost or counted twice, and two processes under `accelerate launch`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("trl")
pytest.importorskip("peft")

from emoharbor.evolve.config import load_evolve_config
from emoharbor.evolve.grpo import EPISODES, REPORT, run_grpo
from evolve_helpers import grpo_killed_and_resumed, tiny_model_dir
from test_evolve_accelerate import launch


def settings(model: Path, **args: Any) -> dict[str, Any]:
    train_args = {"max_steps": 2, "logging_steps": 1, "save_steps": 1, "per_device_train_batch_size": 4,
                  "num_generations": 4, "max_completion_length": 8, "learning_rate": 1e-3, **args}  # fmt: skip
    grpo = {"contexts": {"profiles": ["builtin:p00*"], "n": 4}, "train_args": train_args,
            "reward": {"user_agent": "rules", "max_words": 1},  # too_long: a spread of rewards from random text
            "episodes": {"enabled": True, "max_turns": 3}}  # fmt: skip
    return {"base_model": str(model), "device": "cpu", "lora": {"r": 4, "alpha": 8}, "grpo": grpo}


def test_grpo_trains_on_whole_episodes(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    cfg = load_evolve_config(None, settings(tiny_model_dir(tmp_path / "tiny")))
    assert cfg.grpo.episodes.max_turns == 3
    out = tmp_path / "policy"
    s = run_grpo(cfg, None, out, log=print, evaluate=False)
    card = json.loads((out / "evolve_model.json").read_text())
    assert card["train"]["steps"] == 2 and card["train"]["items"] == 2 * 4 and card["unit"] == "episodes"
    weights = load_file(str(out / "adapter_model.safetensors"))
    assert any(float(w.abs().sum()) > 0 for k, w in weights.items() if "lora_B" in k)
    rows = [json.loads(x) for x in (out / EPISODES).read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] * 4 + [2] * 4
    assert all(r["status"] == "ok" and 1 <= r["turns"] <= 3 and r["reward"] is not None for r in rows)
    assert all(r["trained_on"] == r["reward"] for r in rows)  # no shuffling unless asked
    # each episode's reward is its steps' record, worked out again from it (final: the change over the talk)
    r = rows[0]
    relief, trust = (r["start"][0] - r["end"][0]) / 15, (r["end"][1] - r["start"][1]) / 20
    hits = len(r["penalties"])
    assert r["reward"] == pytest.approx(0.5 * relief + 0.3 * trust + 0.2 * r["steps"][-1]["fit"] - hits)
    assert s["rewards"]["episodes"] == 8 and s["rewards"]["ok"] == 8
    report = (out / REPORT).read_text()
    assert "8 episodes, 8 scored" in report and "flattery, ends_early" in report


def test_grpo_on_episodes_rewarded_by_a_judge(tmp_path: Path) -> None:
    from test_episode_judge import RATING, SCORES

    base = settings(tiny_model_dir(tmp_path / "tiny"), max_steps=1)
    base["grpo"]["episodes"] |= {"reward": "judge", "judge_model": {"model": "scripted", "replies": [RATING]}}
    out = tmp_path / "policy"
    s = run_grpo(load_evolve_config(None, base), None, out, log=print, evaluate=False)
    rows = [json.loads(x) for x in (out / EPISODES).read_text().splitlines()]
    assert len(rows) == 4 and s["rewards"]["ok"] == 4
    for r in rows:  # the user-judge's rating of each talk, (mean - 3) / 2, less every penalty and guard hit
        assert r["judge"]["judge"] == "user" and list(r["judge"]["scores"].values()) == SCORES
        assert r["reward"] == pytest.approx((sum(SCORES) / len(SCORES) - 3) / 2 - len(r["penalties"]))


@pytest.mark.slow
def test_a_killed_episode_stage_resumes_with_no_episode_lost_or_twice(tmp_path: Path) -> None:
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(settings(tiny_model_dir(tmp_path / "tiny"), max_steps=6,
                                                                  save_steps=2)))  # fmt: skip
    out = tmp_path / "policy"
    card = grpo_killed_and_resumed(tmp_path, 2, 6)
    steps = [json.loads(x)["step"] for x in (out / EPISODES).read_text().splitlines()]
    assert steps == sorted(steps) and all(steps.count(k) == 4 for k in range(1, 7))  # none lost, none twice
    assert (card["rewards"]["episodes"], card["rewards"]["ok"]) == (24, 24)


@pytest.mark.slow
def test_episodes_in_two_processes(tmp_path: Path) -> None:
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(settings(tiny_model_dir(tmp_path / "tiny"), save_steps=5)))
    launch(tmp_path, "evolve", "grpo", "--config", "evolve.yaml", "--out", "policy", "--no-eval",
           "--set", "grpo.episodes.max_turns=2")  # fmt: skip
    out = tmp_path / "policy"
    card = json.loads((out / "evolve_model.json").read_text())
    assert card["train"]["world_size"] == 2 and all(r["items"] > 0 for r in card["train"]["ranks"])
    assert (out / EPISODES).is_file() and (out / "episodes-rank1.jsonl").is_file()
    assert card["rewards"]["episodes"] == 2 * 2 * 4 and card["config"]["grpo"]["episodes"]["max_turns"] == 2
    rows = [json.loads(x) for f in (EPISODES, "episodes-rank1.jsonl") for x in (out / f).read_text().splitlines()]
    assert all(r["turns"] <= 2 for r in rows)


def test_the_held_out_curve_plays_each_measured_step_once(tmp_path: Path) -> None:
    """The bench's held-out callback: before the first step and every ``every`` steps (and at the last) it
    plays the held-out episodes with the policy as it stands; a step already in the file is not played again
    (a resumed run goes on with its curve)."""
    import asyncio
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from emoharbor.episodes.heldout import held_out_callback, read_curve
    from emoharbor.profiles.loader import resolve_profiles
    from emoharbor.reward.context import openings

    cfg = load_evolve_config(None, settings(tiny_model_dir(tmp_path / "tiny")))
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(tmp_path / "tiny")
    agent = cfg.grpo.reward.user_agent
    contexts, failed = asyncio.run(openings(resolve_profiles(["builtin:p09[0-1]*"]), None, seed=0, settings=agent))
    assert failed == 0 and len(contexts) == 2
    path = tmp_path / "heldout.jsonl"
    cb = held_out_callback(path, 2, contexts, "Be kind.", cfg.grpo.reward, cfg.grpo.episodes, samples=3,
                           max_new_tokens=6)  # fmt: skip
    kw = {"model": model, "processing_class": tok}
    for step in (0, 1, 2, 3, 2):  # 1 and 3 are not measured (3 is not the last); 2 comes back after a resume
        state = SimpleNamespace(is_world_process_zero=True, global_step=step, max_steps=4)
        (cb.on_train_begin if step == 0 else cb.on_step_end)(None, state, None, **kw)
    curve = read_curve(path)
    assert sorted(curve) == [0, 2] and len(path.read_text().splitlines()) == 2
    for eps in curve.values():
        assert sorted(e["context"] for e in eps) == sorted(c.id for c in contexts for _ in range(3))
        assert all(e["status"] == "ok" and e["reward"] is not None and e["steps"] for e in eps)


def test_a_user_on_its_own_loop_serves_one_measurement_after_another() -> None:
    """A user agent that calls a model (the chain user) runs on ``UserLoop``'s loop, which outlives each
    measurement: two held-out plays in a row on the one loop (``asyncio.run`` per play would close the loop an
    embedded model's HTTP client was made on; a scripted model stands in for it here)."""
    from emoharbor.episodes.env import Episode
    from emoharbor.episodes.heldout import UserLoop
    from emoharbor.episodes.settings import EpisodeSettings
    from emoharbor.profiles.loader import resolve_profiles
    from emoharbor.reward.context import RewardContext
    from emoharbor.reward.settings import RewardSettings
    from emoharbor.simulate.agents import perceiving_user
    from emoharbor.simulate.conversation import Turn
    from reward_helpers import scripted_user

    profile = resolve_profiles(["builtin:p090*"])[0]
    ctx = RewardContext("open:p", "profile", profile, [Turn(speaker="user", text="I lost my job.")], 70, 40, 0, "p")
    loop, model = UserLoop(None), scripted_user()
    try:
        for _ in range(2):
            ep = Episode(ctx, perceiving_user(model, profile, RewardSettings().user_agent, "test"), RewardSettings(),
                         EpisodeSettings(max_turns=2))  # fmt: skip
            ep.reset()
            steps = [loop.run(ep.step("What worries you most about it?"))]
            while not ep.done:
                steps.append(loop.run(ep.step("What would help tonight?")))
            assert 1 <= len(steps) <= 2 and all(s.relief is not None for s in steps)
            assert ep.result().status == "ok" and ep.result().reward is not None
    finally:
        loop.close()
    assert loop.loop.is_closed() and not loop.thread.is_alive()
