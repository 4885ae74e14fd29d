"""`evolve grpo` on the CPU with the tiny model and a scripted simulated user: real GRPO steps through TRL's
GRPOTrainer (LoRA, plain generation), the reward per step and its penalties on record, the contexts fixed
and guarded, a SIGKILLed stage resumed from its checkpoint, two processes under `accelerate launch`, and
the held-out evaluation before and after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("trl")
pytest.importorskip("peft")

from emoharbor.evolve.config import load_evolve_config
from emoharbor.evolve.grpo import CONTEXTS, REPORT, REWARDS, run_grpo
from evolve_helpers import esconv_file, grpo_killed_and_resumed, tiny_model_dir
from reward_helpers import scripted_user
from test_evolve_accelerate import launch

# one answer that parses as the opening, the Appraiser's and the Feeler's (a scripted user on the command line)
EVERY_SCHEMA = json.dumps({"message": "I have not slept since the layoff.", "decision": "continue",
                           "understood": "my layoff", "needs_met": [], "needs_missed": [], "about_me": True,
                           "disliked": False, "fit": "mixed", "crisis_referral": False, "thought": "ok", "better": 5,
                           "trust": 4})  # fmt: skip


def settings(model: Path, eval_config: str | None = None, **args: Any) -> dict[str, Any]:
    """The stage's settings; ``args``: TRL's arguments over these."""
    train_args = {"max_steps": 3, "logging_steps": 1, "save_steps": 1, "per_device_train_batch_size": 4,
                  "num_generations": 4, "max_completion_length": 12, "learning_rate": 1e-3, **args}  # fmt: skip
    grpo = {"contexts": {"profiles": ["builtin:p00*"], "n": 6}, "eval_config": eval_config, "train_args": train_args}
    return {"base_model": str(model), "device": "cpu", "lora": {"r": 4, "alpha": 8}, "grpo": grpo}


def length_user() -> Any:
    """Replies of odd length please it: the replies of one context get different rewards (a gradient)."""
    return scripted_user(lambda reply: ("good", 15, 20) if len(reply) % 2 else ("poor", -5, 0))


def test_grpo_trains_against_the_simulated_user(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    raw = settings(tiny_model_dir(tmp_path / "tiny"))
    raw["grpo"]["contexts"]["esconv"] = [str(esconv_file("valid.jsonl"))]
    holdout = tmp_path / "holdout.yaml"
    holdout.write_text(yaml.safe_dump({"profiles": ["p001-darnell-layoff"]}))
    raw["holdout"] = [str(holdout)]
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(raw))
    cfg = load_evolve_config(tmp_path / "evolve.yaml")
    out = tmp_path / "policy"
    s = run_grpo(cfg, None, out, log=print, evaluate=False, user=length_user())

    card = json.loads((out / "evolve_model.json").read_text())
    assert card["stage"] == "grpo" and card["train"]["steps"] == 3 and card["train"]["engine"] == "trl"
    assert card["train"]["items"] == 3 * 4  # completions trained on
    weights = load_file(str(out / "adapter_model.safetensors"))
    assert any(float(w.abs().sum()) > 0 for k, w in weights.items() if "lora_B" in k)  # LoRA B starts at 0: it moved
    # the reward of every completion, per step, with its parts
    rows = [json.loads(x) for x in (out / REWARDS).read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] * 4 + [2] * 4 + [3] * 4
    assert all(r["status"] == "ok" and r["reward"] is not None for r in rows)
    assert [c["completions"] for c in s["curve"]] == [4, 4, 4]
    assert s["rewards"]["replies"] == 12 and s["rewards"]["ok"] == 12
    # the contexts: built-in openings and ESConv cuts, the held-out profile never among them
    lines = (out / CONTEXTS).read_text().splitlines()
    counts = json.loads(lines[0])["counts"]
    assert counts["profile"]["held_out"] == 1 and counts["profile"]["found"] == 9
    contexts = [json.loads(x) for x in lines[1:]]
    assert len(contexts) == 6 and all(c["profile"]["id"] != "p001-darnell-layoff" for c in contexts)
    assert [c["source"] for c in contexts].count("profile") == 3  # the two sources take turns
    assert [c["source"] for c in contexts].count("esconv") == 3
    report = (out / REPORT).read_text()
    assert "## Reward per step" in report and "| 3 | 4 | 4 | 0 | 0 |" in report
    page = (out / "report.html").read_text()  # the same, self-contained, with the reward chart: a row per step
    assert "<svg" in page and all(f">step {k}</text>" in page for k in (1, 2, 3))


def test_an_unscored_reaction_is_dropped_and_counted(tmp_path: Path) -> None:
    cfg = load_evolve_config(None, settings(tiny_model_dir(tmp_path / "tiny"), max_steps=1, save_steps=5))
    s = run_grpo(cfg, None, tmp_path / "policy", log=print, evaluate=False, user=scripted_user(garbage="not json"))
    assert s["rewards"] == {"replies": 4, "unscored": 4}
    assert s["curve"][0]["mean_reward"] is None and s["curve"][0]["unscored"] == 4


def test_empty_openings_are_left_out_not_made_up(tmp_path: Path) -> None:
    # the opening is free text: one the user did not write (empty) is not replaced by one made up from the profile
    from emoharbor.errors import EmoharborError
    from emoharbor.models.scripted import ScriptedModel

    cfg = load_evolve_config(None, settings(tiny_model_dir(tmp_path / "tiny"), max_steps=1))
    with pytest.raises(EmoharborError, match="no contexts to train on"):
        run_grpo(cfg, None, tmp_path / "policy", log=print, evaluate=False, user=ScriptedModel([""]))
    counts = json.loads((tmp_path / "policy" / CONTEXTS).read_text().splitlines()[0])["counts"]
    assert counts["profile"]["opening_unparsed"] == 6


def test_grpo_needs_its_held_out_evaluation_unless_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_main

    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(settings(tiny_model_dir(tmp_path / "tiny"))))
    code, _, err = run_main(["evolve", "grpo", "--config", str(tmp_path / "evolve.yaml"), "--out",
                             str(tmp_path / "p")], capsys)  # fmt: skip
    assert code != 0 and "grpo.eval_config is not set" in err and "--no-eval" in err
    code, _, err = run_main(["evolve", "grpo", "--config", str(tmp_path / "evolve.yaml"), "--out", str(tmp_path / "p"),
                             "--set", "grpo.train_args.per_device_train_batch_size=6"], capsys)  # fmt: skip
    assert code != 0 and "per_device_train_batch_size (6) must be a multiple of num_generations (4)" in err
    assert not (tmp_path / "p").exists()


def _cli_config(tmp_path: Path, **more: Any) -> Path:
    raw = settings(tiny_model_dir(tmp_path / "tiny"), **more)
    raw["grpo"]["user"] = {"model": "scripted", "replies": [EVERY_SCHEMA]}
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
def test_a_killed_grpo_stage_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    _cli_config(tmp_path, max_steps=8, save_steps=2)
    out = tmp_path / "policy"
    card = grpo_killed_and_resumed(tmp_path, 4, 8)
    steps = [json.loads(x)["step"] for x in (out / REWARDS).read_text().splitlines()]
    assert steps == sorted(steps) and sorted(set(steps)) == list(range(1, 9))
    assert all(steps.count(k) == 4 for k in range(1, 9))  # every step's rewards once: none lost, none twice
    # the counts too, the steps before the kill included
    assert (card["rewards"]["replies"], card["rewards"]["ok"]) == (32, 32)


@pytest.mark.slow
def test_grpo_in_two_processes(tmp_path: Path) -> None:
    _cli_config(tmp_path, max_steps=2, save_steps=5)
    done = launch(tmp_path, "evolve", "grpo", "--config", "evolve.yaml", "--out", "policy", "--no-eval")
    out = tmp_path / "policy"
    card = json.loads((out / "evolve_model.json").read_text())
    assert card["train"]["world_size"] == 2 and [r["rank"] for r in card["train"]["ranks"]] == [0, 1]
    assert all(r["items"] > 0 for r in card["train"]["ranks"])
    assert (out / REWARDS).is_file() and (out / "rewards-rank1.jsonl").is_file()
    assert card["rewards"]["replies"] == 2 * 2 * 4  # two processes, two steps, a batch of 4 each
    assert len(done.stdout.strip().splitlines()) == 1


@pytest.mark.slow
def test_grpo_ends_with_the_held_out_evaluation(tmp_path: Path) -> None:
    run = {"name": "heldout", "profiles": ["builtin:p010*"], "max_turns": 2,
           "roles": {"supporter": [{"model": "scripted", "replies": ["That sounds hard. What happened?"]}],
                     "user": {"model": "scripted", "replies": [EVERY_SCHEMA]},
                     "judge": {"model": "scripted", "replies": ["{}"]}}}  # fmt: skip
    (tmp_path / "eval.yaml").write_text(yaml.safe_dump(run))
    cfg_path = _cli_config(tmp_path, max_steps=1, save_steps=5, eval_config="eval.yaml")
    cfg = load_evolve_config(cfg_path)
    s = run_grpo(cfg, None, tmp_path / "policy", log=print, user=length_user())
    assert "before" in s["eval"] and "after" in s["eval"]
    contexts = (tmp_path / "policy" / CONTEXTS).read_text()
    assert "p010" not in contexts  # the evaluation's profiles are held out of training
    assert "## Held-out evaluation" in (tmp_path / "policy" / REPORT).read_text()
    from emoharbor.store.run_store import RunStore

    store = RunStore.open_existing(tmp_path / "policy" / "eval")  # one run, the two models its supporters
    assert {k[1] for k in store.keys("conversation")} == {"before", "after"}
    store.close()
