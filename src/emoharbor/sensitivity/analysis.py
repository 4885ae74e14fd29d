"""The sensitivity table, from a sensitivity run's store: for each scorer and bad-reply maker, the share of
cases where the real reply scores above the bad one.

A pointwise scorer (the word count, the simulated user's reward or reaction, a reply card) gives each case
and bad reply an outcome: 1 when the real reply scores higher, 0 when lower, 1/2 on a tie (ties are also counted
apart); a case where either reply is unscored is left out and counted. A pairwise judge's outcome is the
mean over its two orders of whether it chose the real reply: 1/2 when the orders disagree (the position
decided), counted as a tie. The share is the mean outcome over cases, with a bootstrap 95% interval
(cases resampled, fixed seed); ``all kinds``: the mean over every pair, cases resampled as clusters.

Scorers: ``words``, the reply's word count, the baseline that needs no model; the simulated user's and each
reply card's, from their ``score`` records (``scoring.values``: ``user reaction`` leaves out the reward's
rule-based penalties, which catch the ``repeats`` and ``role_break`` bad replies by rule and so say nothing of the
user's sensitivity); ``CARD``: a pairwise judge's overall verdict.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ..assess.judge_forms import judge_form
from ..reward.settings import RewardSettings
from ..scoring.names import REAL, USER
from ..scoring.values import Values, record_values, scorer_usage
from ..simulate.conversation import words
from ..stats.bootstrap import Estimate, bootstrap_ci, shown
from ..stats.clusters import cluster_mean_ci
from ..store.record import user_model
from ..store.run_store import RunStore
from .bad import MAKERS
from .names import ALL


def pair_outcomes(records: list[dict[str, Any]]) -> dict[str, dict[tuple[str, str], float | None]]:
    """Per pairwise judge, (case, maker) -> the mean over both orders of [real chosen] (None: an order is
    missing or unscored)."""
    by: dict[tuple[str, str, str], dict[str, bool | None]] = defaultdict(dict)
    for r in records:
        won = r["verdicts"]["overall"]["winner"] == REAL if r.get("status") == "ok" else None
        by[(r["scorer"], r["case"], r["bad_kind"])][r["order"]] = won
    out: dict[str, dict[tuple[str, str], float | None]] = defaultdict(dict)
    for (scorer, case, maker), orders in by.items():
        vals = [orders.get("ab"), orders.get("ba")]
        out[scorer][(case, maker)] = None if any(v is None for v in vals) else float(np.mean([bool(v) for v in vals]))
    return out


def outcomes_of(values: Values, maker: str) -> dict[str, float | None]:
    """Per case that has a reply of ``maker``: 1 real above, 0 below, 1/2 a tie, None either unscored."""
    out: dict[str, float | None] = {}
    for (c, k), bad in values.items():
        if k != maker:
            continue
        real = values.get((c, REAL))
        out[c] = None if real is None or bad is None else (1.0 if real > bad else 0.0 if real < bad else 0.5)
    return out


def _cell(outcomes: list[float | None], seed: int, n_boot: int) -> dict[str, Any]:
    scored = [o for o in outcomes if o is not None]
    e = bootstrap_ci(scored, n_boot=n_boot, seed=seed)
    return {**_share(e), "ties": sum(1 for o in scored if o == 0.5), "unscored": len(outcomes) - len(scored)}


def _share(e: Estimate) -> dict[str, Any]:
    """An estimate as the table shows it (``stats.bootstrap.shown``: no interval under the small-n rule)."""
    c = shown(e)
    return {"share": c["mean"], "lo": c["lo"], "hi": c["hi"], "n": c["n"]}


def finished_cases(store: RunStore, cases: dict[str, dict[str, Any]]) -> set[str]:
    """The cases whose every scorer has rated every reply (unscored counts as done): the table is made of
    those only, so that every scorer and the word count stand on the same items in a run not finished yet."""
    judges = json.loads(store.meta().get("judges", "{}"))
    rates = {name: judge_form(card["kind"]).rates for name, card in judges.items()}  # reply or pair
    scored, paired = store.keys("score"), store.keys("pair")
    user = bool(store.config().get("user"))
    out = set()
    for c, d in cases.items():
        replies = list(d["replies"])  # "real" and each bad reply, by its maker
        need = [(c, k, USER) for k in replies] if user else []
        need += [(c, k, name) for name in judges if rates[name] == "reply" for k in replies]
        pairs = [(c, k, name, o) for name in judges if rates[name] == "pair"
                 for k in replies if k != REAL for o in ("ab", "ba")]  # fmt: skip
        if all(k in scored for k in need) and all(k in paired for k in pairs):
            out.add(c)
    return out


def bad_makers(cfg: dict[str, Any]) -> list[str]:
    """The run's bad-reply makers, in the suite's order."""
    return [k for k in MAKERS if k in (cfg.get("bad") or MAKERS)]


def pointwise_values(cfg: dict[str, Any], cases: dict[str, dict[str, Any]],
                     scores: list[dict[str, Any]]) -> dict[str, Values]:  # fmt: skip
    """The pointwise scorers' values: the word count of every reply of ``cases``, then those of ``scores``."""
    s = RewardSettings.model_validate(cfg.get("reward") or {})
    lengths: Values = {(c, k): float(words(t)) for c, d in cases.items() for k, t in d["replies"].items()}
    return {"words": lengths, **record_values(scores, s)}


