"""End to end on the CPU with a tiny model built here: phase 1 (SFT, real optimiser steps on ESConv
examples), one phase-2 round (pairs built through the HF backend, DPO steps), and the trained model
served back through the model pool. The tiny model cannot write JSON, so the reflection step (only)
is answered by a scripted JSON; the plain and refined replies are the tiny model's own."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from emoharbor.config import ModelSpec
from emoharbor.evolve.config import EvolveConfig
from emoharbor.evolve.pairs import read_pairs
from emoharbor.models.base import ChatResult, Message
from evolve_helpers import esconv_file, tiny_model_dir

REFLECTION = json.dumps({
    "personality": "reserved and careful", "emotional_state": "anxious, fairly strongly",
    "situation": "worried about a specific problem", "needs": "to feel heard first",
    "critique": "the first reply was generic",
})  # fmt: skip


class ReflectScripted:
    """The tiny HF model for replies; a fixed reflection for the JSON step it cannot do."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = "tiny+scripted-reflection"

    async def chat(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "",
        top_logprobs: int = 0,
    ) -> ChatResult:
        if json_schema is not None:
            return ChatResult(text=REFLECTION, finish_reason="stop")
        r: ChatResult = await self.inner.chat(messages, max_tokens=max_tokens, seed=seed)
        return r

    async def aclose(self) -> None:
        return None


def adapter_weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


def test_sft_then_one_round_of_refine_and_dpo(tmp_path: Path) -> None:
    from emoharbor.evolve.dpo import run_dpo
    from emoharbor.evolve.rounds import build_pairs, refine_contexts
    from emoharbor.evolve.sft import run_sft
    from emoharbor.models.hf import HFChatModel, load_hf, read_model_card, resolve_hf
    from emoharbor.models.pool import ModelPool

    base = tiny_model_dir(tmp_path / "tiny")
    data = str(esconv_file())
    train = {"max_length": 256, "log_every": 1, "batch_size": 2}
    cfg = EvolveConfig.model_validate({
        "base_model": str(base), "device": "cpu", "rounds": 1, "system_prompt": "Be a kind listener.",
        "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
        "sft": {"data": [data], "max_examples": 12, "max_steps": 3, "lr": 1e-3, **train},
        "refine": {"data": [data], "contexts": 3, "max_new_tokens": 10, "temperature": 1.0, "drop_truncated": False,
                   "min_words": 1, "min_chars": 1},  # the tiny model writes random text
        "dpo": {"max_steps": 2, "epochs": 2, "lr": 1e-3, **train},
    })  # fmt: skip
    logs: list[str] = []

    # phase 1: M0
    summary = run_sft(cfg, tmp_path / "m0", log=logs.append)
    sft_losses = [e["loss"] for e in summary["train"]["logs"]]
    assert summary["train"]["steps"] == 3 and len(sft_losses) == 3
    assert all(math.isfinite(x) and x > 0 for x in sft_losses)
    m0 = adapter_weights(tmp_path / "m0")
    lora_b = [v for k, v in m0.items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().sum()) > 0 for v in lora_b)  # B starts at zero: it was trained
    assert read_model_card(tmp_path / "m0")["base_model"] == str(base)

    # phase 2: pairs from M0's own replies
    model, tok = load_hf(resolve_hf(str(tmp_path / "m0")), device="cpu")
    chat = HFChatModel.from_loaded(model, tok, name="M0", temperature=1.0, max_tokens=10)
    contexts = refine_contexts(cfg, 1)
    assert len(contexts) == 3 and all(c.messages[-1]["role"] == "user" for c in contexts)
    folder = tmp_path / "round1" / "refine"
    got = asyncio.run(build_pairs(ReflectScripted(chat), contexts, cfg, folder, round_no=1, model_id="m0",
                                  progress=False))  # fmt: skip
    assert got["contexts"] == 3 and got["kept"] + sum(got["dropped"].values()) == 3
    pairs = read_pairs(tmp_path / "round1" / "pairs.jsonl")
    assert len(pairs) == got["kept"] >= 1
    assert pairs[0].provenance["reflection"]["needs"] == "to feel heard first"
    assert pairs[0].prompt == next(c.messages for c in contexts if c.id == pairs[0].provenance["context"])

    # DPO: M1 from M0, the reference being M0 itself
    summary = run_dpo(cfg, tmp_path / "m0", [tmp_path / "round1" / "pairs.jsonl"], tmp_path / "m1", log=logs.append)
    dpo_losses = [e["loss"] for e in summary["train"]["logs"]]
    assert summary["round"] == 1 and len(dpo_losses) == 2 and all(math.isfinite(x) for x in dpo_losses)
    assert dpo_losses[0] == pytest.approx(math.log(2), abs=1e-4)  # policy == reference before the first step
    m1 = adapter_weights(tmp_path / "m1")
    assert m1.keys() == m0.keys() and any(not bool((m1[k] == m0[k]).all()) for k in m0)

    # M1 served through the same ChatModel interface as any model
    async def serve() -> ChatResult:
        async with ModelPool(cache_path=False) as pool:
            m = await pool.get(ModelSpec(model=f"hf:{tmp_path / 'm1'}", max_tokens=5, temperature=0), "supporter")
            r: ChatResult = await m.chat([{"role": "user", "content": "I feel anxious."}])
            return r

    r = asyncio.run(serve())
    assert r.usage.completion_tokens >= 1 and r.endpoint == "hf"


def test_hf_backend_fills_a_flat_json_schema(tmp_path: Path) -> None:
    from emoharbor.evolve.reflect import REFLECTION_SCHEMA
    from emoharbor.models.hf import HFChatModel, resolve_hf

    model = HFChatModel(resolve_hf(str(tiny_model_dir(tmp_path / "tiny"))), device="cpu", temperature=1.0)
    msgs: list[Message] = [{"role": "user", "content": "Describe me."}]
    r = asyncio.run(model.chat(msgs, json_schema=REFLECTION_SCHEMA, max_tokens=25, seed=3))
    data = json.loads(r.text)  # the braces, keys and quotes are written for the model: always valid JSON
    assert list(data) == list(REFLECTION_SCHEMA["required"]) and all(isinstance(v, str) for v in data.values())
    assert r.usage.completion_tokens <= 25 + len(data)
    free = asyncio.run(model.chat(msgs, max_tokens=6, seed=3))  # no schema: plain generation
    assert free.usage.completion_tokens <= 6
