"""A trained model's folder served by llama.cpp (``local:FOLDER``): the adapter written as a GGUF LoRA file, applied
by the real server with the same effect as transformers' PEFT model on the same weights, and what cannot be served
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emoharbor.errors import ConfigError
from emoharbor.models.local import resolve_gguf
from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec

PROMPTS = ["Count from 1 to 10.", "I feel so alone since my dog died.", "What is the capital of France?"]


def random_adapter(folder: Path) -> Any:
    """A LoRA on SmolLM2 (llama: its q and k are permuted in the GGUF) whose A and B are both random, so it moves
    the model's answers; saved as emoharbor evolve saves a model. Returns the PEFT model."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from emoharbor.models.hf import load_hf, resolve_hf

    torch.manual_seed(0)
    model, tokenizer = load_hf(resolve_hf("smollm2"), device="cpu", dtype="float32")
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                             init_lora_weights=False)  # fmt: skip
    peft_model = peft.get_peft_model(model, config)
    peft_model.save_pretrained(folder)
    (folder / "evolve_model.json").write_text(json.dumps({"base_model": "smollm2"}))
    return peft_model, tokenizer


def first_token(model: Any, tokenizer: Any, prompt: str) -> dict[str, float]:
    """transformers' log-probability of every token as the answer's first."""
    import torch

    ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                        return_tensors="pt", return_dict=True)["input_ids"]  # fmt: skip
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, -1], -1)
    top = torch.topk(logprobs, 3)
    return {tokenizer.decode([int(i)]): float(v) for v, i in zip(top.values, top.indices, strict=True)}


@pytest.mark.local_model
@pytest.mark.slow  # SmolLM2 in transformers, and two servers
async def test_the_server_applies_the_adapter_as_transformers_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "m1"
    peft_model, tokenizer = random_adapter(folder)
    expected = [first_token(peft_model, tokenizer, p) for p in PROMPTS]
    with peft_model.disable_adapter():
        plain = [first_token(peft_model, tokenizer, p) for p in PROMPTS]
    served = resolve_gguf(str(folder))
    assert served.lora is not None and served.lora.read_bytes()[:4] == b"GGUF"
    assert served.identity.startswith("local:smollm2+lora:") and served.path == resolve_gguf("smollm2").path
    got: dict[str, list[dict[str, float]]] = {}
    async with ModelPool(cache_path=None) as pool:
        for name in (f"local:{folder}", "local:smollm2"):
            model = await pool.get(ModelSpec(model=name, max_tokens=1, temperature=0.0), "supporter")
            results = [await model.chat([{"role": "user", "content": p}], top_logprobs=3) for p in PROMPTS]
            got[name] = [dict(r.logprobs[0].top) for r in results if r.logprobs]
        assert len(pool._servers) == 2  # the adapter's server is its own
    adapted, base = got[f"local:{folder}"], got["local:smollm2"]
    assert len(adapted) == len(base) == len(PROMPTS)
    moved = 0
    for want, have, before, have_before in zip(expected, adapted, plain, base, strict=True):
        token = max(want, key=want.__getitem__)  # transformers' first choice with the adapter
        assert token in have, (want, have)
        assert have[token] == pytest.approx(want[token], abs=0.4)  # llama.cpp's kernels are quantized
        if token in before and token in have_before:
            moved += abs(want[token] - before[token]) > 1.0 and abs(have[token] - have_before[token]) > 1.0
    assert moved >= 1  # the adapter changed an answer by more than the engines differ, in both engines


def test_what_llama_cpp_cannot_serve_is_refused_by_name(tmp_path: Path) -> None:
    not_trained = tmp_path / "plain"
    not_trained.mkdir()
    with pytest.raises(ConfigError, match=r"no adapter_config.json: local:FOLDER takes a trained model's folder"):
        resolve_gguf(str(not_trained))
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}))
    with pytest.raises(
        ConfigError, match=r"'base_model_name_or_path' is 'Qwen/Qwen2.5-0.5B-Instruct', not a GGUF.*hf:"
    ):
        resolve_gguf(str(hub))
    dora = tmp_path / "dora"
    dora.mkdir()
    (dora / "adapter_config.json").write_text(json.dumps({"lora_alpha": 8, "use_dora": True}))
    (dora / "adapter_model.safetensors").write_bytes(b"")
    (dora / "evolve_model.json").write_text(json.dumps({"base_model": "smollm2"}))
    with pytest.raises(ConfigError, match=r"field 'use_dora' is set: llama.cpp applies plain LoRA only"):
        resolve_gguf(str(dora))
