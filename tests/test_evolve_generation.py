"""Refine generation at engine speed: a served generator (vLLM/SGLang's OpenAI API) with each round's LoRA
adapter loaded at run time, through the fake server; and the hf backend decoding concurrent calls as batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from emoharbor.evolve.config import EvolveConfig
from emoharbor.evolve.rounds import adapter_name, refine_with_model_dir
from emoharbor.testing.fake_server import FakeOpenAIServer
from report_helpers import invented_record, write_jsonl


def adapter_folder(folder: Path, weights: bytes = b"weights") -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"base_model_name_or_path": "base", "peft_type": "LORA"}')
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def test_each_round_loads_its_adapter_into_the_server_and_refines_with_it(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "e.jsonl", [invented_record(e, supporter_turns=4) for e in (1, 2, 3, 4, 5)])
    m0 = adapter_folder(tmp_path / "m0")
    with FakeOpenAIServer(latency_s=0.05) as srv:
        gen = {"model": "base", "base_url": srv.base_url, "max_tokens": 32}
        cfg = EvolveConfig.model_validate({"refine": {"data": [str(data)], "contexts": 4, "generator": gen,
                                                      "concurrency": 4, "judge_check": False}})  # fmt: skip
        logs: list[str] = []
        summary = refine_with_model_dir(cfg, m0, tmp_path / "round1" / "refine", 1, log=logs.append, progress=False)
        name = adapter_name(m0, 1)
        assert srv.adapters == {name: str(m0.resolve())}
        chats = [b for b in srv.bodies if "messages" in b]
        assert chats and all(b["model"] == name for b in chats)  # every call went to M0's adapter
        assert summary["contexts"] == 4 and srv.max_in_flight > 1  # the contexts were refined concurrently
        assert any(f"loaded as {name}" in line for line in logs)
        # another adapter (the next round's M1) gets another name: never mistaken for M0, nor its cache
        m1 = adapter_folder(tmp_path / "m1", b"other weights")
        assert adapter_name(m1, 2) != name and adapter_name(m1, 2).startswith("emoharbor-m1-")


def test_a_server_without_runtime_lora_loading_is_one_clear_error(tmp_path: Path) -> None:
    from emoharbor.errors import EmoharborError
    from emoharbor.models.adapters import load_lora_adapter
    from emoharbor.models.spec import ModelSpec

    m0 = adapter_folder(tmp_path / "m0")
    spec = ModelSpec.model_validate({"model": "base", "base_url": "http://127.0.0.1:9/v1", "timeout_s": 2})
    with pytest.raises(EmoharborError, match="cannot load LoRA adapter"):
        asyncio.run(load_lora_adapter(spec, "x", m0))


def test_the_hf_backend_decodes_concurrent_calls_in_batches(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from emoharbor.models.hf import HFChatModel, load_hf, resolve_hf
    from evolve_helpers import tiny_model_dir

    model, tok = load_hf(resolve_hf(str(tiny_model_dir(tmp_path / "m"))), device="cpu")
    calls: list[int] = []
    generate = model.generate

    def counted(**kw: Any) -> Any:
        calls.append(int(kw["input_ids"].shape[0]))
        return generate(**kw)

    model.generate = counted  # type: ignore[method-assign]

    async def ask(batch_size: int) -> list[Any]:
        chat = HFChatModel.from_loaded(model, tok, name="t", temperature=0.0, max_tokens=6, batch_size=batch_size)
        asks = [[{"role": "user", "content": f"I cannot sleep, night {i}."}] for i in range(8)]
        return list(await asyncio.gather(*(chat.chat(m, max_tokens=4 if i == 0 else 6) for i, m in enumerate(asks))))

    one = asyncio.run(ask(1))
    assert calls == [1] * 8
    calls.clear()
    batched = asyncio.run(ask(4))
    assert calls == [4, 4]  # two generate calls of four conversations each
    assert batched[0].usage.completion_tokens <= 4 and all(r.usage.completion_tokens <= 6 for r in batched)
    assert [r.text for r in batched][1:] == [r.text for r in one][1:]  # greedy: the same replies as one by one
