"""Baselines that need no model: what the turns a judge saw predict by themselves.

A judge earns trust only by beating what can be read off the transcript without it. From exactly the
turns the judge saw (the view: ``replayed``, the replayed part; ``all``, the whole ESConv dialog), per
conversation:

- mean supporter words: the mean word count of the supporter's messages;
- total supporter words; mean seeker words (per seeker message); supporter turns shown;
- reply similarity: the mean cosine similarity (all-MiniLM-L6-v2) of each supporter message to the seeker
  message right before it; ``None`` for every conversation when the ``embed`` extra is not installed or the
  embedding is turned off, and a note says which.

A view's turns come from the replay record: ``turns`` (the replayed part) or ``dialog_turns`` (the whole
merged dialog; older records lack it, and then the ``all`` view has no values for them). What an
assessment saw is its ``saw`` field, ``replayed`` when absent.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

from .. import embed
from ..store.records import Assessment

VIEWS = ("replayed", "all")
WORD_FEATURES = ("mean supporter words", "total supporter words", "mean seeker words", "supporter turns shown")
SIMILARITY = "reply similarity"
FEATURES = (*WORD_FEATURES, SIMILARITY)
NOT_INSTALLED = f"embedding baseline: not available, {embed.INSTALL_HINT}"
TURNED_OFF = "embedding baseline: turned off"

Features = dict[str, dict[str, dict[str, float | None]]]  # view -> conversation -> feature -> value


def shown_turns(replay: dict[str, Any], view: str) -> list[dict[str, Any]] | None:
    """The turns of ``view`` in a replay record; ``None`` when the record does not hold them."""
    turns = replay["turns"] if view == "replayed" else replay.get("dialog_turns")
    return None if turns is None else list(turns)


def word_features(turns: list[dict[str, Any]]) -> dict[str, float | None]:
    supporter = [len(t["text"].split()) for t in turns if t["speaker"] == "supporter"]
    seeker = [len(t["text"].split()) for t in turns if t["speaker"] != "supporter"]
    return {
        "mean supporter words": float(np.mean(supporter)) if supporter else None,
        "total supporter words": float(sum(supporter)),
        "mean seeker words": float(np.mean(seeker)) if seeker else None,
        "supporter turns shown": float(len(supporter)),
    }


def reply_pairs(turns: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(the seeker's message, the supporter's message right after it), in order."""
    return [
        (a["text"], b["text"])
        for a, b in pairwise(turns)
        if b["speaker"] == "supporter" and a["speaker"] != "supporter"
    ]


@lru_cache(maxsize=1)  # the report asks for the table and the flat rows of one run: encode once for both
def _vectors(texts: tuple[str, ...]) -> np.ndarray:
    return embed.encode(list(texts))


def reply_similarities(shown: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, float | None]]:
    """Per view and conversation, the mean cosine similarity of each supporter message to the seeker message
    before it (``None`` without such a pair). Every distinct message is encoded once, in batches.
    ImportError when the embedding model is not installed."""
    pairs = {(view, key): reply_pairs(turns) for view, convs in shown.items() for key, turns in convs.items()}
    texts = tuple(sorted({text for ps in pairs.values() for pair in ps for text in pair}))
    vectors = _vectors(texts) if texts else np.zeros((0, 0))
    at = {text: i for i, text in enumerate(texts)}
    out: dict[str, dict[str, float | None]] = {view: {} for view in shown}
    for (view, key), ps in pairs.items():
        a, b = vectors[[at[p[0]] for p in ps]], vectors[[at[p[1]] for p in ps]]
        out[view][key] = float(np.einsum("ij,ij->i", a, b).mean()) if ps else None
    return out


def baseline_features(
    replays: dict[str, dict[str, Any]], views: list[str], *, embedding: bool = True
) -> tuple[Features, list[str]]:
    """The features of every replay in every view that holds its turns, and the notes to print with them."""
    shown = {view: {k: t for k, d in replays.items() if (t := shown_turns(d, view)) is not None} for view in views}
    notes = [
        f"{view} view: {len(replays) - len(convs)} of {len(replays)} replay records do not hold the whole "
        "dialog (recorded before it was kept), so they have no baseline values in this view"
        for view, convs in shown.items()
        if len(convs) < len(replays)
    ]
    values: Features = {view: {k: word_features(t) for k, t in convs.items()} for view, convs in shown.items()}
    similarity: dict[str, dict[str, float | None]] = {}
    if not embedding:
        notes.append(TURNED_OFF)
    else:
        try:
            similarity = reply_similarities(shown)
        except ImportError:
            notes.append(NOT_INSTALLED)
    for view, convs in values.items():
        for key, feats in convs.items():
            feats[SIMILARITY] = similarity.get(view, {}).get(key)
    return values, notes


def views_used(assessments: list[Assessment]) -> list[str]:
    """The views some assessment saw, in the order of ``VIEWS`` (``replayed`` when there is none yet)."""
    seen = {a.saw for a in assessments} or {"replayed"}
    return [v for v in VIEWS if v in seen]
