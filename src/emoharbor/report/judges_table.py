"""`emoharbor judges RUN...`: the table a user reads before choosing a judge, one row per judge and scoring
across the runs given.

- From validate runs: AUROC (success vs failed) and Spearman's rho with the seeker's empathy, of the
  judge's overall score, and its AUROC margin over the best baseline that needs no model (judge minus best
  baseline, on the same conversations and resamples). Where a judge is in several validate runs, the run
  with the most conversations gives the figures (named in the row).
- From HEART runs: order consistency (the share of pairs whose winner does not flip with the order shown)
  and length bias (the share of decided verdicts won by the longer reply; 0.5 = none).
- From sensitivity runs: how often the judge prefers the real reply to a rule-made bad one (the share of
  pairs over every kind of bad reply, ties half, with its bootstrap interval) and its tie rate; the
  simulated user's reward is the judge "user" (expected: from its probability-weighted readouts). Where a
  judge is in several sensitivity runs, the run with the most cases gives the figures (named in the row).
- From seekers runs: how well the judge agrees with the seekers' own ratings of single replies (Spearman's
  rho, and the within-talk pairwise agreement), each with whether its margin over the best baseline lies above
  0; the simulated user's reward is the judge "user". The run with the most points gives the figures.
- From every run: judgments made, the unscored share, and tokens and seconds per judgment (seconds from
  the calls that reached a model, not the cache).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..store import records
from ..store.keys import Key
from ..store.run_store import RunStore

# where the judge stands in the key of each kind of judgment: an assessment's key is its conversation's, then
# the judge; a HEART comparison's (history, a, b, judge, order); a sensitivity score's (case, reply kind,
# scorer), a pair's (case, bad kind, judge, order)
JUDGE_PART = {"assessment": -1, "comparison": 3, "score": 2, "pair": 2}


def _cost(store: RunStore, kind: str) -> dict[str, dict[str, float]]:
    """Tokens, seconds and calls per judge name, from the calls of ``kind`` units (``JUDGE_PART``)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    timed: dict[str, set[Key]] = defaultdict(set)  # the judgments whose calls reached a model
    for c in records.calls(store):
        if c.unit_kind != kind or not c.unit:
            continue
        judge = c.unit[JUDGE_PART[kind]]
        u = out[judge]
        u["tokens"] += c.tokens
        if not c.cached:
            u["seconds"] += c.latency_s
            u["model_calls"] += 1
            timed[judge].add(c.unit)
    for judge, keys in timed.items():
        out[judge]["timed"] = len(keys)
    return out


