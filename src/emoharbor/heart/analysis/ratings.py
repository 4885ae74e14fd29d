"""Ratings: Bradley-Terry per dimension and overall, per judge and pooled, per subset; win rates vs the
human; order consistency. Plain data in, plain data out (rendering lives in render.py).

Beside each raw rating and win rate, a length-controlled one (the AlpacaEval 2 way, ``stats.length``):
logit P(a beats b) = theta_a - theta_b + gamma * tanh(d / s), d the words of a's reply minus b's and s the
root mean square of d over the scope's verdicts; the length-controlled rating is theta on the Elo scale
(the length term held at 0), the length-controlled win rate against the human the model's P(beats the human)
at length difference 0, and gamma is listed per scope (``length_terms``). Intervals resample histories
with the raw ratings' draws. Under ``stats.bootstrap.MIN_N`` histories a figure has no interval (n too
small), raw and length-controlled alike."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...stats.bootstrap import too_small
from ...stats.length import length_controlled_bt
from ...store.records import Comparison
from ..config import HUMAN
from .bradley_terry import bootstrap_intervals, fit_bradley_terry, history_draws, to_elo
from .verdicts import HUMANS, TIE, PairVerdict, combine_orders

POOLED = "pooled"
ALL = "all"
VARIANTS = {
    "plain": "a pair verdict is one win (a tie, when the winner flipped with the order, is half a win each)",
    "strength": "each order's winner gets its strength (1-5) as wins; a flipped pair splits by strength",
}


def number(x: float | None) -> float | str | None:
    """JSON-safe: None or NaN (not compared) -> None, infinities -> "inf"/"-inf"."""
    if x is None or math.isnan(x):
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
        wa, wb = verdict_wins(v, variant)
        out[h, a, b] += wa
        out[h, b, a] += wb
    return out


def record_counts(verdicts: Iterable[PairVerdict], name: str) -> tuple[int, int, int]:
    mine = [v for v in verdicts if name in (v.a, v.b)]
    wins, ties = sum(v.winner() == name for v in mine), sum(v.outcome == TIE for v in mine)
    return wins, ties, len(mine) - wins - ties


def _bounds(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the defined samples, as ``bootstrap_intervals`` takes it (NaN: none)."""
    got = samples[np.isfinite(samples)]
    if not got.size:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    return float(np.quantile(got, tail, method="lower")), float(np.quantile(got, 1.0 - tail, method="higher"))


