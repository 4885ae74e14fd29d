"""Helpers for the self-evolution tests: a tiny causal LM and tokenizer built in the test (no download),
saved as an ordinary Hugging Face model folder, and the path to the shared ESConv data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ESCONV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "esconv"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# invented sentences, only to give the byte-level tokenizer some merges
CORPUS = [
    "I feel so anxious about my job and I cannot sleep at night.",
    "That sounds really hard. What has been on your mind the most?",
    "My friend stopped talking to me and I do not know why.",
    "It makes sense that you feel hurt. Would you like to talk about it?",
    "I am stressed about exams, my parents expect a lot from me.",
    "You are carrying a lot right now. What would help you most today?",
]


def esconv_file(name: str = "train.jsonl") -> Path:
    path = ESCONV / name
    if not path.is_file():
        pytest.skip(f"the shared ESConv data is not here ({path})")
    return path.resolve()


def tiny_tokenizer() -> Any:
    """A 300-token byte-level BPE tokenizer with a ChatML template, trained here in milliseconds."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    bpe.train_from_iterator(CORPUS * 4, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHATML
    return tok


def tiny_model_dir(folder: Path, *, seed: int = 0, hidden: int = 64, layers: int = 2) -> Path:
    """A 2-layer Llama (hidden size 64) with the tiny tokenizer, saved as a model folder (the bench
    also builds larger ones)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tiny_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=2048, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, bos_token_id=None)  # fmt: skip
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def grpo_killed_and_resumed(folder: Path, kill_at: int, steps: int) -> dict[str, Any]:
    """``evolve grpo`` of ``folder/evolve.yaml`` (``steps`` steps) into ``folder/policy``, SIGKILLed once a
    checkpoint of step ``kill_at`` or later is written, then run again: the second run resumes from the
    checkpoint it was killed at and ends with all ``steps``. The model card it wrote."""
    from emoharbor.evolve.trainer import checkpoints

    out = folder / "policy"
    cmd = [sys.executable, "-m", "emoharbor.cli", "evolve", "grpo", "--config", "evolve.yaml", "--out", "policy",
           "--no-eval"]  # fmt: skip
    env = {**os.environ, "TQDM_DISABLE": "1"}
    with (folder / "first.log").open("w") as err:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 240
        while not checkpoints(out) or checkpoints(out)[-1][0] < kill_at:
            assert proc.poll() is None, (folder / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint in 240 s"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = checkpoints(out)[-1][0]
    assert 0 < killed_at < steps
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"grpo: resuming from checkpoint-{killed_at}" in done.stderr
    card: dict[str, Any] = json.loads((out / "evolve_model.json").read_text())
    assert card["train"]["resumed_from_step"] == killed_at and card["train"]["steps"] == steps
    return card
