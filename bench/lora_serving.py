"""Benchmark: a trained model served two ways, ``hf:FOLDER`` (transformers, the adapter on the dequantized base) and
``local:FOLDER`` (llama.cpp's server, the adapter as a GGUF LoRA on the quantized base): how closely they agree and
how fast each writes a supporter's reply.

    python bench/lora_serving.py runs/evo/m1                 # 8 messages, replies of at most 80 tokens
    python bench/lora_serving.py runs/evo/m1 --replies 16 --max-tokens 80

Agreement: for each message, both engines' log-probabilities of the first token of the answer (transformers'
first choice), with the supporter's default system prompt; the mean absolute difference, and how often the two
first choices are the same. Speed: each engine writes a reply to every message at temperature 0, one call at a
time, after a first call that loads the model (timed apart); seconds a reply and tokens written a second. No call
cache. Run it alone on the machine: the two engines share its cores.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.simulate.supporter import supporter_prompt

MESSAGES = [  # a seeker's first message, written for this benchmark
    "I lost my job last week and I can't stop thinking I'm a failure.",
    "My sister stopped talking to me after an argument and I don't know how to fix it.",
    "I've been so anxious about my exams that I can't sleep.",
    "Since my dad died I feel like nobody understands what I'm going through.",
    "I moved to a new city for work and I haven't made a single friend in three months.",
    "My partner and I keep fighting about money and I'm exhausted.",
    "I think I'm burning out at work but I can't afford to take time off.",
    "My best friend is getting married and I feel left behind.",
]


def chat(message: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": supporter_prompt(None).text}, {"role": "user", "content": message}]


def first_token(folder: Path, messages: list[str]) -> list[dict[str, float]]:
    """transformers' log-probabilities of the answer's first token (its three most likely), with the adapter."""
    import torch

    from emoharbor.models.hf import load_hf, resolve_hf

    model, tokenizer = load_hf(resolve_hf(str(folder)), device="cpu", dtype="float32")
    out = []
    for m in messages:
        ids = tokenizer.apply_chat_template(chat(m), add_generation_prompt=True, return_tensors="pt",
                                            return_dict=True)["input_ids"]  # fmt: skip
        with torch.no_grad():
            logprobs = torch.log_softmax(model(ids).logits[0, -1], -1)
        top = torch.topk(logprobs, 3)
        out.append({tokenizer.decode([int(i)]): float(v) for v, i in zip(top.values, top.indices, strict=True)})
    return out


async def replies(pool: ModelPool, name: str, messages: list[str], max_tokens: int) -> dict[str, Any]:
    model = await pool.get(ModelSpec(model=name, max_tokens=max_tokens, temperature=0.0), "supporter")
    t0 = time.perf_counter()
    await model.chat(chat("Hello."), max_tokens=1)  # loads the model (transformers) or warms the server
    load_s = time.perf_counter() - t0
    seconds, tokens, firsts = [], 0, []
    for m in messages:
        t0 = time.perf_counter()
        r = await model.chat(chat(m), top_logprobs=3)
        seconds.append(time.perf_counter() - t0)
        tokens += r.usage.completion_tokens
        firsts.append(dict(r.logprobs[0].top) if r.logprobs else {})
    return {"load_s": load_s, "s_per_reply": statistics.mean(seconds), "tok_per_s": tokens / sum(seconds),
            "tokens": tokens, "firsts": firsts}  # fmt: skip


async def main_async(folder: Path, n: int, max_tokens: int) -> None:
    messages = [MESSAGES[i % len(MESSAGES)] for i in range(n)]
    t0 = time.perf_counter()
    expected = first_token(folder, messages[: len(MESSAGES)])
    print(f"transformers' first tokens: {time.perf_counter() - t0:.1f} s")
    async with ModelPool(cache_path=None) as pool:
        figures = {
            name: await replies(pool, name, messages, max_tokens) for name in (f"local:{folder}", f"hf:{folder}")
        }
    served = figures[f"local:{folder}"]["firsts"]
    diffs, same = [], 0
    for want, have in zip(expected, served, strict=False):
        token = max(want, key=want.__getitem__)
        same += bool(have) and max(have, key=have.__getitem__) == token
        if token in have:
            diffs.append(abs(have[token] - want[token]))
    print(f"agreement on {len(expected)} messages: the same first token {same}/{len(expected)}; "
          f"|log-prob difference| of transformers' first token, mean {statistics.mean(diffs):.3f} "
          f"(max {max(diffs):.3f}, {len(diffs)} in llama.cpp's top 3)")  # fmt: skip
    print(f"{'engine':<8} {'load s':>7} {'s/reply':>8} {'tokens/s':>9} {'tokens':>7}")
    for name, f in figures.items():
        print(f"{name.split(':')[0]:<8} {f['load_s']:>7.1f} {f['s_per_reply']:>8.2f} {f['tok_per_s']:>9.1f} "
              f"{f['tokens']:>7}")  # fmt: skip
    hf, local = figures[f"hf:{folder}"], figures[f"local:{folder}"]
    print(f"llama.cpp / transformers, seconds a reply: {local['s_per_reply'] / hf['s_per_reply']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a trained model's folder (emoharbor evolve's, on a GGUF base)")
    ap.add_argument("--replies", type=int, default=len(MESSAGES), help="replies each engine writes")
    ap.add_argument("--max-tokens", type=int, default=80)
    a = ap.parse_args()
    asyncio.run(main_async(a.folder, a.replies, a.max_tokens))


if __name__ == "__main__":
    main()
