"""The simulated user's voice from another model (``user_agent.voice_model``): what it is trained on (ESConv
seekers' messages in the seeker's own chat, ``sft.role: user``), a real SFT step on the tiny model, and the calls
it takes (the message calls only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emoharbor.data.esconv import load_esconv
from emoharbor.evolve.voice_data import dialog_messages, seeker_examples
from emoharbor.models.base import ChatResult, Message
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.simulate.agents import user_settings
from emoharbor.simulate.voice_model import VoiceRouted, user_chat_model
from evolve_helpers import esconv_file, tiny_model_dir


def test_a_seekers_message_is_an_example_in_its_own_chat() -> None:
    d = next(iter(load_esconv(esconv_file())))
    turns = d.merged_turns()
    examples = dialog_messages(d)
    answering = [t for i, t in enumerate(turns) if t.speaker == "seeker" and i and turns[i - 1].speaker == "supporter"]
    assert [e.reply for e in examples] == [t.text for t in answering] and examples
    first = examples[0].messages
    assert first[0]["role"] == "system" and d.situation.strip()[:30] in first[0]["content"]
    assert first[-1]["role"] == "user" and all(m["role"] in ("system", "user", "assistant") for m in first)
    # the seeker's own earlier messages are its turns (assistant), the supporter's the other side's (user)
    last = examples[-1]
    said = [m["content"] for m in last.messages if m["role"] == "assistant"]
    assert said and all(s in [t.text for t in turns if t.speaker == "seeker"] for s in said)


class Recorder:
    def __init__(self, name: str) -> None:
        self.name, self.versions = name, []  # type: ignore[var-annotated]

    async def chat(self, messages: list[Message], **kw: Any) -> ChatResult:
        self.versions.append(kw.get("prompt_version", ""))
        return ChatResult(text=self.name, finish_reason="stop")

    async def aclose(self) -> None:
        return None


async def test_only_the_message_calls_go_to_the_voice_model() -> None:
    main, voice = Recorder("main"), Recorder("voice")
    routed = VoiceRouted(main, voice)
    for v in ("user_appraise@1", "user_voice_note@2", "user_feel@3", "user_voice_open@4", "user_decide@5"):
        await routed.chat([], prompt_version=v)
    assert voice.versions == ["user_voice_note@2", "user_voice_open@4"]
    assert main.versions == ["user_appraise@1", "user_feel@3", "user_decide@5"] and routed.name == "main"


async def test_the_user_is_given_its_voice_model_only_when_one_is_set(tmp_path: Path) -> None:
    spec = ModelSpec(model="scripted", replies=["hi"])
    async with ModelPool(cache_path=None) as pool:
        plain = await user_chat_model(pool, spec, user_settings("chain"))
        routed = await user_chat_model(pool, spec, user_settings({"agent": "chain", "voice_model": "scripted"}))
        assert plain is not None and not isinstance(plain, VoiceRouted) and isinstance(routed, VoiceRouted)
        assert await user_chat_model(pool, spec, user_settings("rules")) is None  # it calls no model


def test_sft_of_the_users_voice_takes_real_steps(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from emoharbor.evolve.config import EvolveConfig
    from emoharbor.evolve.sft import run_sft
    from emoharbor.models.hf import read_model_card

    cfg = EvolveConfig.model_validate({
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "lora": {"r": 4, "alpha": 8},
        "sft": {"data": [str(esconv_file())], "role": "user", "max_examples": 6, "max_length": 2048,
                "train_args": {"max_steps": 2, "per_device_train_batch_size": 2, "logging_steps": 1}},
    })  # fmt: skip
    summary = run_sft(cfg, tmp_path / "voice", log=lambda s: None)
    card = read_model_card(tmp_path / "voice")
    assert card["role"] == "user" and summary["train"]["steps"] == 2 and summary["examples"]["encoded"] == 6
    readme = (tmp_path / "voice" / "README.md").read_text(encoding="utf-8")
    assert "the seeker voice" in readme and "real seekers' messages" in readme and "Shown:" not in readme
    all_examples, held = seeker_examples([str(esconv_file())])
    assert summary["examples"]["esconv"] == len(all_examples) and held == 0
