"""Shared scripted models and a tiny synthetic history file for the HEART tests (no real data copied)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emoharbor.heart.config import HeartConfig
from emoharbor.heart.plan import HeartPlan
from emoharbor.heart.stages import pipeline
from emoharbor.models.base import ChatModel, Message
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.spec import ModelSpec

SHOWN = re.compile(r"Message (\w):\n(.*?)(?=\n\nMessage \w:|\n\nAnswer with)", re.S)


def write_histories(folder: Path) -> tuple[Path, Path]:
    """Four regular histories (one with an empty human reply, one ending on the supporter) and two
    adversarial ones without speakers."""
    regular = [
        {"dialogue_history": ["Hi, how are you?", "Not great, I lost my job today."],
         "prev_speakers": ["supporter", "seeker"], "emotion_type": "sadness", "problem_type": "job crisis",
         "situation": "lost job", "vanilla_completion": "I'm sorry, that must be a shock. How are you holding up?"},
        {"dialogue_history": ["I can't sleep.", "What keeps you up?", "Exams next week."],
         "prev_speakers": ["seeker", "supporter", "seeker"], "emotion_type": "anxiety",
         "problem_type": "academic pressure", "situation": "", "vanilla_completion": "Exams can be stressful."},
        {"dialogue_history": ["Hello", "My dog died."], "prev_speakers": ["supporter", "seeker"],
         "emotion_type": "sadness", "problem_type": "loss", "situation": "", "vanilla_completion": "  "},
        {"dialogue_history": ["I'm fine.", "Good to hear."], "prev_speakers": ["seeker", "supporter"],
         "emotion_type": "", "problem_type": "", "situation": "", "vanilla_completion": "x"},
    ]  # fmt: skip
    adversarial = [
        {"dialogue_history": ["Hello, glad you reached out.", "Whatever. Nothing helps anyway."],
         "prev_speakers": None, "emotion_type": "anger", "problem_type": "breakup", "situation": None,
         "vanilla_completion": None},
        {"dialogue_history": ["Hi there.", "Don't give me cliches.", "I won't. What happened?", "Forget it."],
         "prev_speakers": None, "emotion_type": "sadness", "problem_type": "loss", "situation": None,
         "vanilla_completion": None},
    ]  # fmt: skip
    r, a = folder / "regular.json", folder / "adversarial.json"
    r.write_text(json.dumps(regular), encoding="utf-8")
    a.write_text(json.dumps(adversarial), encoding="utf-8")
    return r, a


def shown_replies(messages: list[Message]) -> dict[str, str]:
    """The neutral id -> reply text a judge was shown (from the first user message)."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    return {m.group(1): m.group(2).strip() for m in SHOWN.finditer(user)}


def verdict_json(
    schema: dict[str, Any], pick: Callable[[dict[str, str], list[str]], str], shown: dict[str, str]
) -> str:
    ids = schema["properties"]["overall"]["properties"]["winner"]["enum"]
    winner = pick(shown, ids)
    return json.dumps({k: {"rationale": "It validates the feeling and sounds natural.", "winner": winner, "strength": 4}
                       for k in schema["required"]})  # fmt: skip


def preferring(word: str) -> Callable[[list[Message], dict[str, Any] | None], str]:
    """A consistent judge: the reply containing ``word`` wins (else the one with the larger id)."""

    def pick(shown: dict[str, str], ids: list[str]) -> str:
        hits = [i for i in ids if word in shown.get(i, "")]
        return hits[0] if len(hits) == 1 else max(ids)

    def fn(messages: list[Message], schema: dict[str, Any] | None) -> str:
        assert schema is not None
        return verdict_json(schema, pick, shown_replies(messages))

    return fn


def first_shown_judge(messages: list[Message], schema: dict[str, Any] | None) -> str:
    """A judge that always picks the reply shown first: every pair flips."""
    assert schema is not None
    shown = shown_replies(messages)
    return verdict_json(schema, lambda s, ids: next(iter(s)), shown)


def models(table: dict[str, ChatModel]) -> Callable[[ModelSpec, str], Any]:
    async def get(spec: ModelSpec, role: str) -> ChatModel:
        return table[getattr(spec, "name", "") or spec.model]

    return get


def scripted(fn: Any, name: str = "scripted") -> ScriptedModel:
    return ScriptedModel(fn, name=name)


def plan_of(config: HeartConfig, base: Path) -> HeartPlan:
    """The plan of a new run of ``config`` (its files read from ``base``)."""
    return HeartPlan.of(config, base, "the config")


def make_config(folder: Path, judges: list[str] | None = None) -> HeartConfig:
    reg, adv = write_histories(folder)
    return HeartConfig.model_validate({
        "histories": [{"path": str(reg)}, {"path": str(adv), "subset": "adversarial"}],
        "candidates": [{"model": "scripted", "name": "kind"}, {"model": "scripted", "name": "blunt"}],
        "judges": [{"model": "scripted", "name": j} for j in (judges or ["fair"])],
        "labeller": "scripted", "bootstrap": 50,
    })  # fmt: skip


def kind_reply(messages: list[Message], schema: Any) -> str:
    return "Supporter: That sounds really hard, I'm here for you."


def blunt_reply(messages: list[Message], schema: Any) -> str:
    return "" if "Exams next week" in messages[-1]["content"] else '"Just move on."'


async def run_all(tmp_path: Path, judges: dict[str, Any]) -> tuple[Any, HeartConfig]:
    config = make_config(tmp_path, list(judges))
    table = {"kind": scripted(kind_reply), "blunt": scripted(blunt_reply), **judges}
    store = pipeline.open_run(tmp_path / "run", plan_of(config, tmp_path))
    await pipeline.generate(store, plan_of(config, tmp_path), models(table), progress=False)
    await pipeline.judge(store, plan_of(config, tmp_path), models(table), progress=False)
    return store, config
