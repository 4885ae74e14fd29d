"""The HEART run config: validation errors a user can act on, names, hashing, the example file."""

from __future__ import annotations

from pathlib import Path

import pytest

from emoharbor.errors import ConfigError
from emoharbor.heart.config import HeartConfig, load_heart_config, parse_heart_config
from emoharbor.heart.stages.judging import judge_schema, neutral_ids

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "heart.yaml"


def cfg(**extra: object) -> dict[str, object]:
    return {"histories": [{"path": "h.json"}], "candidates": ["local:qwen1.5b"], **extra}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (cfg(candidates=[{"model": "scripted", "name": "human"}]), "'human' is the name of the human candidate"),
        (cfg(candidates=[{"model": "scripted", "name": "x"}, {"model": "scripted", "name": "x"}]), "repeated: ['x']"),
        (cfg(histories=[{"path": "a", "first": 3, "sample": 2}]), "give 'first' or 'sample', not both"),
        (cfg(histories=[{"path": "a"}, {"path": "b"}]), "distinct names"),
        (cfg(candidates=[], include_human=True), "nothing to compare"),
        (cfg(dimensions=["warmth"]), "unknown dimensions"),
        (cfg(judges=[{"model": "gpt-x"}]), "needs base_url"),
        (cfg(bogus=1), "bogus"),
    ],
)
def test_config_errors(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_heart_config(raw, "c.yaml")
    assert message in str(e.value) and str(e.value).startswith("c.yaml: field")


def test_names_may_hold_any_character() -> None:
    # a judge's or a source's name is one part of its records' keys (a JSON array), never joined into a string
    # that is split again (a candidate is a SupporterSpec, whose name an EmoHarbor run joins into an id)
    raw = cfg(histories=[{"path": "h.json", "name": "a|b"}], judges=[{"model": "scripted", "name": "c|d"}])
    c = parse_heart_config(raw, "c.yaml")
    assert [h.name for h in c.histories] == ["a|b"] and [j.name for j in c.judges] == ["c|d"]


def test_names_defaults_and_hash() -> None:
    c = HeartConfig.model_validate(cfg(candidates=["local:qwen1.5b", "local:smollm2"]))
    assert c.competitors() == ["human", "local:qwen1.5b#1", "local:smollm2#2"]
    assert c.judges[0].name == "local:qwen1.5b" and c.labeller_spec() is c.judges[0]
    assert c.histories[0].name == "regular"
    other = HeartConfig.model_validate(cfg(candidates=["local:qwen1.5b", "local:smollm2"], seed=1))
    assert c.config_hash() != other.config_hash() and len(c.config_hash()) == 16


def test_example_config_loads() -> None:
    c, base = load_heart_config(EXAMPLE)
    assert base == EXAMPLE.parent
    assert c.competitors() == ["human", "qwen1.5b", "qwen1.5b-plain"]
    assert [h.subset for h in c.histories] == ["regular", "adversarial"]


def test_judge_schema_uses_enums_for_ids_and_strength() -> None:
    ids = neutral_ids("regular:1", "human", "qwen")
    assert ids[0] != ids[1] and ids == neutral_ids("regular:1", "human", "qwen")
    schema = judge_schema(["attunement"], ids)
    assert schema["required"] == ["attunement", "overall"]
    verdict = schema["properties"]["overall"]["properties"]
    assert verdict["winner"]["enum"] == list(ids) and verdict["strength"]["enum"] == [1, 2, 3, 4, 5]


def test_candidate_system_prompts_and_reply_cleaning(tmp_path: Path) -> None:
    from emoharbor.config import SupporterSpec
    from emoharbor.heart.stages.candidates import clean_reply, system_prompt

    (tmp_path / "p.txt").write_text("Be brief.\n", encoding="utf-8")
    text, version = system_prompt(SupporterSpec(model="scripted", name="a", system_prompt="@p.txt"), tmp_path)
    assert text == "Be brief." and version.startswith("custom@")
    default, v2 = system_prompt(SupporterSpec(model="scripted", name="b"), tmp_path)
    assert "supporter" in default and v2.startswith("heart_candidate_system@")
    with pytest.raises(ConfigError, match="not found"):
        system_prompt(SupporterSpec(model="scripted", name="c", system_prompt="@missing.txt"), tmp_path)
    assert clean_reply('**Supporter:** "I hear you."') == (
        "I hear you.",
        [("candidate_label_stripped", ""), ("candidate_quotes_stripped", "")],
    )
    assert clean_reply("  \n ") == ("", [])


def test_candidate_system_prompts_builtin_file_and_text(tmp_path: Path) -> None:
    from emoharbor.config import SupporterSpec
    from emoharbor.heart.stages.candidates import system_prompt

    def prompt(sp: str | None) -> tuple[str, str]:
        return system_prompt(SupporterSpec(name="c", model="scripted", system_prompt=sp), tmp_path)

    assert prompt(None) == prompt("builtin:heart") and prompt(None)[1].startswith("heart_candidate_system@")
    assert prompt("builtin:personal")[1].startswith("supporter_personal@")
    (tmp_path / "p.txt").write_text("Be brief.\n", encoding="utf-8")
    assert prompt("@p.txt")[0] == "Be brief." and prompt("@p.txt")[1].startswith("custom@")
    text, version = prompt("Be kind.")
    assert text == "Be kind." and version.startswith("custom@") and version != prompt("@p.txt")[1]
    with pytest.raises(ConfigError, match=r"candidate c: no built-in supporter prompt 'nope'.*builtin:heart"):
        prompt("builtin:nope")
