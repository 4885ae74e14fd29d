"""Every scorer of a HEART run against the people, on the same items, with 95% intervals from resampling
histories (the replies to one prompt go together), beside the baselines that need no model.

- **pairs** (any run with human judgments): the people's decided pairs (a person's tie is left out and
  counted). Per scorer, each pair's agreement counts both orders: a judge's verdict in each order, 1 when it
  names the people's choice, averaged over the two (a winner that flips with the order is 0.5, a tie, counted
  apart); a judge that chooses with probabilities (``p_first``: the seeker's choice) also as the probability it
  gives the people's choice, averaged over both orders; a card that rates one reply (``reply_score``), the
  higher-rated reply (equal scores: a tie, 0.5); the baseline ``longer reply``, the reply with more words.
  An order not scored, or a reply not rated, leaves the pair out for that scorer (``unscored``), never a guess,
  as does a pair the judge was not given (``not_asked``: a run's ``pairs: with_human`` gives it no pair of two
  models); the figures are on the pairs every scorer has (``pairs``), so they are comparable.
- **ratings** (a run imported from replies rated by people): Spearman's rho of each reply card's score, and of
  the baseline ``words`` (the reply's word count), with the reply's mean rating, on the replies every scorer has.

Every scorer's row also gives its paired margin over the baseline on the same items (``minus_baseline``: per
pair, the scorer's agreement minus the longer reply's; for rho, the difference of the two rhos), its interval
from the same resamples of histories, and whether it beats the baseline (``beats_baseline``: ``yes`` when the
interval lies above 0, ``below`` under it, ``no`` when it holds 0).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...stats.bootstrap import Estimate, margin_verdict, shown
from ...stats.clusters import cluster_mean_ci, item_draws, spearman_cluster_ci, weighted_spearman_rows
from ...stats.correlation import percentile, spearman
from ...store.records import Comparison
from ..histories import History
from .ratings import number

LONGER, WORDS = "longer reply", "words"
Value = Callable[[dict[str, Any]], float | None]  # a scorer's value on one item (None: it has none)


def _mean(d: dict[str, Any] | None) -> float | None:
    vals = [float(v) for v in (d or {}).values() if v is not None]
    return float(np.mean(vals)) if vals else None


def reply_values(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[tuple[str, str], float | None]]:
    """Per (card judge, reading): (history, competitor) -> the card's score of the reply (the mean of its rubric's
    keys), written and, for a card that reads probabilities, expected; None where it is unscored."""
    out: dict[tuple[str, str], dict[tuple[str, str], float | None]] = defaultdict(dict)
    for r in records:
        ok = r.get("status") == "ok"
        key = (r["history_id"], r["competitor"])
        out[(r["judge"], "written")][key] = _mean(r.get("scores")) if ok else None
        if "expected" in r:
            out[(r["judge"], "expected")][key] = _mean(r.get("expected")) if ok else None
    return out


def _higher(score: dict[tuple[str, str], float | None]) -> Value:
    def value(item: dict[str, Any]) -> float | None:
        mine, other = score.get((item["history_id"], item["winner"])), score.get((item["history_id"], item["other"]))
        if mine is None or other is None:
            return None
        return 1.0 if mine > other else 0.0 if mine < other else 0.5

    return value


def _judge(orders: dict[tuple[str, str, str, str], dict[str, Comparison]], judge: str, probability: bool) -> Value:
    def value(item: dict[str, Any]) -> float | None:
        got = orders.get((item["history_id"], item["a"], item["b"], judge), {})
        per = []
        for order in ("ab", "ba"):
            c = got.get(order)
            v = c.verdicts.get(item["dimension"]) if c is not None and c.status == "ok" else None
            if v is None:
                return None
            if not probability:
                per.append(float(v["winner"] == item["winner"]))
            elif v.get("p_first") is None:
                return None
            else:
                per.append(v["p_first"] if c is not None and c.first == item["winner"] else 1.0 - v["p_first"])
        return float(np.mean(per))

    return value


def _asked(orders: dict[tuple[str, str, str, str], dict[str, Comparison]], judge: str) -> Callable[[dict[str, Any]],
                                                                                                   bool]:  # fmt: skip
    """Whether the judge was given the pair in some order (a run's ``pairs:`` may leave some pairs out)."""
    return lambda item: (item["history_id"], item["a"], item["b"], judge) in orders


@dataclass(frozen=True)
class Scorer:
    name: str
    reading: str
    baseline: bool
    value: Value
    dimensions: frozenset[str] | None = None  # the dimensions it answers (None: any the people rated)
    asked: Callable[[dict[str, Any]], bool] | None = None  # whether it was given the pair (None: every pair)


def pair_scorers(comparisons: list[Comparison], judges: dict[str, frozenset[str]], replies: dict[tuple[str, str],
                 dict[tuple[str, str], float | None]], words: dict[tuple[str, str], int]) -> list[Scorer]:  # fmt: skip
    """Every pairwise scorer the run has: each judge (``judges``: the dimensions it answers), and with
    probabilities where its verdicts hold them; each reply card; the baseline."""
    orders: dict[tuple[str, str, str, str], dict[str, Comparison]] = defaultdict(dict)
    chooses: set[str] = set()
    for c in comparisons:
        orders[(c.history_id, c.a, c.b, c.judge)][c.order] = c
        if c.status == "ok" and any("p_first" in v for v in c.verdicts.values()):
            chooses.add(c.judge)
    out: list[Scorer] = []
    for j, dims in judges.items():
        asked = _asked(orders, j)
        out.append(Scorer(j, "verdicts, both orders", False, _judge(orders, j, False), dims, asked))
        if j in chooses:
            out.append(Scorer(j, "probability, both orders", False, _judge(orders, j, True), dims, asked))
    out += [Scorer(card, f"higher score ({reading})", False, _higher(v)) for (card, reading), v in replies.items()]
    length: dict[tuple[str, str], float | None] = {k: float(n) for k, n in words.items()}
    out.append(Scorer(LONGER, "more words", True, _higher(length)))
    return out


def decided_pairs(human_rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The people's pair judgments that name a winner (with the other reply), and their ties per dimension."""
    ties: dict[str, int] = defaultdict(int)
    out = []
    for r in human_rows:
        if r["winner"] == "tie":
            ties[r["dimension"]] += 1
        else:
            out.append({**r, "other": r["b"] if r["winner"] == r["a"] else r["a"]})
    return out, dict(ties)


def _common(values: dict[int, list[float | None]]) -> list[int]:
    """The items every scorer that has any value has a value for."""
    having = [vs for vs in values.values() if any(v is not None for v in vs)]
    n = len(next(iter(values.values()))) if values else 0
    return [i for i in range(n) if all(vs[i] is not None for vs in having)]


def _interval(e: Any, key: str, low: str = "low", high: str = "high") -> dict[str, Any]:
    s = shown(e)
    return {key: number(s["mean"]), low: number(s["lo"]), high: number(s["hi"])}


def _margin(e: Estimate | None) -> dict[str, Any]:
    """A scorer's paired margin over the baseline, and the verdict (a baseline's own row: none)."""
    if e is None:
        return {"minus_baseline": None, "minus_baseline_low": None, "minus_baseline_high": None,
                "beats_baseline": None}  # fmt: skip
    got = _interval(e, "minus_baseline", "minus_baseline_low", "minus_baseline_high")
    return {**got, "beats_baseline": margin_verdict(got["minus_baseline_low"], got["minus_baseline_high"])}


def _grouped(items: list[dict[str, Any]], values: list[tuple[int, float]]) -> list[list[float]]:
    """The values (item index, value) grouped by the history of their item."""
    groups: dict[str, list[float]] = defaultdict(list)
    for k, v in values:
        groups[items[k]["history_id"]].append(v)
    return list(groups.values())


def pair_table(human_rows: list[dict[str, Any]], comparisons: list[Comparison], judges: dict[str, frozenset[str]],
               reply_records: list[dict[str, Any]], words: dict[tuple[str, str], int], *, seed: int,
               n_boot: int) -> dict[str, Any]:  # fmt: skip
    """Every pairwise scorer's agreement with the people's decided pairs, per dimension the people rated."""
    decided, ties = decided_pairs(human_rows)
    scorers = pair_scorers(comparisons, judges, reply_values(reply_records), words)
    rows = []
    for dim in dict.fromkeys(r["dimension"] for r in human_rows):
        items = [r for r in decided if r["dimension"] == dim]
        mine = [sc for sc in scorers if sc.dimensions is None or dim in sc.dimensions]
        values = {i: [sc.value(item) for item in items] for i, sc in enumerate(mine)}
        common = _common(values)
        base = next((values[i] for i, sc in enumerate(mine) if sc.baseline), None)
        for i, sc in enumerate(mine):
            vs, asks = values[i], sc.asked or (lambda _: True)
            on = [(k, v) for k in common if (v := vs[k]) is not None]  # nothing: the scorer has no value
            groups = _grouped(items, on)
            e = cluster_mean_ci(groups, seed=seed, n_boot=n_boot)
            margin = None
            if base is not None and not sc.baseline:
                diffs = [(k, v - b) for k, v in on if (b := base[k]) is not None]
                margin = cluster_mean_ci(_grouped(items, diffs), seed=seed, n_boot=n_boot)
            rows.append({"dimension": dim, "scorer": sc.name, "reading": sc.reading, "baseline": sc.baseline,
                         "pairs": len(on), "histories": len(groups), **_interval(e, "agreement"),
                         **_margin(margin), "ties": sum(1 for _, v in on if v == 0.5),
                         "unscored": sum(1 for v, it in zip(vs, items, strict=True) if v is None and asks(it)),
                         "not_asked": sum(1 for it in items if not asks(it))})  # fmt: skip
    return {"rows": rows, "people_ties": ties, "decided": len(decided)}


def mean_ratings(histories: list[History]) -> dict[tuple[str, str, str], float]:
    """(history, competitor, dimension) -> the mean of the people's ratings of that reply."""
    got: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for h in histories:
        for r in h.ratings:
            got[(h.id, r.competitor, r.dimension)].append(r.score)
    return {k: float(np.mean(v)) for k, v in got.items()}


def rating_table(histories: list[History], reply_records: list[dict[str, Any]], words: dict[tuple[str, str], int],
                 *, seed: int, n_boot: int) -> list[dict[str, Any]]:  # fmt: skip
    """Spearman's rho of every reply card's score, and of the word count, with the people's mean rating of each
    reply, per dimension rated (none without ratings)."""
    ratings = mean_ratings(histories)
    scorers: list[tuple[str, str, bool, dict[tuple[str, str], float | None]]] = [
        (card, reading, False, v) for (card, reading), v in reply_values(reply_records).items()
    ]
    length: dict[tuple[str, str], float | None] = {k: float(n) for k, n in words.items()}
    scorers.append((WORDS, "word count", True, length))
    rows = []
    for dim in dict.fromkeys(k[2] for k in ratings):
        items = [k for k in ratings if k[2] == dim]
        values = {i: [s.get((h, c)) for h, c, _ in items] for i, (_, _, _, s) in enumerate(scorers)}
        common = _common(values)
        base = values[len(scorers) - 1]  # the word count, on every reply
        for i, (name, reading, baseline, _) in enumerate(scorers):
            vs = values[i]
            on = [(items[k], v) for k in common if (v := vs[k]) is not None]  # nothing: the scorer has no value
            x, y, hids = [v for _, v in on], [ratings[item] for item, _ in on], [item[0] for item, _ in on]
            e = spearman_cluster_ci(x, y, hids, seed=seed, n_boot=n_boot)
            margin = None if baseline else _rho_margin(x, [base[k] for k in common if vs[k] is not None], y, hids,
                                                       seed=seed, n_boot=n_boot)  # fmt: skip
            rows.append({"dimension": dim, "scorer": name, "reading": reading, "baseline": baseline,
                         "replies": len(on), "histories": e.n, **_interval(e, "spearman"), **_margin(margin),
                         "unscored": sum(1 for v in vs if v is None)})  # fmt: skip
    return rows


def _rho_margin(x: list[float], b: list[float | None], y: list[float], hids: list[str], *, seed: int,
                n_boot: int) -> Estimate:  # fmt: skip
    """Spearman's rho of ``x`` with ``y`` minus that of the baseline ``b``, on the same replies, with the
    interval of the difference over the same resamples of histories."""
    xa, ba, ya = (np.asarray(v, dtype=float) for v in (x, b, y))
    mine, theirs = spearman(xa, ya), spearman(ba, ya)
    value = None if mine is None or theirs is None else mine - theirs
    n = len(set(hids))
    if value is None or n < 2 or n_boot <= 0:
        return Estimate(value, None, None, n)
    draws = item_draws(hids, n_boot, seed)
    boots = weighted_spearman_rows(xa, ya, draws) - weighted_spearman_rows(ba, ya, draws)
    return percentile(value, boots, n, n_boot, 0.95)
