"""``evolve eval``: the models as the supporters of one run, each compared with the first on the same profiles:
the paired difference with its interval and P(difference > 0) on a known difference, the means per supporter,
judge and dimension, the cards' changes. The evaluator is replaced by one that writes fixed talks and
ratings, so no model runs here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from emoharbor.config import RunConfig
from emoharbor.errors import ConfigError, EmoharborError
from emoharbor.evaluate.plan import Plan
from emoharbor.evolve import evaluate
from emoharbor.simulate.conversation import Conversation
from emoharbor.store.run_store import RunStore

PROFILES = [f"p{i}" for i in range(8)]


def ratings(model: str, i: int) -> list[dict[str, Any]]:
    """Each profile's ratings of a model's talk: M1 is M0 plus one point of warmth on every profile, and two of
    memory on every other; M0's memory is unscored on the first profile; a third-party judge rates M1 alone."""
    warmth, memory = 2 + i % 3, 1 + i % 2
    if model == "M1":
        return [{"judge": "user", "scores": {"warmth": warmth + 1, "memory": memory + 2 * (i % 2)}},
                {"judge": "third_party:j", "scores": {"warmth": 1, "memory": 1}}]  # fmt: skip
    return [{"judge": "user", "scores": {"warmth": warmth, "memory": None if i == 0 else memory}}]


def fake_evaluator(monkeypatch: pytest.MonkeyPatch, seen: list[RunConfig]) -> None:
    async def run_evaluation(plan: Plan, run_dir: Path, progress: bool = True) -> None:
        cfg = plan.cfg  # one run: the evaluation's plan with the models as its supporters
        seen.append(cfg)
        store = RunStore.create_or_resume(run_dir, "emoharbor", cfg.resolved(), cfg.config_hash())
        for sup in cfg.roles.supporter:
            for i, pid in enumerate(PROFILES):
                key = (pid, sup.name, "0")
                conv = Conversation(id="|".join(key), profile_id=pid, supporter=sup.name)
                store.put("conversation", key, conv.model_dump(mode="json"))
                for rec in ratings(sup.name, i):
                    store.put("assessment", (*key, rec["judge"]),
                              {"status": "ok", **rec, "conversation": conv.id})  # fmt: skip
        store.close()

    # the evaluator replaced, not the package: the run store still finds the run kinds in it
    monkeypatch.setattr("emoharbor.evaluate.run_evaluation", run_evaluation)


def models(tmp_path: Path) -> list[tuple[str, Path]]:
    out = []
    for name in ("M0", "M1"):  # model folders as far as the check before the run reads them (nothing loads them)
        (tmp_path / name.lower()).mkdir()
        (tmp_path / name.lower() / "config.json").write_text("{}")
        out.append((name, tmp_path / name.lower()))
    return out


def test_the_models_are_the_supporters_of_one_run_compared_pair_by_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[RunConfig] = []
    fake_evaluator(monkeypatch, seen)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("profiles: ['builtin:*']\nroles:\n  supporter: {model: scripted, system_prompt: 'Be kind.'}\n")
    (m0, f0), (m1, f1) = models(tmp_path)
    table = evaluate.evaluate_models(cfg, [(m0, f0), (m1, f1)], tmp_path / "eval", log=lambda _: None)
    [one] = seen
    assert [s.model for s in one.roles.supporter] == [f"hf:{f0.resolve()}", f"hf:{f1.resolve()}"]
    assert {s.system_prompt for s in one.roles.supporter} == {"Be kind."}  # the rest of the supporter is kept
    means = evaluate.dimension_means(tmp_path / "eval")
    assert means["M0"]["user"]["warmth"] == pytest.approx({"mean": 2.875, "scored": 8.0, "unscored": 0.0})
    assert means["M0"]["user"]["memory"]["unscored"] == pytest.approx(1.0)
    assert means["M0"]["user"]["memory"]["scored"] == pytest.approx(7.0)
    assert "third_party:j" not in means["M0"] and means["M1"]["third_party:j"]["warmth"]["mean"] == pytest.approx(1.0)
    # the paired difference: +1 warmth on every profile (an interval of [+1, +1], P(> 0) = 1); memory +1 on
    # average over the 7 profiles both scored
    assert "judge: user" in table and "judge: third_party:j" in table
    user = table[table.index("judge: user") :]
    assert "## M1 minus M0 (paired: the same profiles and repeats)" in user
    assert "| warmth | 8 | 1.00 [1.00, 1.00] | 1.00 |" in user and "| memory | 7 | 1.14 [" in user
    from emoharbor.assess.leaderboard import RunResults, leaderboard

    store = RunStore.open_existing(tmp_path / "eval")
    board = leaderboard(RunResults.read(store), "user", seed=0)
    store.close()
    d = board["differences"]["M1"]
    assert board["baseline"] == "M0" and d["warmth"]["mean"] == pytest.approx(1.0)
    assert d["warmth"]["lo"] == pytest.approx(1.0) and d["warmth"]["p_above_0"] == pytest.approx(1.0)
    assert d["memory"]["n"] == 7 and d["memory"]["mean"] == pytest.approx(8 / 7)


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
    assert ev["reference"] == "M0" and ev["run"] == str(tmp_path / "eval")
    assert ev["means"]["user"]["warmth"]["delta"] == pytest.approx(1.0)
    assert ev["means"]["third_party:j"]["warmth"]["delta"] is None  # M0 had no such judge
    readme = (tmp_path / "m1" / "README.md").read_text()
    assert "| user | warmth | 3.88 | +1.00 | 8 |" in readme and card["base_model"] == str(base)
    assert json.loads((tmp_path / "m0" / "evolve_model.json").read_text())["evaluation"]["means"]["user"]["warmth"][
        "delta"] is None  # fmt: skip


