"""Refine contexts drawn from the simulated users' profiles (``refine.profiles``, ``refine.profile_share``): the mix
of a round's contexts, their ids and texts (the rules user's opening), the person shown in the system prompt and to
the reflector, the round's summary and pairs, an ``evaluation_only`` profile refused, and the profiles a model trained
on kept out of its evaluation (its card's ``trained_profiles``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from emoharbor.errors import ConfigError
from emoharbor.evolve.card import TRAINED_PROFILES, refuse_trained_profiles, trained_profiles
from emoharbor.evolve.config import EvolveConfig, load_evolve_config
from emoharbor.evolve.pairs import read_pairs
from emoharbor.evolve.profile_contexts import profile_id
from emoharbor.evolve.reflect import load_principles, refine_context
from emoharbor.evolve.rounds import build_pairs, refine_contexts
from emoharbor.models.base import Message
from emoharbor.models.scripted import ScriptedModel
from emoharbor.profiles.loader import resolve_profiles
from emoharbor.simulate.rules_user import RulesSettings, RulesUser
from emoharbor.simulate.supporter import supporter_prompt
from emoharbor.store.record import INPUTS, PROMPTS
from emoharbor.store.run_store import RunStore
from evolve_helpers import esconv_file

SPEC = "builtin:p0?2-*"  # ten built-in profiles
PLAIN = "I'm sorry to hear that. Have you tried getting out more?"
REFINED = "Five months of last trains is a lot to carry. How are you holding up this week?"
REFLECTION = {"personality": "dutiful, self-effacing", "emotional_state": "numb, worn out",
              "situation": "long hours before a game launch", "needs": "permission to rest",
              "critique": "jumped to advice"}  # fmt: skip


def config(**refine: Any) -> EvolveConfig:
    sets = {"refine.data": [str(esconv_file())], "refine.contexts": 10, "refine.profiles": [SPEC],
            "refine.profile_share": 0.3} | {f"refine.{k}": v for k, v in refine.items()}  # fmt: skip
    return load_evolve_config(None, sets)


def rules_opening(profile_id: str) -> str:
    [p] = resolve_profiles([f"builtin:{profile_id}"])
    return asyncio.run(RulesUser(p, RulesSettings()).open(0)).text


def test_a_share_of_a_rounds_contexts_are_profiles_openings_as_the_rules_user_writes_them() -> None:
    contexts = refine_contexts(config(), 1)
    ids = {p.id for p in resolve_profiles([SPEC])}
    drawn = [c for c in contexts if c.source == "profile"]
    assert [c.source for c in contexts].count("esconv") == 7 and len(drawn) == 3  # round(10 x 0.3) of 10
    assert all(c.id.startswith("profile:") and profile_id(c.id) in ids for c in drawn)
    assert all(profile_id(c.id) is None for c in contexts if c.source == "esconv")
    system = supporter_prompt(None).text.strip()
    for c in drawn:  # a one-turn talk: the supporter's system prompt and the profile's opening
        assert c.messages == [{"role": "system", "content": system},
                              {"role": "user", "content": rules_opening(str(profile_id(c.id)))}]  # fmt: skip
        assert c.messages[1]["content"].startswith("Hi. I feel ") and not c.personal
    again, other = refine_contexts(config(), 1), refine_contexts(config(), 2)
    assert [c.id for c in again] == [c.id for c in contexts] and [c.messages for c in again] == [
        c.messages for c in contexts]  # fmt: skip
    assert {c.id for c in other if c.source == "profile"} != {c.id for c in drawn}  # a new sample each round


def test_with_personal_share_a_profile_context_shows_the_person_as_an_esconv_one_does() -> None:
    [c, *_] = [c for c in refine_contexts(config(personal_share=1), 1) if c.source == "profile"]
    [p] = resolve_profiles([f"builtin:{profile_id(c.id)}"])
    system = c.messages[0]["content"]
    assert c.personal and system.startswith(supporter_prompt(None).text.strip())
    assert f"What they feel: {p.emotional_state.emotion}. What it is about: {p.situation.problem_type}." in system
    assert c.messages[1]["content"].removeprefix(f"Hi. I feel {p.emotional_state.emotion}. ") in system  # in the "I"
    assert c.person == p.persona_card()  # for the reflector


def test_profiles_alone_need_no_esconv_data_and_give_what_there_is() -> None:
    cfg = load_evolve_config(None, {"refine.contexts": 64, "refine.profiles": [SPEC], "refine.profile_share": 1})
    contexts = refine_contexts(cfg, 1)
    assert len(contexts) == 10 and {c.source for c in contexts} == {"profile"}  # all ten, each once


def test_profile_settings_are_checked_and_their_paths_taken_from_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"profile_share > 0 needs refine\.profiles"):
        load_evolve_config(None, {"refine.profile_share": 0.5})
    with pytest.raises(ConfigError, match=r"refine\.profiles needs refine\.profile_share > 0"):
        load_evolve_config(None, {"refine.profiles": [SPEC]})
    (tmp_path / "evolve.yaml").write_text("refine: {profiles: [people.yaml, 'builtin:p00*'], profile_share: 0.5}\n")
    cfg = load_evolve_config(tmp_path / "evolve.yaml")
    assert cfg.refine.profiles == [str(tmp_path / "people.yaml"), "builtin:p00*"]


def held_out_profile(tmp_path: Path, **marks: Any) -> Path:
    [p] = resolve_profiles(["builtin:p002-*"])
    path = tmp_path / "people.yaml"
    path.write_text(yaml.safe_dump([p.model_dump(mode="json") | {"id": "kept-back"} | marks]))
    return path


def test_an_evaluation_only_profile_is_never_trained_on(tmp_path: Path) -> None:
    path = held_out_profile(tmp_path, evaluation_only=True)
    cfg = config(profiles=[SPEC, str(path)])
    with pytest.raises(ConfigError, match=r"^refine\.profiles: profile 'kept-back' is marked evaluation_only: true"):
        refine_contexts(cfg, 1)
    from emoharbor.evolve.rounds import run_all

    with pytest.raises(ConfigError, match="'kept-back' is marked evaluation_only"):  # before SFT, not after it
        run_all(cfg.model_copy(update={"rounds": 1}), tmp_path / "run", log=lambda _: None)
    assert not (tmp_path / "run").exists()
    # a profile a holdout file lists is left out, as an ESConv dialogue it lists is
    (tmp_path / "holdout.txt").write_text("kept-back\n")
    listed = config(profiles=[str(held_out_profile(tmp_path))], profile_share=1).model_copy(
        update={"holdout": [str(tmp_path / "holdout.txt")]})  # fmt: skip
    assert refine_contexts(listed, 1) == []


def script() -> ScriptedModel:
    def reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        if schema is not None:
            return json.dumps(REFLECTION)
        return REFINED if "Improve your reply" in messages[-1]["content"] else PLAIN

    return ScriptedModel(reply)


def test_the_reflector_is_shown_a_profile_contexts_persona_and_the_refined_reply_the_talk() -> None:
    contexts = refine_contexts(config(), 1)
    drawn = next(c for c in contexts if c.source == "profile")
    model = script()
    rec, _ = asyncio.run(refine_context(model, drawn, load_principles(None), config().refine, seed=1))
    reflect, refine = model.calls[1][0]["content"], model.calls[2][0]["content"]
    assert rec["status"] == "ok" and f"Seeker: {drawn.messages[1]['content']}" in reflect
    assert drawn.person in reflect and "Personality: openness" in reflect and "Who this person is" in reflect
    assert drawn.person not in refine and "- Personality: dutiful, self-effacing" in refine
    esconv = next(c for c in contexts if c.source == "esconv")
    model = script()
    asyncio.run(refine_context(model, esconv, load_principles(None), config().refine, seed=1))
    assert "Who this person is" not in model.calls[1][0]["content"]  # an ESConv context's reflector: the talk alone


def test_a_rounds_summary_counts_its_sources_and_its_pairs_name_their_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    cfg = config(judge_check=False)
    contexts = refine_contexts(cfg, 1)
    summary = asyncio.run(build_pairs(script(), contexts, cfg, tmp_path / "round1" / "refine", round_no=1,
                                      model_id="m0", progress=False))  # fmt: skip
    assert summary["sources"] == {"esconv": 7, "profile": 3} and summary["kept"] == 10
    pairs = read_pairs(tmp_path / "round1" / "pairs.jsonl")
    drawn = sorted(str(profile_id(c.id)) for c in contexts if c.source == "profile")
    assert sorted(p.provenance["profile_id"] for p in pairs if p.provenance["profile_id"]) == drawn
    store = RunStore.open_existing(tmp_path / "round1" / "refine")
    prompts, inputs = store.config()[PROMPTS], store.config()[INPUTS]
    store.close()
    assert {"evolve_reflect_person", "persona_card"} <= set(prompts)  # the prompts a profile context reads
    assert any("/bank/" in path for path in inputs)  # and the built-in bank's files, hashed
    # the model trained on these pairs records those profiles, and its parent's
    assert trained_profiles({TRAINED_PROFILES: ["p999-earlier"]}, pairs) == sorted([*drawn, "p999-earlier"])


def trained_model(tmp_path: Path, ids: list[str]) -> Path:
    folder = tmp_path / "m1"
    folder.mkdir()
    card = {"base_model": "smollm2", "stage": "dpo", TRAINED_PROFILES: ids}
    (folder / "evolve_model.json").write_text(json.dumps(card))
    return folder


def test_a_profile_a_model_trained_on_is_refused_for_its_evaluation(tmp_path: Path) -> None:
    m1 = trained_model(tmp_path, ["p002-aiko-burnout"])
    with pytest.raises(ConfigError, match=rf"^profile p002-aiko-burnout is one {m1} was trained on"):
        refuse_trained_profiles(["p001-x", "p002-aiko-burnout"], [tmp_path / "base", m1])
    refuse_trained_profiles(["p001-x", "p012-chloe-text-breakup"], [m1])  # others: nothing to refuse


def test_grpo_refuses_before_training_a_start_model_trained_on_its_evaluations_profiles(tmp_path: Path) -> None:
    from emoharbor.evolve.grpo import run_grpo

    m1 = trained_model(tmp_path, ["p002-aiko-burnout"])
    (tmp_path / "eval.yaml").write_text("profiles: ['builtin:p00*']\n")
    cfg = load_evolve_config(None, {"device": "cpu", "grpo.eval_config": str(tmp_path / "eval.yaml")})
    with pytest.raises(ConfigError, match=f"profile p002-aiko-burnout is one {m1} was trained on"):
        run_grpo(cfg, m1, tmp_path / "policy", log=lambda _: None)
    assert not (tmp_path / "policy").exists()
