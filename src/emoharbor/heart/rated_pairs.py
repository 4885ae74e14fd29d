"""The pairwise judgments people's ratings imply: on one history and dimension, the reply rated higher wins,
and two equal ratings are the people's tie (never a guess of a winner).

How ratings become pairs (a source's ``pairing``):
- ``same_rater``: a person who rated two replies of a history compared them; each such person gives one
  judgment of the pair (several people rating the same replies give several: the human-human ceiling);
- ``across_raters``: each reply was rated by a person of its own (Welivita & Pu's design): the pair's one
  judgment compares the two ratings, by the two people together (rater ``A+B``).

The rows have the human judgments file's fields (``analysis.humans``), with the two ratings in ``scores``, so
``heart agreement`` and ``heart ratings`` read them as any imported human judgment.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
from typing import Any

from .histories import History, Rating
from .presets import Pairing


def _row(h: History, x: Rating, y: Rating, rater: str) -> dict[str, Any]:
    tie = math.isclose(x.score, y.score, rel_tol=0.0, abs_tol=1e-9)
    winner = "tie" if tie else x.competitor if x.score > y.score else y.competitor
    return {"history_id": h.id, "a": x.competitor, "b": y.competitor, "rater": rater, "dimension": x.dimension,
            "winner": winner, "strength": None, "rationale": "", "first_shown": None,
            "scores": {x.competitor: x.score, y.competitor: y.score}, "source": "ratings"}  # fmt: skip


def pair_rows(h: History, competitors: list[str], pairing: Pairing) -> list[dict[str, Any]]:
    """The judgments of one history, each pair oriented as the run's competitors are ordered."""
    place = {c: i for i, c in enumerate(competitors)}
    groups: dict[tuple[str, ...], list[Rating]] = defaultdict(list)
    for r in h.ratings:
        groups[(r.dimension, r.rater) if pairing == "same_rater" else (r.dimension,)].append(r)
    rows = []
    for rs in groups.values():
        for x, y in combinations(sorted(rs, key=lambda r: place[r.competitor]), 2):
            rater = x.rater if pairing == "same_rater" or x.rater == y.rater else f"{x.rater}+{y.rater}"
            rows.append(_row(h, x, y, rater))
    return rows


def rated_judgments(histories: Iterable[History], competitors: list[str], pairing: Pairing) -> list[dict[str, Any]]:
    return [row for h in histories for row in pair_rows(h, competitors, pairing)]
