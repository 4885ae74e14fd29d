"""Measurement, in the manner of ``plan_counts.py``: how often one command of HEART and one of evolve reads
the same things again, fresh and resumed, every model scripted (the fake server's reply function, in this
process: no model is started or reached).

    python bench/kind_counts.py

HEART: ``heart generate CONFIG`` (two candidates, one with its system prompt in a file; one judge) fresh and
again on the finished folder, then ``heart judge RUN`` fresh and again. Counted: history loads
(``load_histories``), history file reads (``read_items``, ``read_rated``), candidate system prompts resolved
(``system_prompt``), judge cards loaded (``load_card``) and HEART configs parsed (``parse_heart_config``).

evolve: ``evolve grpo --config EVOLVE`` of episodes rewarded by a judge card, with its held-out evaluation
(``grpo.eval_config``, two models), on contexts from profiles, an ESConv file and a HEART file; TRL's trainer,
the model load, the fit and the adapter's save are stubbed (nothing is trained: the counts are the planning's),
the evaluation runs run. Fresh, and resumed (the model card removed, as a killed stage leaves the folder: its
contexts are kept, the evaluation runs are finished). Counted: episode judges built (``episode_judge``), run
configs loaded (``load_config``), judge cards loaded (``load_card``), profile resolutions
(``resolve_profiles``), supporter prompts resolved (``supporter_prompt``) and context files read
(``load_esconv``, ``load_heart_source``). Run it against another checkout's code with PYTHONPATH=that/src.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from plan_counts import command, count_calls, invented_esconv, script_models

MODULES = ("emoharbor.preflight", "emoharbor.settings_files", "emoharbor.commands.heart", "emoharbor.commands.evolve",
           "emoharbor.heart.plan", "emoharbor.heart.kind", "emoharbor.heart.stages.pipeline",
           "emoharbor.heart.stages.sources", "emoharbor.heart.stages.candidates", "emoharbor.heart.histories",
           "emoharbor.heart.rated", "emoharbor.evolve.plan", "emoharbor.evolve.kind", "emoharbor.evolve.config",
           "emoharbor.evolve.grpo", "emoharbor.evolve.evaluate", "emoharbor.episodes.judged",
           "emoharbor.reward.context", "emoharbor.evaluate.plan", "emoharbor.evaluate.run",
           "emoharbor.simulate.supporter")  # fmt: skip
COUNTED = {"load_card": "emoharbor.assess.cards", "load_histories": "emoharbor.heart.stages.sources",
           "read_items": "emoharbor.heart.histories", "read_rated": "emoharbor.heart.rated",
           "system_prompt": "emoharbor.heart.stages.candidates", "parse_heart_config": "emoharbor.heart.config",
           "episode_judge": "emoharbor.episodes.judged", "load_config": "emoharbor.config",
           "resolve_profiles": "emoharbor.profiles.loader", "supporter_prompt": "emoharbor.simulate.supporter",
           "load_esconv": "emoharbor.data.esconv", "load_heart_source": "emoharbor.heart.stages.sources"}  # fmt: skip
HEART = {"history loads": ("load_histories",), "history file reads": ("read_items", "read_rated"),
         "system prompts resolved": ("system_prompt",), "judge cards loaded": ("load_card",),
         "HEART configs parsed": ("parse_heart_config",)}  # fmt: skip
EVOLVE = {"episode judges built": ("episode_judge",), "run configs loaded": ("load_config",),
          "judge cards loaded": ("load_card",), "profile resolutions": ("resolve_profiles",),
          "supporter prompts resolved": ("supporter_prompt",),
          "context files read": ("load_esconv", "load_heart_source")}  # fmt: skip
HISTORY = {"dialogue_history": ["Hi, how are you?", "Not great, I lost my job today."],
           "prev_speakers": ["supporter", "seeker"], "emotion_type": "sadness", "problem_type": "job crisis",
           "situation": "lost job", "vanilla_completion": "I'm sorry, that must be a shock."}  # fmt: skip


def heart_files(folder: Path) -> Path:
    (folder / "regular.json").write_text(json.dumps([HISTORY, {**HISTORY, "situation": "other"}]), encoding="utf-8")
    (folder / "prompt.txt").write_text("You are a warm listener. Answer in two sentences.", encoding="utf-8")
    cfg = {"name": "t", "histories": [{"path": "regular.json"}],
           "candidates": [{"model": "scripted", "name": "plain"},
                          {"model": "scripted", "name": "filed", "system_prompt": "@prompt.txt"}],
           "judges": [{"model": "scripted", "name": "j"}], "bootstrap": 10}  # fmt: skip
    path = folder / "heart.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


class FakeReport:
    steps, wall_s, items = 0, 0.0, 0

    def to_dict(self) -> dict[str, Any]:
        return {"steps": 0, "wall_s": 0.0, "engine": "stub"}


class FakeTrainer:
    """GRPOTrainer in name only: the loop its reward and rollout are closed on."""

    def __init__(self, **_: Any) -> None:
        self.async_loop = asyncio.new_event_loop()
        threading.Thread(target=self.async_loop.run_forever, daemon=True).start()

    def add_callback(self, _: Any) -> None:
        pass


def stub_training(base: Path) -> None:
    """Nothing trained: the model load, its LoRA settings, TRL's trainer, the fit and the save (a card
    naming ``base``)."""
    import trl.trainer.grpo_trainer as trl_grpo

    grpo = sys.modules["emoharbor.evolve.grpo"]

    def save(trainer: Any, out: Path, card: dict[str, Any]) -> None:
        (out / "evolve_model.json").write_text(json.dumps({**card, "base_model": str(base)}), encoding="utf-8")

    trl_grpo.GRPOTrainer = FakeTrainer  # type: ignore[misc,assignment]
    grpo.load_model = lambda *a, **k: (None, None)  # type: ignore[attr-defined]
    grpo.lora_config = lambda *a, **k: None  # type: ignore[attr-defined]
    grpo.fit = lambda *a, **k: FakeReport()  # type: ignore[attr-defined]
    grpo.save_stage = save  # type: ignore[attr-defined]


def evolve_files(folder: Path) -> Path:
    base = folder / "base"
    base.mkdir()
    (base / "config.json").write_text("{}", encoding="utf-8")
    (folder / "h.json").write_text(json.dumps([HISTORY]), encoding="utf-8")
    run = {"name": "held-out", "profiles": ["builtin:p001*"], "repeats": 1,
           "roles": {"supporter": [{"model": "scripted", "name": "s"}], "user": "scripted", "judge": "scripted"},
           "judges": ["user", "third_party"], "max_turns": 2}  # fmt: skip
    (folder / "eval.yaml").write_text(yaml.safe_dump(run), encoding="utf-8")
    grpo = {"contexts": {"profiles": ["builtin:p00*"], "esconv": [str(invented_esconv(folder))], "heart": ["h.json"],
                         "n": 4},
            "user": {"model": "scripted"}, "eval_config": "eval.yaml",
            "episodes": {"enabled": True, "reward": "judge", "judge": "third_party", "judge_model": "scripted"},
            "train_args": {"max_steps": 1, "per_device_train_batch_size": 4, "num_generations": 4}}  # fmt: skip
    cfg = {"base_model": str(base), "device": "cpu", "grpo": grpo}
    path = folder / "evolve.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    stub_training(base)
    return path


def table(title: str, columns: list[str], rows: list[dict[str, float]]) -> None:
    print(f"\n{title}\n{'':30}" + "".join(f"{c:>16}" for c in columns))
    for name in rows[0]:
        print(f"{name:30}" + "".join(f"{r[name]:16.0f}" for r in rows))


def main_() -> None:
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        os.environ["EMOHARBOR_CACHE_DIR"] = str(Path(tmp) / "cache")  # its calls and records stay here
        count_calls(COUNTED, MODULES)
        script_models()
        config = str(heart_files(Path(tmp)))
        generate = ["heart", "generate", config, "--run", "h", "--quiet"]
        judge = ["heart", "judge", "h", "--quiet"]
        heart = [command(generate, HEART), command(generate, HEART), command(judge, HEART), command(judge, HEART)]
        evolve = ["evolve", "grpo", "--config", str(evolve_files(Path(tmp))), "--out", "policy", "--quiet"]
        fresh = command(evolve, EVOLVE)
        (Path("policy") / "evolve_model.json").unlink()  # as a killed stage leaves it
        resumed = command(evolve, EVOLVE)
    table("emoharbor heart (2 candidates, 1 judge, 1 history file)",
          ["generate fresh", "generate again", "judge fresh", "judge again"], heart)  # fmt: skip
    table("emoharbor evolve grpo (episodes, reward: judge; eval_config, 2 models)", ["fresh", "resumed"],
          [fresh, resumed])  # fmt: skip


if __name__ == "__main__":
    main_()
