"""Support strategies in candidate replies: sentence-split, one label per sentence by an LLM from a
fixed list (an enum in the schema), each competitor's strategy profile, and the signs of a labeller that
does not read the sentences (one label for all, labels in the order of the list). A reply whose labels
do not parse after the retries has its sentences counted as unlabelled, never guessed.

The strategy file maps each strategy name to its definition, either at its top level or under
``strategies:``; the second form may add ``esconv:`` (ESConv label -> strategy name, or null) and
``esconv_spellings:`` (another spelling -> an ESConv label), read by ``strategy_check``."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ... import userfiles
from ...errors import DataError
from ...models.base import ChatModel, ModelCallError
from ...models.structured import ask_json
from ...prompts import load_prompt
from ..histories import History
from .candidates import Events

Strategies = dict[str, str]
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "etc", "e.g", "i.e", "approx"}
END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")


SECTIONS = ("strategies", "esconv", "esconv_spellings")
# thresholds of the degenerate-labelling warnings (label_patterns)
ONE_LABEL_SHARE = 0.8
LIST_ORDER_SHARE = 0.5
MIN_FOR_WARNING = 5


@dataclass(frozen=True)
class StrategyFile:
    where: str  # the file, for messages
    strategies: Strategies
    esconv: dict[str, str | None]  # ESConv label -> strategy name, None where none fits; {}: no table
    esconv_spellings: dict[str, str]  # another spelling -> an ESConv label of ``esconv``


def parse_strategies(raw: object, where: str) -> Strategies:
    if not isinstance(raw, dict) or not raw:
        raise DataError(f"{where}: must map each strategy name to its definition")
    bad = [
        k for k, v in raw.items() if not isinstance(k, str) or not k.strip() or not isinstance(v, str) or not v.strip()
    ]
    if bad:
        raise DataError(f"{where}: entries {bad[:5]} need a non-empty name and a non-empty definition")
    return {k.strip(): " ".join(v.split()) for k, v in raw.items()}


def _table(raw: object, where: str, targets: list[str], *, null_ok: bool) -> dict[str, str | None]:
    """A mapping of names to one of ``targets`` (or null where ``null_ok``)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise DataError(f"{where}: must be a mapping of label -> name")
    bad = [k for k, v in raw.items() if not isinstance(k, str) or not (v in targets or (null_ok and v is None))]
    if bad:
        what = "a strategy name or null" if null_ok else "one of"
        raise DataError(f"{where}: entries {bad[:5]} must map to {what} {targets}")
    return {str(k).strip(): v for k, v in raw.items()}


def parse_strategy_file(raw: object, where: str) -> StrategyFile:
    if not isinstance(raw, dict) or not isinstance(raw.get("strategies"), dict):
        return StrategyFile(where, parse_strategies(raw, where), {}, {})
    unknown = sorted(str(k) for k in raw if k not in SECTIONS)
    if unknown:
        raise DataError(f"{where}: unknown sections {unknown}: the file has {', '.join(SECTIONS)}")
    strategies = parse_strategies(raw["strategies"], f"{where}: strategies")
    esconv = _table(raw.get("esconv"), f"{where}: esconv", list(strategies), null_ok=True)
    spellings = _table(raw.get("esconv_spellings"), f"{where}: esconv_spellings", list(esconv), null_ok=False)
    return StrategyFile(where, strategies, esconv, {k: v for k, v in spellings.items() if v is not None})


@cache
def builtin_strategy_file() -> StrategyFile:
    text = resources.files(__package__).joinpath("strategies.yaml").read_text(encoding="utf-8")
    return parse_strategy_file(yaml.safe_load(text), "strategies.yaml (built in)")


def load_strategy_file(path: Path | None) -> StrategyFile:
    if path is None:
        return builtin_strategy_file()
    return parse_strategy_file(userfiles.read(path, "strategy file", DataError), str(path))


def builtin_strategies() -> Strategies:
    return builtin_strategy_file().strategies


def load_strategies(path: Path | None) -> Strategies:
    return load_strategy_file(path).strategies


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
        return {**rec, "status": "unscored", "reason": "no_sentences"}, [("strategy_no_sentences", history.id)]
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
        failed = {"status": "unscored", "reason": "unlabelled", "error": got.error, "attempts": got.attempts}
        return {**rec, **failed}, events
    labels = [got.data[f"s{i + 1}"] for i in range(len(asked))] + [None] * (len(sentences) - len(asked))
    return {**rec, "status": "ok", "labels": labels, "attempts": got.attempts}, events


def strategy_profiles(records: list[dict[str, Any]], competitors: list[str], names: list[str]) -> list[dict[str, Any]]:
    """Per competitor and subset ("all" too; with a single subset, "all" alone): replies, sentences, unlabelled
    sentences, and the share of labelled sentences that carry each strategy."""
    rows = []
    subsets = ["all", *sorted(named)] if len(named := {r["subset"] for r in records}) > 1 else ["all"]
    for subset in subsets:
        for comp in competitors:
            rs = [r for r in records if r["competitor"] == comp and subset in ("all", r["subset"])]
            if not rs:
                continue
            labels = Counter(lab for r in rs for lab in r["labels"] if lab is not None)
            n_sent = sum(len(r["sentences"]) for r in rs)
            n_lab = sum(labels.values())
            shares = {name: _ratio(labels[name], n_lab) for name in names}
            rows.append({"subset": subset, "competitor": comp, "replies": len(rs), "sentences": n_sent,
                         "unlabelled": n_sent - n_lab, **shares})  # fmt: skip
    return rows


def _most_common(counts: Counter[str]) -> tuple[str | None, int, int]:
    """The most common label, its count, and the number of labels."""
    top = counts.most_common(1)
    return (top[0][0], top[0][1], counts.total()) if top else (None, 0, 0)


def _ratio(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def label_patterns(records: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """The signs of a labeller that ignores the sentences: the most common label of first sentences (and
    of all sentences) with its share, and the share of adjacent labelled sentences whose second label is
    the next one in the strategy list (by chance about 1 in len(names)). ``warnings`` says it in words."""
    firsts = Counter(r["labels"][0] for r in records if r["labels"] and r["labels"][0] is not None)
    every = Counter(lab for r in records for lab in r["labels"] if lab is not None)
    place = {n: i for i, n in enumerate(names)}
    steps = [
        a in place and b in place and place[b] == place[a] + 1
        for r in records
        for a, b in zip(r["labels"], r["labels"][1:], strict=False)
        if a is not None and b is not None
    ]
    first, k_first, n_first = _most_common(firsts)
    label, k_label, n_label = _most_common(every)
    in_order = sum(steps)
    warnings = []
    if n_first >= MIN_FOR_WARNING and k_first >= ONE_LABEL_SHARE * n_first:
        warnings.append(f"one label for (nearly) all first sentences: {first!r} on {k_first} of {n_first}")
    if len(steps) >= MIN_FOR_WARNING and in_order >= LIST_ORDER_SHARE * len(steps):
        warnings.append(
            f"labels follow the order of the strategy list: {in_order} of {len(steps)} adjacent sentences "
            f"get the next strategy of the list (by chance about 1 in {len(names)})"
        )
    return {
        "first_sentences": n_first,
        "most_common_first": first,
        "most_common_first_share": _ratio(k_first, n_first),
        "labelled_sentences": n_label,
        "most_common": label,
        "most_common_share": _ratio(k_label, n_label),
        "adjacent_pairs": len(steps),
        "next_in_list_share": _ratio(in_order, len(steps)),
        "next_in_list_by_chance": _ratio(1, len(names)),
        "warnings": warnings,
    }
