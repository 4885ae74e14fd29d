"""Ratings: Bradley-Terry per dimension and overall, per judge and pooled, per subset; win rates vs the
human; order consistency. Plain data in, plain data out (rendering lives in render.py)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...store.records import Comparison
from ..config import HUMAN
from .bradley_terry import bootstrap_intervals, fit_bradley_terry
from .verdicts import TIE, PairVerdict, combine_orders, order_consistency

POOLED = "pooled"
ALL = "all"
VARIANTS = {
    "plain": "a pair verdict is one win (a tie, when the winner flipped with the order, is half a win each)",
    "strength": "each order's winner gets its strength (1-5) as wins; a flipped pair splits by strength",
}


def number(x: float) -> float | str | None:
    """JSON-safe: NaN (not compared) -> None, infinities -> "inf"/"-inf"."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return round(float(x), 4)


def cluster_matrices(verdicts: list[PairVerdict], competitors: list[str], variant: str) -> np.ndarray:
    """One win matrix per history: (H, k, k)."""
    index = {c: i for i, c in enumerate(competitors)}
    hids = sorted({v.history_id for v in verdicts})
    h_index = {h: i for i, h in enumerate(hids)}
    out = np.zeros((len(hids), len(competitors), len(competitors)))
    for v in verdicts:
        h, a, b = h_index[v.history_id], index[v.a], index[v.b]
        if variant == "strength":
            out[h, a, b] += v.weight_a
            out[h, b, a] += v.weight_b
        elif v.outcome == TIE:
            out[h, a, b] += 0.5
            out[h, b, a] += 0.5
        else:
            win, lose = (a, b) if v.outcome == "a" else (b, a)
            out[h, win, lose] += 1.0
    return out


def record_counts(verdicts: Iterable[PairVerdict], name: str) -> tuple[int, int, int]:
    wins = ties = losses = 0
    for v in verdicts:
        if name not in (v.a, v.b):
            continue
        if v.outcome == TIE:
            ties += 1
        elif v.winner() == name:
            wins += 1
        else:
            losses += 1
    return wins, ties, losses


def rate(
    verdicts: list[PairVerdict], competitors: list[str], variant: str, *, prior: float, reps: int, seed: int
) -> list[dict[str, Any]]:
    per = cluster_matrices(verdicts, competitors, variant)
    ratings = fit_bradley_terry(per.sum(0), prior=prior) if len(per) else np.full(len(competitors), np.nan)
    low, high = bootstrap_intervals(per, prior=prior, reps=reps, seed=seed)
    rows = []
    for i, c in enumerate(competitors):
        wins, ties, losses = record_counts(verdicts, c)
        rows.append(
            {
                "competitor": c,
                "rating": number(ratings[i]),
                "low": number(low[i]),
                "high": number(high[i]),
                "pairs": wins + ties + losses,
                "wins": wins,
                "ties": ties,
                "losses": losses,
            }
        )
    return sorted(rows, key=lambda r: -r["rating"] if isinstance(r["rating"], float) else math.inf)


def scopes(verdicts: list[PairVerdict], judges: list[str]) -> list[tuple[str, str, list[PairVerdict]]]:
    """(judge or "pooled", subset or "all", verdicts) for every combination that has verdicts; with a single
    subset, "all" alone (the subset's scope would be the same)."""
    subsets = [ALL, *sorted(named)] if len(named := {v.subset for v in verdicts}) > 1 else [ALL]
    out = []
    for judge in [POOLED, *judges] if len(judges) > 1 else judges:
        for subset in subsets:
            vs = [v for v in verdicts if (judge == POOLED or v.rater == judge) and subset in (ALL, v.subset)]
            if vs:
                out.append((judge, subset, vs))
    return out


def win_rates_vs_human(verdicts: list[PairVerdict], competitors: list[str]) -> list[dict[str, Any]]:
    rows = []
    for c in competitors:
        if c == HUMAN:
            continue
        vs = [v for v in verdicts if {v.a, v.b} == {c, HUMAN}]
        wins, ties, losses = record_counts(vs, c)
        n = wins + ties + losses
        rows.append(
            {
                "competitor": c,
                "pairs": n,
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "win_rate": number((wins + 0.5 * ties) / n) if n else None,
            }
        )
    return rows


def compute_ratings(
    comparisons: Iterable[Comparison],
    competitors: list[str],
    judges: list[str],
    keys: list[str],
    *,
    prior: float = 0.1,
    reps: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """Everything the ratings report shows, as plain data."""
    verdicts, _, counts = combine_orders(comparisons)
    ratings: list[dict[str, Any]] = []
    vs_human: list[dict[str, Any]] = []
    for judge, subset, vs in scopes(verdicts, judges):
        for key in keys:
            dim_vs = [v for v in vs if v.dimension == key]
            for variant in VARIANTS:
                for row in rate(dim_vs, competitors, variant, prior=prior, reps=reps, seed=seed):
                    ratings.append({"judge": judge, "subset": subset, "dimension": key, "variant": variant, **row})
            if HUMAN in competitors:
                for row in win_rates_vs_human(dim_vs, competitors):
                    vs_human.append({"judge": judge, "subset": subset, "dimension": key, **row})
    consistency = order_consistency(verdicts)
    by_judge: Counter[str] = Counter()
    same: Counter[str] = Counter()
    for row in consistency:
        by_judge[row["judge"]] += row["pairs"]
        same[row["judge"]] += row["consistent"]
    summary = [
        {
            "judge": j,
            "dimension": "all",
            "pairs": by_judge[j],
            "consistent": same[j],
            "rate": number(same[j] / by_judge[j]),
        }
        for j in by_judge
    ]
    return {
        "competitors": competitors,
        "judges": judges,
        "dimensions": keys,
        "prior": prior,
        "bootstrap": reps,
        "variants": VARIANTS,
        "ratings": ratings,
        "win_rates_vs_human": vs_human,
        "order_consistency": summary + [{**r, "rate": number(r["rate"])} for r in consistency],
        "counts": dict(counts),
    }
