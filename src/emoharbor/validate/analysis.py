"""How well the judges agree with the real help-seekers, from a validate run's store.

For each judge (the user-judge, and the third-party judge) and each of its scores (the mean of the 10
dimensions, the generic and personal group means, and ``relief``), against the seekers' own survey:

- Spearman's rho with the seeker's empathy rating, relevance rating, and drop in emotion intensity
  (initial minus final, each rated 1-5 by the seeker);
- AUROC for telling the successful conversations from the failed ones: the chance that a random
  successful conversation scores higher than a random failed one (0.5 = chance, ties count half).
  "Failed" is ESConv's own label (``EsconvDialog.failed``: in the failed set, or intensity did not drop,
  or empathy or relevance rated 2 or lower).

Each cell: the estimate, a paired bootstrap 95% interval (conversations resampled, fixed seed) and n, the
conversations where both the score and that survey field exist. Unscored conversations are left out and
counted. A row for the simulated user's own intensity drop (first minus last state, the Chain-of-Agent's
trajectory) checks the inner state, and "difference" rows give the user-judge minus the third-party judge
on the conversations both scored.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..assess.dimensions import group_keys, keys
from ..stats.bootstrap import Estimate
from ..stats.correlation import RowStat, auroc_rows, bootstrap_rows, spearman_rows
from ..store.run_store import RunStore

TARGETS = ["empathy", "relevance", "intensity_drop", "not_failed"]
TARGET_LABELS = {
    "empathy": "rho vs seeker empathy",
    "relevance": "rho vs seeker relevance",
    "intensity_drop": "rho vs seeker intensity drop",
    "not_failed": "AUROC success vs failed",
}
SCORES = ["overall", "generic", "personal", "relief"]
CHAIN_ROW = ("user (inner state)", "simulated intensity drop")


def _mean(scores: dict[str, int | None], dims: list[str]) -> float | None:
    vals = [scores[d] for d in dims if scores.get(d) is not None]
    return float(np.mean(vals)) if vals else None  # type: ignore[arg-type]


def score_of(scores: dict[str, int | None], name: str) -> float | None:
    if name == "overall":
        return _mean(scores, keys())
    if name in ("generic", "personal"):
        return _mean(scores, group_keys(name))
    v = scores.get(name)
    return None if v is None else float(v)


def target_of(facts: dict[str, Any], name: str) -> float | None:
    if name == "not_failed":
        return 0.0 if facts["failed"] else 1.0
    v = facts.get("intensity_drop") if name == "intensity_drop" else facts["survey"].get(name)
    return None if v is None else float(v)


def _stat(target: str) -> RowStat:
    if target == "not_failed":
        return lambda scores, t: auroc_rows(scores, t.astype(bool))
    return spearman_rows


def cell(pairs: list[tuple[float, float]], target: str, seed: int, n_boot: int) -> dict[str, Any]:
    if not pairs:
        return _est(Estimate(None, None, None, 0))
    s, t = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return _est(bootstrap_rows(_stat(target), s, t, seed=seed, n_boot=n_boot))


def diff_cell(triples: list[tuple[float, float, float]], target: str, seed: int, n_boot: int) -> dict[str, Any]:
    """The user-judge's statistic minus the third-party judge's, on the same conversations."""
    stat = _stat(target)

    def diff(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
        return stat(a, t) - stat(b, t)

    if not triples:
        return _est(Estimate(None, None, None, 0))
    cols = [np.array([p[i] for p in triples]) for i in range(3)]
    return _est(bootstrap_rows(diff, *cols, seed=seed, n_boot=n_boot))


def _est(e: Estimate) -> dict[str, Any]:
    return {"value": e.value, "lo": e.lo, "hi": e.hi, "n": e.n}


def validation_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    replays = {k: d for k, d in store.items("replay")}
    ok = {k: d for k, d in replays.items() if d["termination"] != "error"}
    by_judge: dict[str, dict[str, dict[str, Any]]] = {}
    for _, a in store.items("assessment"):
        by_judge.setdefault(a["judge"], {})[a["conversation"]] = a
    judges = sorted(by_judge, key=lambda j: (j != "user", j))
    rows: list[dict[str, Any]] = []
    for judge in judges:
        scored = {k: a["scores"] for k, a in by_judge[judge].items() if not a["unscored"] and k in ok}
        for name in SCORES:
            cells = {}
            for t in TARGETS:
                pairs = [
                    (s, y)
                    for k, sc in scored.items()
                    if (s := score_of(sc, name)) is not None and (y := target_of(ok[k]["esconv"], t)) is not None
                ]
                cells[t] = cell(pairs, t, seed, n_boot)
            rows.append({"judge": judge, "score": name, "cells": cells})
    sim_cells = {}
    for t in TARGETS:
        pairs = [
            (float(d["states"][0]["intensity"] - d["states"][-1]["intensity"]), y)
            for d in ok.values()
            if len(d["states"]) >= 2 and (y := target_of(d["esconv"], t)) is not None
        ]
        sim_cells[t] = cell(pairs, t, seed, n_boot)
    rows.append({"judge": CHAIN_ROW[0], "score": CHAIN_ROW[1], "cells": sim_cells})
    diffs = _difference_rows(by_judge, ok, judges, seed, n_boot)
    counts = {
        "conversations": len(replays),
        "replay_errors": len(replays) - len(ok),
        "failed": sum(1 for d in ok.values() if d["esconv"]["failed"]),
        "truncated": sum(1 for d in ok.values() if d["esconv"]["truncated"]),
        "supporter_turns_replayed": sum(d["esconv"]["supporter_turns_replayed"] for d in ok.values()),
        "supporter_turns_total": sum(d["esconv"]["supporter_turns_total"] for d in ok.values()),
        "by_source": dict(Counter(k.rsplit(":", 1)[0] for k in ok)),
        "judges": {
            j: {
                "scored": sum(1 for k, a in by_judge[j].items() if k in ok and not a["unscored"]),
                "unscored": sum(1 for k, a in by_judge[j].items() if k in ok and a["unscored"]),
                "not_assessed": sum(1 for k in ok if k not in by_judge[j]),
            }
            for j in judges
        },
    }
    return {
        "targets": TARGETS,
        "target_labels": TARGET_LABELS,
        "rows": rows,
        "differences": diffs,
        "counts": counts,
        "events": store.event_counts(),
        "usage_by_role": store.usage_by_role(),
        "config": store.config(),
        "wall_s": float(store.meta().get("wall_s", "0")),
        "seed": seed,
        "n_boot": n_boot,
    }


def _difference_rows(
    by_judge: dict[str, dict[str, dict[str, Any]]], ok: dict[str, Any], judges: list[str], seed: int, n_boot: int
) -> list[dict[str, Any]]:
    if "user" not in by_judge:
        return []
    out = []
    for other in [j for j in judges if j != "user"]:
        cells = {}
        for t in TARGETS:
            triples = []
            for k, a in by_judge["user"].items():
                b = by_judge[other].get(k)
                if k not in ok or a["unscored"] or b is None or b["unscored"]:
                    continue
                x, y, z = (
                    score_of(a["scores"], "overall"),
                    score_of(b["scores"], "overall"),
                    target_of(ok[k]["esconv"], t),
                )
                if x is not None and y is not None and z is not None:
                    triples.append((x, y, z))
            cells[t] = diff_cell(triples, t, seed, n_boot)
        out.append({"judge": f"user - {other}", "score": "overall", "cells": cells})
    return out


def score_rows(store: RunStore) -> list[dict[str, Any]]:
    """One flat row per conversation and judge, for an analysis of one's own: the record, the seeker's
    survey, the simulated user's intensity trajectory, and the judge's 10 scores with the group means
    (empty where unscored; a conversation no judge has assessed yet has one row without a judge)."""
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for _, a in store.items("assessment"):
        by_conv.setdefault(a["conversation"], []).append(a)
    out = []
    for key, d in store.items("replay"):
        e, states = d["esconv"], d["states"]
        first, last = (states[0]["intensity"], states[-1]["intensity"]) if states else (None, None)
        base = {
            "conversation": key,
            "source": e["source"],
            "index": e["index"],
            "problem_type": e.get("problem_type"),
            "emotion_type": e.get("emotion_type"),
            "failed": e["failed"],
            "from_failed_set": e["from_failed_set"],
            **{f"seeker_{k}": v for k, v in e["survey"].items()},
            "seeker_intensity_drop": e.get("intensity_drop"),
            "supporter_turns_replayed": e["supporter_turns_replayed"],
            "supporter_turns_total": e["supporter_turns_total"],
            "termination": d["termination"],
            "simulated_intensity_first": first,
            "simulated_intensity_last": last,
        }
        judged = sorted(by_conv.get(key, []), key=lambda a: (a["judge"] != "user", a["judge"]))
        if not judged:
            out.append(base)
        for a in judged:
            sc = {} if a["unscored"] else a["scores"]
            out.append(
                {
                    **base,
                    "judge": a["judge"],
                    "unscored": a["unscored"],
                    **{name: score_of(sc, name) for name in SCORES if name != "relief"},
                    **{k: sc.get(k) for k in keys()},
                }
            )
    return out
