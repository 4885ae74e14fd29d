"""The seekers table, from a seekers run's store: every scorer's agreement with the seekers' own ratings of
the reply blocks (``figures.py``), beside the baselines that need no model.

Scorers: the simulated user's and each reply card's, from what the ``score`` records hold (``scoring.values``).

Baselines (``BASELINES``), from the point alone:
- ``words``: the reply block's word count;
- ``position``: the block's number among the supporter's turns (later blocks may be rated higher because the
  seeker has been helped longer, not because they are better);
- ``echo``: how many content words of the seeker's last turn the block repeats (``rules_user.content_words``:
  words of four letters or more, not the common ones): a reply that picks up what was said.

The table is made of the points every scorer has finished (unscored counts as finished): in a run not
finished yet, every scorer and baseline stands on the same points; the others are counted as unfinished.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..reward.settings import RewardSettings
from ..scoring.names import REAL, USER
from ..scoring.values import record_values, scorer_usage
from ..simulate.conversation import words
from ..simulate.rules_user import content_words
from ..store.record import user_model
from ..store.run_store import RunStore
from ..store.units import finished
from .figures import Figures
from .points import Point

BASELINES = ("words", "position", "echo")


def baselines(p: Point) -> dict[str, float]:
    turns = p.case.context.turns
    seeker = turns[-1].text if turns and turns[-1].speaker == "user" else ""
    return {"words": float(words(p.reply)), "position": float(p.block),
            "echo": float(len(content_words(seeker) & content_words(p.reply)))}  # fmt: skip


def scorers(store: RunStore) -> list[str]:
    """The scorers of a run: the simulated user (when it has one) and every judge it recorded."""
    judges = json.loads(store.meta().get("judges", "{}"))
    return ([USER] if store.config().get("user") else []) + sorted(judges)


def read_points(store: RunStore) -> tuple[list[Point], int]:
    """The points every scorer has finished, in the store's order, and how many are not finished yet."""
    done = finished(store, "score")
    names = scorers(store)
    stored = [Point.from_dict(d) for _, d in store.items("point")]
    ready = [p for p in stored if all((*p.key, s) in done for s in names)]
    return ready, len(stored) - len(ready)


def scorer_values(store: RunStore, points: list[Point]) -> dict[str, list[float | None]]:
    """Every scorer's value on each point (None: unscored), in the order of ``points``."""
    s = RewardSettings.model_validate(store.config().get("reward") or {})
    ids = {p.case.id for p in points}
    records = [d for _, d in store.items("score") if d.get("case") in ids]
    return {name: [got.get((p.case.id, REAL)) for p in points] for name, got in record_values(records, s).items()}


def owner(scorer: str) -> str:
    """The scorer whose calls a row's figures came from: the user's, or the card's."""
    return USER if scorer.startswith("user ") else scorer.rsplit(" (", 1)[0]


def source(p: Point) -> str:
    """The file a point came from: the stem its talk's id starts with."""
    return p.talk.rsplit(":", 1)[0]


def table_rows(points: list[Point], values: dict[str, list[float | None]], usage: dict[str, Any], *,
               seed: int, n_boot: int) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """Every scorer's row and every baseline's on ``points`` (``values`` in their order), and the number of
    within-talk pairs."""
    base: dict[str, Sequence[float]] = {name: [baselines(p)[name] for p in points] for name in BASELINES}
    figures = Figures([p.talk for p in points], [p.rating for p in points], base, n_boot=n_boot, seed=seed)
    rows = [{"scorer": name, "baseline": False, **figures.row(v), "usage": usage.get(owner(name))}
            for name, v in values.items()]  # fmt: skip
    rows += [{"scorer": name, "baseline": True, **figures.row(v, baseline=True), "usage": None}
             for name, v in base.items()]  # fmt: skip
    return rows, int(figures.i.size)


def seekers_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000, by_file: bool = True) -> dict[str, Any]:
    """The table on every finished point, and with ``by_file`` (when they come from several files) on each file's
    alone (``emoharbor judges`` and the run's record read the first only)."""
    cfg = store.config()
    points, unfinished = read_points(store)
    values = scorer_values(store, points)
    usage = scorer_usage(store)
    rows, pairs = table_rows(points, values, usage, seed=seed, n_boot=n_boot)
    talks = {p.talk: source(p) for p in points}
    files = sorted(set(talks.values())) if by_file else []
    by_source = []
    for name in files if len(files) > 1 else []:
        at = [i for i, p in enumerate(points) if source(p) == name]
        own = {k: [v[i] for i in at] for k, v in values.items()}
        src_rows, src_pairs = table_rows([points[i] for i in at], own, {}, seed=seed, n_boot=n_boot)  # cost: above
        by_source.append({"source": name, "points": len(at), "pairs": src_pairs, "rows": src_rows})
    return {
        "kind": "seekers",
        "points": len(points),
        "talks": len(talks),
        "unfinished": unfinished,
        "sources": dict(sorted(Counter(talks.values()).items())),
        "ratings": {str(k): v for k, v in sorted(Counter(p.rating for p in points).items())},
        "pairs": pairs,
        "rows": rows,
        "by_source": by_source,
        "baselines": list(BASELINES),
        "user_model": user_model(cfg),
        "wall_s": float(store.meta().get("wall_s", "0")),
        "n_boot": n_boot,
        "seed": seed,
    }


def point_rows(store: RunStore) -> list[dict[str, Any]]:
    """One row per finished point: its talk, block, rating, the baselines and every scorer's value."""
    points, _ = read_points(store)
    values = scorer_values(store, points)
    return [{"talk": p.talk, "block": p.block, "rating": p.rating, "ratings": p.ratings, **baselines(p),
             **{name: v[i] for name, v in values.items()}} for i, p in enumerate(points)]  # fmt: skip