def test_eval_serves_the_models_with_the_engine_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--engine local: every model a local: spec (llama.cpp); a folder it cannot serve, or another engine, is
    refused in one line before the run folder is made."""
    pytest.importorskip("xllamacpp")
    seen: list[RunConfig] = []
    fake_evaluator(monkeypatch, seen)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("profiles: ['builtin:*']\nroles:\n  supporter: {model: scripted, max_tokens: 80}\n")
    evaluate.evaluate_models(cfg, [("base", "smollm2"), ("again", "smollm2")], tmp_path / "eval",
                             log=lambda _: None, engine="local")  # fmt: skip
    [one] = seen
    assert [(s.name, s.model, s.max_tokens) for s in one.roles.supporter] == [
        ("base", "local:smollm2", 80), ("again", "local:smollm2", 80)]  # fmt: skip
    (tmp_path / "m1").mkdir()
    with pytest.raises(ConfigError, match=r"m1: no adapter_config.json: local:FOLDER takes a trained model's folder"):
        evaluate.evaluate_models(cfg, [("M1", tmp_path / "m1")], tmp_path / "eval2", log=lambda _: None,
                                 engine="local")  # fmt: skip
    with pytest.raises(ConfigError, match=r"engine 'vllm': give one of hf, local"):
        evaluate.evaluate_models(cfg, [("M1", tmp_path / "m1")], tmp_path / "eval2", log=lambda _: None,
                                 engine="vllm")  # fmt: skip
    assert not (tmp_path / "eval2").exists()


def test_eval_says_clearly_when_the_evaluator_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "emoharbor.evaluate", None)  # makes the import fail
    with pytest.raises(EmoharborError, match=r"evaluator .* is not installed"):
        evaluate.evaluate_models(tmp_path / "x.yaml", [("M0", tmp_path)], tmp_path / "o", log=lambda _: None)


def test_eval_refuses_a_run_on_a_profile_a_model_was_trained_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:  # fmt: skip
    """A model whose card says it trained on a profile (refine's contexts drawn from profiles) is not evaluated on
    it: one line naming the profile and the model's folder, before the run starts."""
    from emoharbor.errors import ConfigError

    seen: list[RunConfig] = []
    fake_evaluator(monkeypatch, seen)
    (m0, f0), (m1, f1) = models(tmp_path)
    (f1 / "evolve_model.json").write_text(json.dumps({"base_model": "smollm2", "stage": "dpo",
                                                      "trained_profiles": ["p002-aiko-burnout"]}))  # fmt: skip
    cfg = tmp_path / "run.yaml"
    cfg.write_text("profiles: ['builtin:p00*']\nroles:\n  supporter: {model: scripted}\n")
    with pytest.raises(ConfigError, match=f"profile p002-aiko-burnout is one {f1} was trained on"):
        evaluate.evaluate_models(cfg, [(m0, f0), (m1, f1)], tmp_path / "eval", log=lambda _: None)
    assert seen == [] and not (tmp_path / "eval").exists()
    cfg.write_text("profiles: ['builtin:p01*']\nroles:\n  supporter: {model: scripted}\n")  # profiles it did not see
    evaluate.evaluate_models(cfg, [(m0, f0), (m1, f1)], tmp_path / "eval", log=lambda _: None)
    assert len(seen) == 1
