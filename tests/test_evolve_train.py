"""End to end on the CPU with a tiny model built here: phase 1 (SFT, real optimiser steps on ESConv
examples), one phase-2 round (pairs built through the HF backend, DPO steps), and the trained model
served back through the model pool. The tiny model cannot write JSON, so the reflection step (only)
is answered by a scripted JSON; the plain and refined replies are the tiny model's own."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("peft")

from emoharbor.evolve.config import EvolveConfig
from emoharbor.evolve.pairs import read_pairs
from emoharbor.models.base import ChatResult, Message
from emoharbor.models.spec import ModelSpec
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
    train = {"logging_steps": 1, "per_device_train_batch_size": 2, "learning_rate": 1e-3}
    cfg = EvolveConfig.model_validate({
        "base_model": str(base), "device": "cpu", "rounds": 1, "system_prompt": "Be a kind listener.",
        "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
        "sft": {"data": [data], "max_examples": 12, "max_length": 256, "train_args": {"max_steps": 3, **train}},
        "refine": {"data": [data], "contexts": 3, "max_new_tokens": 10, "temperature": 1.0, "drop_truncated": False,
                   "min_words": 1, "min_chars": 1,  # the tiny model writes random text
                   "judge_check": False},  # its default judge is the embedded model: not run in these tests
        "dpo": {"max_length": 256, "train_args": {"max_steps": 2, "num_train_epochs": 2, **train}},
    })  # fmt: skip
    logs: list[str] = []

    # phase 1: M0
    summary = run_sft(cfg, tmp_path / "m0", log=logs.append)
    sft_losses = [e["loss"] for e in summary["train"]["logs"]]
    assert summary["train"]["steps"] == 3 and len(sft_losses) == 3
    assert all(math.isfinite(x) and x > 0 for x in sft_losses)
    train = summary["train"]
    assert train["engine"] == "trl" and train["world_size"] == 1 and train["resumed_from_step"] is None
    assert train["items"] == 3 * 2 and [e["step"] for e in train["logs"]] == [1, 2, 3]
    assert all(e["lr"] > 0 for e in train["logs"])
    assert not list((tmp_path / "m0").glob("checkpoint-*"))  # removed once the model is saved
    m0 = adapter_weights(tmp_path / "m0")
    lora_b = [v for k, v in m0.items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().sum()) > 0 for v in lora_b)  # B starts at zero: it was trained
    assert read_model_card(tmp_path / "m0")["base_model"] == str(base)
    readme = (tmp_path / "m0" / "README.md").read_text()  # emoharbor's card, not PEFT's template
    assert f"- Base model: `{base}`" in readme and "Training: trl, 3 steps" in readme and "PEFT" not in readme

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
    assert all({"reward_margin", "reward_accuracy", "reward_chosen", "reward_rejected"} <= e.keys()
               for e in summary["train"]["logs"])  # fmt: skip
    # Before the first step the policy is the reference, so the margin is 0 in exact arithmetic; in float32 each
    # sequence's log-probability is a sum over tens of tokens (|sum| ~ 100), which carries a rounding error of
    # about 100 * 6e-8 = 6e-6 that depends on the CPU's kernels and thread count (3.8e-7 was seen on another
    # machine). beta (0.1) scales the difference of four such sums: 1e-4 is well above that noise and far below
    # a trained step's margin.
    assert summary["train"]["logs"][0]["reward_margin"] == pytest.approx(0.0, abs=1e-4)
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


def test_a_killed_sft_resumes_from_its_last_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SFT in a subprocess, killed with SIGKILL once a checkpoint is there; the same command started again
    goes on from that checkpoint's step (not from 0) to the last step, and the model it saves loads."""
    import torch

    from emoharbor.cli import main
    from emoharbor.evolve.trainer import checkpoints
    from emoharbor.models.hf import load_hf, read_model_card, resolve_hf

    steps = 40
    sft = {"data": [str(esconv_file())], "max_examples": 16, "max_length": 192,
           "train_args": {"per_device_train_batch_size": 2, "max_steps": steps, "num_train_epochs": 10, "save_steps": 4,
                          "logging_steps": 1, "learning_rate": 1e-3}}  # fmt: skip
    cfg = {"base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "system_prompt": "Be kind.",
           "lora": {"r": 4, "alpha": 8}, "sft": sft}  # fmt: skip
    (tmp_path / "evolve.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "m0"
    cmd = [sys.executable, "-m", "emoharbor.cli", "evolve", "sft", "--config", "evolve.yaml", "--out", "m0"]
    env = {**os.environ, "TQDM_DISABLE": "1"}
    with (tmp_path / "first.log").open("w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 180
        # killed a few checkpoints in, once the older ones are rotated out (transformers writes a checkpoint's
        # trainer state, which makes it whole, before it removes the oldest)
        while not (found := checkpoints(out)) or found[-1][0] < 12 or len(found) > 2:
            assert proc.poll() is None, "the first run ended before it wrote a checkpoint"
            assert time.monotonic() < deadline, "no checkpoint in 180 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and not (out / "evolve_model.json").exists()
    whole = checkpoints(out)
    killed_at = whole[-1][0]
    assert 0 < killed_at < steps and killed_at % 4 == 0 and len(whole) <= 2  # every 4 steps, the last 2 kept

    # started again with other settings: refused, the checkpoints are kept
    with pytest.raises(SystemExit):
        main(["evolve", "sft", "--config", str(tmp_path / "evolve.yaml"), "--out", str(out), "--set",
              "sft.train_args.learning_rate=0.1"])  # fmt: skip
    assert "with other settings (sft.train_args.learning_rate)" in capsys.readouterr().err
    assert checkpoints(out)[-1][0] == killed_at

    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"sft: resuming from checkpoint-{killed_at} (step {killed_at})" in done.stderr
    train = read_model_card(out)["train"]
    assert train["resumed_from_step"] == killed_at and train["steps"] == steps
    assert train["items"] == (steps - killed_at) * 2  # only the steps after the checkpoint were trained again
    assert [int(e["step"]) for e in train["logs"]] == list(range(1, steps + 1))  # the log before the kill is kept
    assert not checkpoints(out) and not (out / "evolve_stage.json").exists()
    resumed = train["resumed_from_step"]
    print(f"resume figures: killed with checkpoint-{killed_at}, resumed from {resumed}, final {train['steps']}")
    model, tok = load_hf(resolve_hf(str(out)), device="cpu")
    ids = tok("I feel alone.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.isfinite(model(input_ids=ids).logits).all()


def test_report_to_tensorboard_writes_event_files(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from emoharbor.evolve.sft import run_sft

    cfg = EvolveConfig.model_validate({
        "base_model": str(tiny_model_dir(tmp_path / "tiny")), "device": "cpu", "system_prompt": "Be kind.",
        "report_to": "tensorboard", "lora": {"r": 4, "alpha": 8},
        "sft": {"data": [str(esconv_file())], "max_examples": 6, "max_length": 192,
                "train_args": {"max_steps": 2, "per_device_train_batch_size": 2, "logging_steps": 1}},
    })  # fmt: skip
    run_sft(cfg, tmp_path / "m0", log=lambda s: None)
    assert list((tmp_path / "m0" / "runs").rglob("events.out.tfevents.*"))


def test_trl_trains_on_emoharbors_encoding(tmp_path: Path) -> None:
    """The rows handed to SFTTrainer keep emoharbor's tokens: TRL's labels are the reply and its end-of-turn
    token, the prompt masked. TRL tokenizing the same conversation itself would also train on the newline
    the template writes after <|im_end|>, one token more (docs/evolve.md: why it is left out)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer
    from trl.data_utils import _tokenize, common_prefix_length

    from emoharbor.evolve.data import IGNORE, completion_row, encode
    from emoharbor.models.hf import load_hf, resolve_hf

    model, tok = load_hf(resolve_hf(str(tiny_model_dir(tmp_path / "tiny"))), device="cpu")
    msgs: list[Message] = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I feel low."}]
    e = encode(tok, msgs, "That sounds hard.", 512)
    assert e is not None
    args = SFTConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, completion_only_loss=True,
                     report_to=[], max_length=512)  # fmt: skip
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list([completion_row(e)]),
                         processing_class=tok)  # fmt: skip
    assert trainer.train_dataset[0]["labels"] == e.labels
    ours = [x for x in e.labels if x != IGNORE]
    assert tok.decode(ours) == "That sounds hard.<|im_end|>"
    prompt = _tokenize(tok, msgs, add_generation_prompt=True)["input_ids"]
    full = _tokenize(tok, [*msgs, {"role": "assistant", "content": "That sounds hard."}])["input_ids"]
    theirs = full[common_prefix_length(prompt, full) :]
    assert theirs == [*ours, *tok("\n", add_special_tokens=False)["input_ids"]]


def test_a_gguf_base_model_is_a_float_model_the_trainers_take() -> None:
    """transformers dequantizes a GGUF file but marks the model as GGUF-quantized, which the trainers refuse to
    train: the mark is dropped once the weights are floats (the docs' CPU run trains SmolLM2 from its GGUF)."""
    from emoharbor.models.hf import load_hf, resolve_hf

    model, _ = load_hf(resolve_hf("smollm2"), device="cpu", dtype="float32", trainable=True)
    assert model.hf_quantizer is None and not model.is_quantized and model.config.quantization_config is None
    assert next(model.parameters()).dtype.is_floating_point


def test_a_checkpoint_whose_trainer_state_was_cut_short_is_not_one_to_resume_from(tmp_path: Path) -> None:
    from emoharbor.evolve.trainer import checkpoints

    for step, state in ((2, '{"global_step": 2}'), (4, ""), (6, '{"global_st')):  # killed while writing 4 and 6
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state, encoding="utf-8")
    (tmp_path / "checkpoint-8").mkdir()  # killed before its state was begun
    assert checkpoints(tmp_path) == [(2, tmp_path / "checkpoint-2")]