def _cell(c: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if c is None else {k: c.get(k) for k in ("value", "lo", "hi", "n")}


def _validate_rows(store: RunStore, folder: Path, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    from ..validate.analysis import validation_table  # only validate runs need it

    data = validation_table(store)
    margins = {(r["judge"].removesuffix(" - best baseline"), r["score"], r["scoring"]): r for r in data["margins"]}
    n_convs = data["counts"]["conversations"]
    for r in data["rows"]:
        if r["score"] != "overall" or not r.get("scoring"):
            continue
        row = rows[(r["judge"], r["scoring"])]
        if row.get("validate_n", -1) >= n_convs:
            continue
        m = margins.get((r["judge"], "overall", r["scoring"]))
        row.update(
            validate_run=str(folder),
            validate_n=n_convs,
            auroc=_cell(r["cells"]["not_failed"]),
            rho_empathy=_cell(r["cells"]["empathy"]),
            auroc_margin=_cell(m["cells"]["not_failed"]) if m else None,
        )


def _heart_rows(folder: Path, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    from ..heart.analysis.reports import agreement_report, ratings_report
    from ..heart.stages.pipeline import read_run

    store, config, base = read_run(folder)
    try:
        report = ratings_report(store, config, bootstrap=0)["order_consistency"]
        consistency = {r["judge"]: r for r in report if r["dimension"] == "all"}
        bias = {r["rater"]: r for r in agreement_report(store, config, base)["bias"]}
    finally:
        store.close()
    for j in config.judges:
        row = rows[(j.name, "argmax")]
        c, b = consistency.get(j.name), bias.get(j.name)
        row.update(
            heart_run=str(folder),
            order_consistency=c["rate"] if c else None,
            order_pairs=c["pairs"] if c else 0,
            longer_wins=b["longer_wins"] if b else None,
        )


def sensitivity_judge(scorer: str, pairwise: bool) -> tuple[str, str] | None:
    """The (judge, scoring) a sensitivity row stands for: the simulated user's reward is "user", a reply
    card's written and expected scores its argmax and expected scoring, a pairwise judge argmax; None for
    the other rows (the word count, the user's parts)."""
    if pairwise:
        return scorer, "argmax"
    if scorer in ("user reward", "user reward (expected)"):
        return "user", "expected" if scorer.endswith("(expected)") else "argmax"
    for suffix, scoring in ((" (written)", "argmax"), (" (expected)", "expected")):
        if scorer.endswith(suffix) and not scorer.startswith("user "):
            return scorer.removesuffix(suffix), scoring
    return None


def _scorer_rows(store: RunStore, kinds: tuple[str, ...], figures: list[dict[str, Any]],
                 rows: dict[tuple[str, str], dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:  # fmt: skip
    """The rows of a run whose units are scorers' ``kinds`` (a sensitivity or seekers run), keyed by the
    (judge, scoring) each figure row stands for: each row's card, judgments, unscored share and cost added
    in; returns the figure row of each."""
    from ..sensitivity.names import USER

    cards: dict[str, Any] = json.loads(store.meta().get("judges", "{}"))
    made = {}
    for r in figures:
        got = sensitivity_judge(r["scorer"], bool(r.get("pairwise")))
        if got is not None:
            made[got] = r
    judged: dict[str, list[bool]] = defaultdict(list)
    cost: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for kind in kinds:
        for _, d in store.items(kind):
            judged[d["scorer"]].append(d.get("status") != "ok")
        for judge, u in _cost(store, kind).items():
            for k, v in u.items():
                cost[judge][k] += v
    for judge, scoring in made:
        scorer = USER if judge == "user" else judge
        row = rows[(judge, scoring)]
        card = cards.get(scorer, {})
        row.setdefault("judge", judge)
        row.setdefault("scoring", scoring)
        row.setdefault("card", card.get("version", ""))
        row.setdefault("sees", card.get("sees", ""))
        flags = judged.get(scorer, [])
        row["judgments"] = row.get("judgments", 0) + len(flags)
        row["unscored"] = row.get("unscored", 0) + sum(flags)
        u = cost.get(scorer, {})
        for k in ("tokens", "seconds", "model_calls", "timed"):
            row[k] = row.get(k, 0.0) + u.get(k, 0.0)
    return made


def _sensitivity_rows(store: RunStore, folder: Path, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    from ..sensitivity.analysis import sensitivity_table
    from ..sensitivity.names import ALL

    data = sensitivity_table(store)
    for key, r in _scorer_rows(store, ("score", "pair"), data["rows"], rows).items():
        row = rows[key]
        if row.get("sensitivity_n", -1) >= data["cases"]:
            continue
        c = r[ALL]
        row.update(
            sensitivity_run=str(folder),
            sensitivity_n=data["cases"],
            sensitivity={"value": c["share"], "lo": c["lo"], "hi": c["hi"], "n": c["n"]},
            sensitivity_ties=r["tie_rate"],
            sensitivity_pairs=r["pairs"],
        )


def _seekers_rows(store: RunStore, folder: Path, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    """A seekers run's figures: rho with the seekers' per-reply ratings and the within-talk pairwise agreement,
    with whether each beats the best baseline (the run with the most points gives them)."""
    from ..seekers.analysis import seekers_table

    data = seekers_table(store)
    for key, r in _scorer_rows(store, ("score",), data["rows"], rows).items():
        row = rows[key]
        if row.get("seekers_n", -1) >= data["points"]:
            continue
        beats = {"rho": r["rho_beats"], "pairs": r["pairs_beats"]}
        row.update(seekers_run=str(folder), seekers_n=data["points"], seekers_rho=_cell(r["rho"]),
                   seekers_pairs=_cell(r["pairs"]), seekers_beats=beats)  # fmt: skip


SCORER_RUNS = {"sensitivity": _sensitivity_rows, "seekers": _seekers_rows}


def judges_table(folders: list[Path]) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for folder in folders:
        store = RunStore.open_existing(folder)
        try:
            kind = store.meta().get("kind")
            if kind in SCORER_RUNS:
                SCORER_RUNS[kind](store, folder, rows)
                continue
            cards: dict[str, Any] = json.loads(store.meta().get("judges", "{}"))
            if kind == "heart":  # a HEART run records its judges' card versions in its config
                cards = {j: {"version": v} for j, v in store.config().get("judge_cards", {}).items()}
            judged: dict[str, list[bool]] = defaultdict(list)
            unit_kind = "comparison" if kind == "heart" else "assessment"
            for _, d in store.items(unit_kind):
                unscored = d["status"] != "ok"
                judged[d["judge"]].append(bool(unscored))
            cost = _cost(store, unit_kind)
            for judge, flags in judged.items():
                card = cards.get(judge, {})
                scorings = ["argmax", "expected"] if card.get("scoring") == "expected" else ["argmax"]
                for scoring in scorings:
                    row = rows[(judge, scoring)]
                    row.setdefault("judge", judge)
                    row.setdefault("scoring", scoring)
                    row.setdefault("card", card.get("version", ""))
                    row.setdefault("sees", card.get("sees", ""))
                    row["judgments"] = row.get("judgments", 0) + len(flags)
                    row["unscored"] = row.get("unscored", 0) + sum(flags)
                    u = cost.get(judge, {})
                    row["tokens"] = row.get("tokens", 0.0) + u.get("tokens", 0.0)
                    row["seconds"] = row.get("seconds", 0.0) + u.get("seconds", 0.0)
                    row["model_calls"] = row.get("model_calls", 0.0) + u.get("model_calls", 0.0)
                    row["timed"] = row.get("timed", 0.0) + u.get("timed", 0.0)
            if kind == "validate":
                _validate_rows(store, folder, rows)
        finally:
            store.close()
        if kind == "heart":
            _heart_rows(folder, rows)
    out = []
    for (judge, scoring), row in sorted(rows.items()):
        if "judgments" not in row:
            continue
        n = row["judgments"]
        out.append(
            {
                **row,
                "judge": judge,
                "scoring": scoring,
                "unscored_rate": row["unscored"] / n if n else None,
                "tokens_per_judgment": row["tokens"] / n if n else None,
                # model time of the judgments that reached a model (those served from the cache took none)
                "seconds_per_judgment": row["seconds"] / row["timed"] if row["timed"] else None,
            }
        )
    return out


def _fmt(c: dict[str, Any] | None) -> str:
    if not c or c.get("value") is None:
        return "-"
    if c.get("lo") is None:
        return f"{c['value']:.2f} (n={c['n']})"
    return f"{c['value']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}] n={c['n']}"


def _preference(r: dict[str, Any]) -> str:
    """The sensitivity cell: the share of pairs where the real reply is preferred, its interval and n, the
    tie rate."""
    c = r.get("sensitivity")
    if not c or c.get("value") is None:
        return "-"
    ties = r.get("sensitivity_ties")
    tail = f", ties {ties:.0%}" if ties is not None else ""
    if c.get("lo") is None:
        return f"{c['value']:.0%} (n={c['n']}{tail})"
    return f"{c['value']:.0%} [{c['lo']:.0%}, {c['hi']:.0%}] n={c['n']}{tail}"


def _seekers(r: dict[str, Any]) -> str:
    """The seekers cell: rho and the within-talk pairwise agreement, each with whether it beats the best
    baseline."""
    if r.get("seekers_rho") is None:
        return "-"
    beats = r["seekers_beats"]
    return (f"rho {_fmt(r['seekers_rho'])} (beats baselines: {beats['rho']}); pairs {_fmt(r['seekers_pairs'])} "
            f"(beats baselines: {beats['pairs']})")  # fmt: skip


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


HEADER = [
    "judge", "scoring", "sees", "AUROC success vs failed", "rho vs seeker empathy", "AUROC minus best baseline",
    "HEART order consistency", "HEART longer wins", "prefers the real reply", "agrees with the seekers",
    "judgments", "unscored",
    "tokens / judgment", "seconds / judgment", "card",
]  # fmt: skip


def table_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            r["judge"],
            r["scoring"],
            r.get("sees") or "-",
            _fmt(r.get("auroc")),
            _fmt(r.get("rho_empathy")),
            _fmt(r.get("auroc_margin")),
            _num(r.get("order_consistency"), ".2f"),
            _num(r.get("longer_wins"), ".2f"),
            _preference(r),
            _seekers(r),
            str(r["judgments"]),
            _num(r["unscored_rate"], ".0%"),
            _num(r["tokens_per_judgment"], ".0f"),
            _num(r["seconds_per_judgment"], ".1f"),
            r.get("card") or "-",
        ]
        for r in rows
    ]