def verdict_wins(v: PairVerdict, variant: str) -> tuple[float, float]:
    """The wins of a and of b in a verdict, as the win matrices count them."""
    if variant == "strength":
        return v.weight_a, v.weight_b
    if v.outcome == TIE:
        return 0.5, 0.5
    return (1.0, 0.0) if v.outcome == "a" else (0.0, 1.0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


def histories_of(verdicts: Iterable[PairVerdict], name: str) -> int:
    """The histories with a verdict of ``name``'s: the n of its rating's small-n rule."""
    return len({v.history_id for v in verdicts if name in (v.a, v.b)})


def length_fit(
    verdicts: list[PairVerdict], competitors: list[str], variant: str, *, prior: float, reps: int, seed: int
) -> dict[str, Any]:
    """The length-controlled fit of ``verdicts`` (one dimension), with its resamples of histories: strengths
    (natural log, centred), gamma, and both per resample; the histories' places and the resamples' draws."""
    index = {c: i for i, c in enumerate(competitors)}
    hids = sorted({v.history_id for v in verdicts})
    h_index = {h: i for i, h in enumerate(hids)}
    wins = [verdict_wins(v, variant) for v in verdicts]
    draws = history_draws(len(hids), reps, seed)
    fit = length_controlled_bt(
        [index[v.a] for v in verdicts],
        [index[v.b] for v in verdicts],
        [w[0] for w in wins],
        [w[1] for w in wins],
        [v.words_a - v.words_b for v in verdicts],
        [h_index[v.history_id] for v in verdicts],
        len(competitors),
        prior=prior,
        counts=draws,
    )
    return {"fit": fit, "histories": len(hids), "verdicts": len(verdicts), "index": h_index, "draws": draws}


def rate_with_length(
    verdicts: list[PairVerdict],
    competitors: list[str],
    variant: str,
    *,
    prior: float,
    reps: int,
    seed: int,
    lengths: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per competitor: the raw rating with its interval, and the length-controlled one (``lc_``); and the
    fit's length term (gamma with its interval, the verdicts and histories);
    ``lengths``: ``length_fit`` of the same verdicts, when it has been made already."""
    per = cluster_matrices(verdicts, competitors, variant)
    ratings = fit_bradley_terry(per.sum(0), prior=prior) if len(per) else np.full(len(competitors), np.nan)
    low, high = bootstrap_intervals(per, prior=prior, reps=reps, seed=seed)
    got = lengths or length_fit(verdicts, competitors, variant, prior=prior, reps=reps, seed=seed)
    fit = got["fit"]
    lc = to_elo(fit.theta)
    lc_boot = to_elo(fit.boot_theta)
    rows = []
    for i, c in enumerate(competitors):
        wins, ties, losses = record_counts(verdicts, c)
        n_hist = histories_of(verdicts, c)
        small = too_small(n_hist)
        lc_low, lc_high = _bounds(lc_boot[:, i]) if lc_boot.size else (math.nan, math.nan)
        rows.append(
            {
                "competitor": c,
                "rating": number(ratings[i]),
                "low": None if small else number(low[i]),
                "high": None if small else number(high[i]),
                "pairs": wins + ties + losses,
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "histories": n_hist,
                "lc_rating": number(lc[i]),
                "lc_low": None if small else number(lc_low),
                "lc_high": None if small else number(lc_high),
            }
        )
    g_low, g_high = _bounds(fit.boot_gamma) if fit.boot_gamma.size else (math.nan, math.nan)
    small = too_small(got["histories"])
    term = {
        "variant": variant,
        "gamma": number(fit.gamma),
        "low": None if small else number(g_low),
        "high": None if small else number(g_high),
        "length_sd": number(fit.scale),
        "verdicts": got["verdicts"],
        "histories": got["histories"],
    }
    return sorted(rows, key=lambda r: -r["rating"] if isinstance(r["rating"], float) else math.inf), term


def scopes(
    verdicts: list[PairVerdict], judges: list[str], people: list[PairVerdict] | None = None
) -> list[tuple[str, str, list[PairVerdict]]]:
    """(judge, "pooled" or "humans", subset or "all", verdicts) for every combination that has verdicts; with a
    single subset, "all" alone (the subset's scope would be the same). ``people``: the human judgments, rated
    as one more source beside the judges (never pooled with them)."""
    people = people or []
    subsets = [ALL, *sorted(named)] if len(named := {v.subset for v in [*verdicts, *people]}) > 1 else [ALL]
    groups = [(j, [v for v in verdicts if j == POOLED or v.rater == j])
              for j in ([POOLED, *judges] if len(judges) > 1 else judges)]  # fmt: skip
    if people:
        groups.append((HUMANS, people))
    out = []
    for name, mine in groups:
        for subset in subsets:
            vs = [v for v in mine if subset in (ALL, v.subset)]
            if vs:
                out.append((name, subset, vs))
    return out


def win_rates_vs_human(
    verdicts: list[PairVerdict],
    competitors: list[str],
    *,
    variant: str = "plain",
    prior: float = 0.1,
    reps: int = 0,
    seed: int = 0,
    lengths: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each competitor's win rate against the human reply (ties count half) with an interval over histories,
    and beside it the length-controlled win rate (``lc_``): the length-controlled model's P(beats the human)
    at length difference 0, fitted on all of ``verdicts`` (one dimension), with its interval from the same
    resamples (``lengths``: that fit, when it has been made already). Under ``MIN_N`` histories with the
    competitor against the human: no intervals."""
    got = lengths or length_fit(verdicts, competitors, variant, prior=prior, reps=reps, seed=seed)
    fit, h_index, draws = got["fit"] if verdicts else None, got["index"], got["draws"]
    index = {c: i for i, c in enumerate(competitors)}
    rows = []
    for c in competitors:
        if c == HUMAN:
            continue
        vs = [v for v in verdicts if {v.a, v.b} == {c, HUMAN}]
        wins, ties, losses = record_counts(vs, c)
        n = wins + ties + losses
        n_hist = len({v.history_id for v in vs})
        small = too_small(n_hist)
        low, high = _resampled_win_rate(vs, c, h_index, draws) if draws is not None and vs else (math.nan, math.nan)
        lc = lc_low = lc_high = math.nan
        if fit is not None and HUMAN in index:
            diff = fit.theta[index[c]] - fit.theta[index[HUMAN]]
            lc = float(_sigmoid(np.asarray(diff)))
            if fit.boot_theta.size:
                lc_low, lc_high = _bounds(_sigmoid(fit.boot_theta[:, index[c]] - fit.boot_theta[:, index[HUMAN]]))
        rows.append(
            {
                "competitor": c,
                "pairs": n,
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "win_rate": number((wins + 0.5 * ties) / n) if n else None,
                "low": None if small or not n else number(low),
                "high": None if small or not n else number(high),
                "histories": n_hist,
                "lc_win_rate": number(lc) if n else None,
                "lc_low": None if small or not n else number(lc_low),
                "lc_high": None if small or not n else number(lc_high),
            }
        )
    return rows


def _resampled_win_rate(
    vs: list[PairVerdict], c: str, h_index: dict[str, int], draws: np.ndarray
) -> tuple[float, float]:
    """The interval of ``c``'s win rate in ``vs`` (ties count half) over the resamples of histories ``draws``."""
    score, pairs = np.zeros(len(h_index)), np.zeros(len(h_index))
    for v in vs:
        score[h_index[v.history_id]] += 0.5 if v.outcome == TIE else float(v.winner() == c)
        pairs[h_index[v.history_id]] += 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return _bounds((draws @ score) / (draws @ pairs))


def compute_ratings(
    comparisons: Iterable[Comparison],
    competitors: list[str],
    judges: list[str],
    keys: list[str],
    *,
    prior: float = 0.1,
    reps: int = 200,
    seed: int = 0,
    people: list[PairVerdict] | None = None,
) -> dict[str, Any]:
    """Everything the ratings report shows, as plain data; ``people``: the human judgments, rated beside the
    judges as ``humans``."""
    verdicts, _, counts = combine_orders(comparisons)
    ratings: list[dict[str, Any]] = []
    vs_human: list[dict[str, Any]] = []
    length_terms: list[dict[str, Any]] = []
    for judge, subset, vs in scopes(verdicts, judges, people):
        for key in keys:
            dim_vs = [v for v in vs if v.dimension == key]
            scope = {"judge": judge, "subset": subset, "dimension": key}
            fits = {v: length_fit(dim_vs, competitors, v, prior=prior, reps=reps, seed=seed) for v in VARIANTS}
            for variant in VARIANTS:
                rows, term = rate_with_length(
                    dim_vs, competitors, variant, prior=prior, reps=reps, seed=seed, lengths=fits[variant]
                )
                ratings += [{**scope, "variant": variant, **row} for row in rows]
                if dim_vs:
                    length_terms.append({**scope, **term})
            if HUMAN in competitors:
                rows = win_rates_vs_human(dim_vs, competitors, prior=prior, reps=reps, seed=seed, lengths=fits["plain"])
                vs_human += [{**scope, **row} for row in rows]
    return {
        "competitors": competitors,
        "judges": judges,
        "dimensions": keys,
        "prior": prior,
        "bootstrap": reps,
        "variants": VARIANTS,
        "ratings": ratings,
        "win_rates_vs_human": vs_human,
        "length_terms": length_terms,
        "order_consistency": _consistency_rows(verdicts),
        "counts": dict(counts),
    }


def _consistency_rows(verdicts: list[PairVerdict]) -> list[dict[str, Any]]:
    """Order consistency, the share of pairs whose winner did not flip with the order: per judge over all
    dimensions, then per judge and dimension (judges sorted, dimensions in their order)."""
    n: Counter[tuple[str, str]] = Counter()
    same: Counter[tuple[str, str]] = Counter()
    for v in verdicts:
        for key in ((v.rater, ALL), (v.rater, v.dimension)):
            n[key] += 1
            same[key] += v.outcome != TIE
    return [{"judge": j, "dimension": d, "pairs": n[(j, d)], "consistent": same[(j, d)],
             "rate": number(same[(j, d)] / n[(j, d)])}
            for j, d in sorted(n, key=lambda k: (k[1] != ALL, k[0]))]  # fmt: skip