def sensitivity_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    cfg = store.config()
    stored = {d["id"]: d for _, d in store.items("case")}
    done = finished_cases(store, stored)
    cases = {k: d for k, d in stored.items() if k in done}
    makers = bad_makers(cfg)
    pointwise = pointwise_values(cfg, cases, [d for _, d in store.items("score") if d["case"] in done])
    pairwise = pair_outcomes([d for _, d in store.items("pair") if d["case"] in done])
    usage = scorer_usage(store)
    rows = []
    for name, values in pointwise.items():
        by_maker = {k: outcomes_of(values, k) for k in makers}
        distinct = len({v for v in values.values() if v is not None})
        rows.append(_row(name, makers, by_maker, seed, n_boot, distinct))
    for name, outs in pairwise.items():
        by_maker = {k: {c: o for (c, mm), o in outs.items() if mm == k} for k in makers}
        rows.append(_row(name, makers, by_maker, seed, n_boot, None, pairwise=True))
    for r in rows:
        base = r["scorer"].split(" (")[0]
        owner = USER if base.startswith("user") else base
        r["usage"] = usage.get(owner) if owner != "words" else None
    return {"kind": "sensitivity", "cases": len(cases), "unfinished": len(stored) - len(cases),
            "sources": dict(Counter(d["source"] for d in cases.values())), "kinds": makers, "rows": rows,
            "user_model": user_model(cfg), "suite": cfg.get("suite"),
            "wall_s": float(store.meta().get("wall_s", "0"))}  # fmt: skip


def _row(name: str, makers: list[str], by_maker: dict[str, dict[str, float | None]], seed: int, n_boot: int,
         distinct: int | None, pairwise: bool = False) -> dict[str, Any]:  # fmt: skip
    cells = {k: _cell(list(by_maker[k].values()), seed, n_boot) for k in makers}
    per_case: dict[str, list[float]] = defaultdict(list)  # each case's outcomes, in the order of ``makers``
    for k in makers:
        for c, o in by_maker[k].items():
            if o is not None:
                per_case[c].append(o)
    total = cluster_mean_ci([v for _, v in sorted(per_case.items())], seed=seed, n_boot=n_boot)
    allcell = {**_share(total), "ties": sum(cells[k]["ties"] for k in makers),
               "unscored": sum(cells[k]["unscored"] for k in makers)}  # fmt: skip
    pairs = sum(cells[k]["n"] for k in makers)
    return {"scorer": name, "pairwise": pairwise, "cells": cells, ALL: allcell, "distinct": distinct,
            "tie_rate": allcell["ties"] / pairs if pairs else None, "pairs": pairs}  # fmt: skip
