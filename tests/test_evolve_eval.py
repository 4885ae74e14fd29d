"""``evolve eval``: one evaluation run per model, the means per dimension and judge, and the change
from the first model, against hand-computed values. The evaluator is replaced by one that writes
fixed assessments, so no model runs here."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from emoharbor.config import RunConfig
from emoharbor.errors import EmoharborError
from emoharbor.evaluate.plan import Plan
from emoharbor.evolve import evaluate
from emoharbor.store.run_store import RunStore

SCORES: dict[str, list[dict[str, Any]]] = {
    # M0: warmth 3 and 4, memory 2 and unscored; M1: warmth 5 and 4, memory 4 and 4
    "M0": [{"judge": "user", "scores": {"warmth": 3, "memory": 2}},
           {"judge": "user", "scores": {"warmth": 4, "memory": None}},
           {"judge": "user", "scores": {}, "unscored": True, "status": "unscored"}],
    "M1": [{"judge": "user", "scores": {"warmth": 5, "memory": 4}},
           {"judge": "user", "scores": {"warmth": 4, "memory": 4}},
           {"judge": "third_party:j", "scores": {"warmth": 1, "memory": 1}}],
}  # fmt: skip


def fake_evaluator(monkeypatch: pytest.MonkeyPatch, seen: list[RunConfig]) -> None:
    async def run_evaluation(plan: Plan, run_dir: Path, progress: bool = True) -> None:
        cfg = plan.cfg  # each model's run: the evaluation's plan with its supporter replaced
        seen.append(cfg)
        name = cfg.roles.supporter[0].name
        store = RunStore.create_or_resume(run_dir, "emoharbor", cfg.resolved(), cfg.config_hash())
        for i, rec in enumerate(SCORES[name]):
            store.put("assessment", (f"c{i}", rec["judge"]), {"status": "ok", **rec, "conversation": f"c{i}"})
        store.close()

    # the evaluator replaced, not the package: the run store still finds the run kinds in it
    monkeypatch.setattr("emoharbor.evaluate.run_evaluation", run_evaluation)


def test_means_and_changes_per_dimension(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[RunConfig] = []
    fake_evaluator(monkeypatch, seen)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("profiles: ['builtin:*']\nroles:\n  supporter: {model: scripted, system_prompt: 'Be kind.'}\n")
    m0, m1 = tmp_path / "m0", tmp_path / "m1"
    for m in (m0, m1):  # model folders as far as the check before the runs reads them (nothing loads them here)
        m.mkdir()
        (m / "config.json").write_text("{}")
    table = evaluate.evaluate_models(cfg, [("M0", m0), ("M1", m1)], tmp_path / "eval", log=lambda _: None)
    assert [c.roles.supporter[0].model for c in seen] == [f"hf:{m0.resolve()}", f"hf:{m1.resolve()}"]
    assert seen[0].roles.supporter[0].system_prompt == "Be kind."  # the rest of the supporter is kept
    means = evaluate.dimension_means(tmp_path / "eval" / "M0")["user"]
    assert means["warmth"] == {"mean": 3.5, "scored": 2.0, "unscored": 0.0}
    assert means["memory"] == {"mean": 2.0, "scored": 1.0, "unscored": 1.0}
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert means[evaluate.RECORD]["unscored"] == pytest.approx(1.0) and math.isnan(means[evaluate.RECORD]["mean"])
    lines = table.splitlines()
    assert "warmth | 3.50 (n=2) | 4.50 (n=2) | +1.00" in lines
    assert "memory | 2.00 (n=1, unscored 1) | 4.00 (n=2) | +2.00" in lines
    assert "judge: third_party:j" in lines and "warmth | - | 1.00 (n=1) | n/a" in lines


def test_eval_writes_each_models_deltas_into_its_model_card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_evaluator(monkeypatch, [])
    cfg = tmp_path / "run.yaml"
    cfg.write_text("profiles: ['builtin:*']\nroles:\n  supporter: {model: scripted}\n")
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    for name in ("m0", "m1"):  # adapters as evolve leaves them: an adapter config and a model card
        (tmp_path / name).mkdir()
        (tmp_path / name / "adapter_config.json").write_text("{}")
        (tmp_path / name / "evolve_model.json").write_text(json.dumps({"base_model": str(base), "stage": "sft"}))
    evaluate.evaluate_models(cfg, [("M0", tmp_path / "m0"), ("M1", tmp_path / "m1")], tmp_path / "eval",
                             log=lambda _: None)  # fmt: skip
    card = json.loads((tmp_path / "m1" / "evolve_model.json").read_text())
    ev = card["evaluation"]
    assert ev["reference"] == "M0" and ev["run"] == str(tmp_path / "eval" / "M1")
    assert ev["means"]["user"]["warmth"]["delta"] == pytest.approx(1.0)
    assert ev["means"]["third_party:j"]["warmth"]["delta"] is None  # M0 had no such judge
    readme = (tmp_path / "m1" / "README.md").read_text()
    assert "| user | warmth | 4.50 | +1.00 | 2 |" in readme and card["base_model"] == str(base)
    assert json.loads((tmp_path / "m0" / "evolve_model.json").read_text())["evaluation"]["means"]["user"]["warmth"][
        "delta"] is None  # fmt: skip


def test_eval_says_clearly_when_the_evaluator_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "emoharbor.evaluate", None)  # makes the import fail
    with pytest.raises(EmoharborError, match=r"evaluator .* is not installed"):
        evaluate.evaluate_models(tmp_path / "x.yaml", [("M0", tmp_path)], tmp_path / "o", log=lambda _: None)
