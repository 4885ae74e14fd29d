"""JSON output from a local Hugging Face model, for schemas that are flat objects of string fields:
the braces, keys and quotes are written for the model, which writes only each value, until it closes
the quote. The reply is then always a JSON object with the schema's keys, as a grammar-constrained
server would give; whether the values are any good is still for the caller to judge.

One decoding pass with the key/value cache: the written parts are fed to the model as if it had
produced them, so the cost is that of one generation of the values.
"""

from __future__ import annotations

import json
from typing import Any


def flat_string_keys(schema: dict[str, Any] | None) -> list[str] | None:
    """The keys to fill, when ``schema`` is an object whose required fields are all plain strings."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    props = schema.get("properties") or {}
    keys = list(schema.get("required") or props)
    plain = all(isinstance(props.get(k), dict) and props[k].get("type") == "string" and "enum" not in props[k]
                for k in keys)  # fmt: skip
    return keys if keys and plain else None


def _pick(logits: Any, temperature: float, top_p: float | None, gen: Any) -> int:
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p is not None and top_p < 1:
        sorted_p, order = torch.sort(probs, descending=True)
        drop = sorted_p.cumsum(-1) - sorted_p > top_p
        sorted_p[drop] = 0
        probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
    return int(torch.multinomial(probs / probs.sum(), 1, generator=gen))


def fill_json(
    model: Any, tokenizer: Any, prompt_ids: list[int], keys: list[str], *, max_tokens: int, temperature: float,
    top_p: float | None, stops: set[int], seed: int,
) -> tuple[str, int, bool]:  # fmt: skip
    """(the JSON text, tokens generated, whether a value was cut by its token budget)."""
    import torch

    per_field = max(4, max_tokens // len(keys))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    cache: Any = None

    def feed(ids: list[int]) -> Any:
        nonlocal cache
        out = model(input_ids=torch.tensor([ids], device=model.device), cache=cache, use_cache=True)
        cache = out.cache
        return out.logits[0, -1].to("cpu")

    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    text, pending, generated, cut = "", list(prompt_ids), 0, False
    with torch.no_grad():
        for i, key in enumerate(keys):
            head = ("{" if i == 0 else '", ') + json.dumps(key) + ': "'
            text += head
            logits = feed(pending + ids(head))
            pending, value = [], ""
            value_ids: list[int] = []
            for step in range(per_field + 1):
                if step == per_field:
                    cut = True
                    break
                tok = _pick(logits, temperature, top_p, gen)
                generated += 1
                if tok in stops:
                    break
                candidate = tokenizer.decode([*value_ids, tok])
                end = min((p for p in (candidate.find('"'), candidate.find("\n")) if p >= 0), default=-1)
                if end >= 0:  # the model closed the value: keep what came before the quote
                    pending = ids(candidate[len(value) : end]) if end > len(value) else []
                    value = candidate[:end]
                    break
                value_ids.append(tok)
                value = candidate
                logits = feed([tok])
            text += json.dumps(value.strip())[1:-1]
    return text + '"}', generated, cut
