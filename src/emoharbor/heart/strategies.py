"""Support strategies in candidate replies: sentence-split, one label per sentence by an LLM from a
fixed list (an enum in the schema), and each competitor's strategy profile. A reply whose labels do
not parse after the retries has its sentences counted as unlabelled, never guessed."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .. import userfiles
from ..errors import DataError
from ..models.base import ChatModel, ModelCallError
from ..models.structured import ask_json
from ..prompts import load_prompt
from .candidates import Events
from .histories import History

Strategies = dict[str, str]
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "etc", "e.g", "i.e", "approx"}
END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")


def parse_strategies(raw: object, where: str) -> Strategies:
    if not isinstance(raw, dict) or not raw:
        raise DataError(f"{where}: must map each strategy name to its definition")
    bad = [
        k for k, v in raw.items() if not isinstance(k, str) or not k.strip() or not isinstance(v, str) or not v.strip()
    ]
    if bad:
        raise DataError(f"{where}: entries {bad[:5]} need a non-empty name and a non-empty definition")
    return {k.strip(): " ".join(v.split()) for k, v in raw.items()}


@cache
def builtin_strategies() -> Strategies:
    text = resources.files(__package__).joinpath("strategies.yaml").read_text(encoding="utf-8")
    return parse_strategies(yaml.safe_load(text), "strategies.yaml")


def load_strategies(path: Path | None) -> Strategies:
    if path is None:
        return builtin_strategies()
    raw = userfiles.read(path, "strategy file", DataError)
    return parse_strategies(raw, str(path))


def split_sentences(text: str) -> list[str]:
    """Sentences of a chat reply: split after . ! ? (not after a few common abbreviations) and at line
    breaks; a piece without letters is joined to the one before."""
    out: list[str] = []
    for line in text.splitlines():
        pieces: list[str] = []
        start = 0
        for m in END.finditer(line):
            words = line[start : m.start()].split()
            if m.group() == "." and words and words[-1].lower() in ABBREVIATIONS:
                continue  # "Dr. Lee", "e.g. walking"
            pieces.append(line[start : m.end()])
            start = m.end()
        pieces.append(line[start:])
        for p in (p.strip() for p in pieces):
            if not p:
                continue
            if out and not re.search(r"[A-Za-z]", p):
                out[-1] = f"{out[-1]} {p}"
            else:
                out.append(p)
    return out


def label_schema(n: int, names: list[str]) -> dict[str, Any]:
    keys = [f"s{i + 1}" for i in range(n)]
    return {"type": "object", "properties": {k: {"type": "string", "enum": names} for k in keys}, "required": keys}


async def label_reply(
    model: ChatModel,
    history: History,
    candidate: dict[str, Any],
    strategies: Strategies,
    *,
    max_sentences: int,
    retries: int,
    seed: int,
) -> tuple[dict[str, Any], Events]:
    sentences = split_sentences(candidate["text"])
    asked = sentences[:max_sentences]
    rec: dict[str, Any] = {
        "history_id": history.id,
        "subset": history.subset,
        "competitor": candidate["competitor"],
        "sentences": sentences,
        "labels": [None] * len(sentences),
    }
    events: Events = [("sentences_over_cap", str(len(sentences) - len(asked)))] if len(asked) < len(sentences) else []
    if not asked:
        return {**rec, "status": "no_sentences"}, [("strategy_no_sentences", history.id)]
    prompt = load_prompt("heart_strategy")
    form = "{" + ", ".join(f'"s{i + 1}": "<strategy>"' for i in range(len(asked))) + "}"
    text = prompt.render(
        strategies="\n".join(f"- {k}: {v}" for k, v in strategies.items()),
        seeker_turn=history.last_seeker_text,
        sentences="\n".join(f"s{i + 1}: {s}" for i, s in enumerate(asked)),
        form=form,
    )
    names = list(strategies)
    try:
        got = await ask_json(
            model,
            [{"role": "user", "content": text}],
            label_schema(len(asked), names),
            retries=retries,
            seed=seed,
            prompt_version=prompt.version,
        )
    except ModelCallError as e:
        return {**rec, "status": "error", "error": str(e)[:500]}, [*events, ("strategy_error", str(e)[:200])]
    if got.attempts > 1:
        events.append(("strategy_retried", history.id))
    if got.data is None:
        events.append(("strategy_unlabelled", got.error[:160]))
        return {**rec, "status": "unlabelled", "error": got.error, "attempts": got.attempts}, events
    labels = [got.data[f"s{i + 1}"] for i in range(len(asked))] + [None] * (len(sentences) - len(asked))
    return {**rec, "status": "labelled", "labels": labels, "attempts": got.attempts}, events


def strategy_profiles(records: list[dict[str, Any]], competitors: list[str], names: list[str]) -> list[dict[str, Any]]:
    """Per competitor and subset ("all" too): replies, sentences, unlabelled sentences, and the share
    of labelled sentences that carry each strategy."""
    rows = []
    subsets = ["all", *sorted({r["subset"] for r in records})]
    for subset in subsets:
        for comp in competitors:
            rs = [r for r in records if r["competitor"] == comp and subset in ("all", r["subset"])]
            if not rs:
                continue
            labels = Counter(lab for r in rs for lab in r["labels"] if lab is not None)
            n_sent = sum(len(r["sentences"]) for r in rs)
            n_lab = sum(labels.values())
            row: dict[str, Any] = {
                "subset": subset,
                "competitor": comp,
                "replies": len(rs),
                "sentences": n_sent,
                "unlabelled": n_sent - n_lab,
            }
            for name in names:
                row[name] = round(labels[name] / n_lab, 4) if n_lab else None
            rows.append(row)
    return rows
