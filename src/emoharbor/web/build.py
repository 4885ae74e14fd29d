"""Creating a study: blinded items copied from a HEART run (pairs of replies to a history) and/or an
EmoHarbor run (whole conversations), plus attention checks written for emoharbor (attention.yaml)."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..data.selection import select
from ..errors import EmoharborError
from ..heart.stages import pipeline
from ..simulate.conversation import Conversation
from ..store.run_store import RunStore
from .forms import CONVERSATION, PAIR
from .study import Item, Study, new_id

EMOHARBOR_KIND = "emoharbor"


def heart_items(folder: Path) -> tuple[list[Item], list[str], dict[str, int]]:
    """One item per pair of usable candidate replies to a history; the HEART dimensions; counts."""
    store, config, _ = pipeline.read_run(folder)
    try:
        pairs, counts = pipeline.pairs_to_judge(store, config)
    finally:
        store.close()
    items = []
    for h, a, shown_a, shown_b in pairs:
        content = {
            "turns": [{"speaker": t.speaker, "text": t.text} for t in h.turns],
            "situation": h.situation if config.show_situation else "",
            "replies": {"a": shown_a.text, "b": shown_b.text},
        }
        source = {"history_id": h.id, "competitor_a": a, "competitor_b": shown_b.name}
        items.append(Item(new_id("i"), PAIR, False, content, source, None))
    return items, list(config.dimensions), {"pairs": len(pairs), **counts}


def conversation_items(folder: Path) -> tuple[list[Item], dict[str, int]]:
    """One item per finished conversation of an EmoHarbor run (errors and empty ones counted, left out)."""
    store = RunStore.open_existing(folder, EMOHARBOR_KIND)
    try:
        records = list(store.items("conversation"))
    finally:
        store.close()
    items, counts = [], Counter[str]()
    for _, data in records:
        try:
            conv = Conversation.model_validate(data)
        except ValidationError:
            counts["conversations_unreadable"] += 1
            continue
        if conv.termination == "error":
            counts["conversations_ended_in_error"] += 1
        elif not any(t.speaker == "supporter" for t in conv.turns):
            counts["conversations_without_supporter_turn"] += 1
        else:
            content = {"turns": [{"speaker": t.speaker, "text": t.text} for t in conv.turns]}
            source = {"conversation_id": conv.id, "supporter": conv.supporter, "profile_id": conv.profile_id}
            items.append(Item(new_id("i"), CONVERSATION, False, content, source, None))
    return items, {"conversations": len(items), **counts}


@cache
def attention_bank() -> dict[str, list[dict[str, Any]]]:
    text = resources.files(__package__).joinpath("attention.yaml").read_text(encoding="utf-8")
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load(text)
    return data


def attention_items(count: int, rated: list[str]) -> list[Item]:
    """``count`` attention checks, alternating over what the study's items rate (pairs, conversations)."""
    bank = attention_bank()
    available = sum(len(bank[k]) for k in rated)
    if count > available:
        raise EmoharborError(f"--attention-checks {count}: at most {available} are available for what these items rate")
    deepest = max((len(bank[k]) for k in rated), default=0)
    picked = [(k, bank[k][i]) for i in range(deepest) for k in rated if i < len(bank[k])][:count]
    out = []
    for what, spec in picked:
        content: dict[str, Any] = {"turns": [{"speaker": s, "text": t} for s, t in spec["turns"]]}
        expect: dict[str, Any] = {"field": "score.warmth", "max": 2}
        if what == PAIR:
            content.update(situation="", replies={"a": spec["good"], "b": spec["bad"]})
            expect = {"field": "choice.overall", "winner": "a"}
        out.append(Item(new_id("i"), what, True, content, {"attention": spec["name"]}, expect))
    return out


def create_study(folder: Path, *, heart_run: Path | None, emoharbor_run: Path | None, overlap: int, attention: int = 0,
                 limit: int | None = None, seed: int = 0) -> tuple[Study, dict[str, Any]]:  # fmt: skip
    if heart_run is None and emoharbor_run is None:
        raise EmoharborError("give --heart-run and/or --emoharbor-run: the study needs items to rate")
    items: list[Item] = []
    dims: list[str] = []
    summary: dict[str, Any] = {}
    if heart_run is not None:
        pairs, dims, counts = heart_items(heart_run)
        pairs = select(pairs, None, limit, seed)  # at most ``limit``, drawn with ``seed``, in their order
        items += pairs
        summary.update({**counts, "pair_items": len(pairs)})
    if emoharbor_run is not None:
        convs, counts = conversation_items(emoharbor_run)
        convs = select(convs, None, limit, seed)
        items += convs
        summary.update({**counts, "conversation_items": len(convs)})
    if not items:
        raise EmoharborError("the runs hold nothing to rate (no usable pairs or conversations): see " + str(summary))
    rated = [k for k in (PAIR, CONVERSATION) if any(it.rated == k for it in items)]
    checks = attention_items(attention, rated)
    meta = {
        "heart_dimensions": json.dumps(dims),
        "overlap": str(overlap),
        "seed": str(seed),
        "heart_run": str(heart_run.resolve()) if heart_run else "",
        "emoharbor_run": str(emoharbor_run.resolve()) if emoharbor_run else "",
    }
    study = Study.create(folder, items + checks, meta)
    summary["attention_checks"] = len(checks)
    return study, summary
