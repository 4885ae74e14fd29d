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
counted. A judge whose assessments carry probability-weighted scores (``expected``) gets its rows twice:
scoring ``argmax`` (the integers it wrote) and ``expected``. Beside the judges:

- ``baselines``: what the turns a judge saw predict with no model at all (``baselines.py``: message
  lengths, turns, reply similarity), one row each per view some judge used, on every conversation;
- ``margins``: each judge's statistic minus the best baseline's (of the view that judge saw), on the
  conversations that judge scored, the best chosen anew in every resample;
- ``length_control``: for each judge row, what the score says beyond the length of the supporter's replies
  it saw (``LENGTH_FEATURE`` of that view): the partial Spearman rho with each seeker rating, the word count
  partialled out on ranks, and the cross-validated AUROC of a logistic regression on [words, score] minus
  that on words alone (``stats.length``), each with its bootstrap interval (the cross-validation redone in
  every resample);
- the simulated user's own intensity drop (first minus last state, the Chain-of-Agent's trajectory), a
  check of the inner state, and ``differences``: the user-judge minus the third-party judge on the
  conversations both scored.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

import numpy as np

from ..assess.dimensions import group_keys, keys
from ..simulate.coherence import total_coherence
from ..simulate.conversation import Conversation
from ..stats.bootstrap import Estimate
from ..stats.correlation import (
    RowStat,
    auroc_rows,
    bootstrap_many,
    bootstrap_rows,
    columns_rows,
    difference_rows,
    minus_best_rows,
    order_codes,
    spearman_rows,
)
from ..stats.length import cv_auroc_gain, partial_spearman_rows
from ..store import records
from ..store.records import Assessment
from ..store.run_store import RunStore
from .baselines import FEATURES, Features, baseline_features, views_used
from .pace import pace

TARGETS = ["empathy", "relevance", "intensity_drop", "not_failed"]
TARGET_LABELS = {
    "empathy": "rho vs seeker empathy",
    "relevance": "rho vs seeker relevance",
    "intensity_drop": "rho vs seeker intensity drop",
    "not_failed": "AUROC success vs failed",
}
LENGTH_FEATURE = "mean supporter words"  # the baseline every judge has lost to (docs/validate.md)
LENGTH_LABELS = {
    "empathy": "partial rho vs empathy | words",
    "relevance": "partial rho vs relevance | words",
    "intensity_drop": "partial rho vs intensity drop | words",
    "not_failed": "AUROC beyond length (words+judge − words)",
}
LENGTH_KEYS = {t: f"{t} | words" for t in TARGETS}  # the target column of the length-controlled rows in CSV
SCORES = ["overall", "generic", "personal", "relief"]
SCORINGS = ["argmax", "expected"]  # the integers a judge wrote; the probability-weighted scores
CHAIN_ROW = ("user (inner state)", "simulated intensity drop")

Judged = dict[str, dict[str, Assessment]]  # judge -> conversation -> assessment


def _mean(scores: dict[str, Any], dims: list[str]) -> float | None:
    vals = [float(scores[d]) for d in dims if scores.get(d) is not None]
    return float(np.mean(vals)) if vals else None


def score_of(scores: dict[str, Any], name: str) -> float | None:
    """``overall``: the mean of every dimension the judge's rubric has (one, for a one-question card)."""
    if name == "overall":
        return _mean(scores, list(scores))
    if name in ("generic", "personal"):
        return _mean(scores, group_keys(name))
    v = scores.get(name)
    return None if v is None else float(v)


def scorings_of(assessments: list[Assessment]) -> list[str]:
    """``argmax``, and ``expected`` too where some assessment has a probability-weighted score."""
    return SCORINGS if any(a.under("expected") is not None for a in assessments) else SCORINGS[:1]


def target_of(facts: dict[str, Any], name: str) -> float | None:
    if name == "not_failed":
        return 0.0 if facts["failed"] else 1.0
    v = facts.get("intensity_drop") if name == "intensity_drop" else facts["survey"].get(name)
    return None if v is None else float(v)


def _stat(target: str) -> RowStat:
    if target == "not_failed":
        return lambda scores, t: auroc_rows(scores, t.astype(bool))
    return spearman_rows


def _target_column(values: list[float], target: str) -> np.ndarray:
    # a rank correlation depends on the order of the values alone: order codes give the same, faster
    return np.array(values) if target == "not_failed" else order_codes(values)


def cell(stat: RowStat, items: list[tuple[Any, ...]], target: str, seed: int, n_boot: int) -> dict[str, Any]:
    """``stat`` on the items' columns (each item a tuple, the target last), with its paired bootstrap interval."""
    if not items:
        return asdict(Estimate(None, None, None, 0))
    columns = [order_codes([it[i] for it in items]) for i in range(len(items[0]) - 1)]
    columns.append(_target_column([it[-1] for it in items], target))
    return asdict(bootstrap_rows(stat, *columns, seed=seed, n_boot=n_boot))


def _row(judge: str, score: str, scoring: str, cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"judge": judge, "score": score, "scoring": scoring, "cells": cells}


Column = dict[str, float]  # conversation -> value (a conversation without one is left out)
Baselines = dict[str, tuple[float, ...]]  # conversation -> the baseline values beside a column's score
Label = tuple[str, str, str]  # (judge, score, scoring) of a judge column


def column_cells(
    ok: dict[str, Any], columns: list[Column], seed: int, n_boot: int, baselines: list[Baselines] | None = None
) -> list[dict[str, dict[str, Any]]]:
    """Each column's cell for every target: its statistic on the conversations with a value and the target
    (and, given ``baselines``, the column's statistic minus the best baseline's, on the conversations with
    baseline values). Columns on the same conversations are bootstrapped together: the same resamples as
    one by one (the draws depend on n and the seed alone), each computed once."""
    out: list[dict[str, dict[str, Any]]] = [{} for _ in columns]
    for t in TARGETS:
        targets = {k: v for k in ok if (v := target_of(ok[k]["esconv"], t)) is not None}
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, col in enumerate(columns):
            base = baselines[i] if baselines is not None else {}
            convs = [k for k in col if k in targets and (baselines is None or k in base)]
            groups.setdefault(tuple((k, base.get(k)) for k in convs), []).append(i)
        for key, members in groups.items():
            convs = [k for k, _ in key]
            x = order_codes(np.array([[columns[i][k] for i in members] for k in convs]))
            y = _target_column([targets[k] for k in convs], t)
            if baselines is None:
                got = bootstrap_many(columns_rows(_stat(t)), x, y, seed=seed, n_boot=n_boot)
            else:
                b = order_codes(np.array([v for _, v in key]))
                got = bootstrap_many(minus_best_rows(_stat(t)), x, b, y, seed=seed, n_boot=n_boot)
            for i, e in zip(members, got or [Estimate(None, None, None, 0)] * len(members), strict=True):
                out[i][t] = asdict(e)
    return out


def validation_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000, embedding: bool = True) -> dict[str, Any]:
    """The agreement table of a validate run. ``embedding=False`` leaves the reply-similarity baseline out
    (its rows stay, without values, and a note says so)."""
    replays = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
    ok = {k: d for k, d in replays.items() if d["termination"] != "error"}
    by_judge: Judged = {}
    for a in records.assessments(store):
        by_judge.setdefault(a.judge, {})[a.conversation] = a
    judges = sorted(by_judge, key=lambda j: (j != "user", j))
    views = views_used([a for j in judges for a in by_judge[j].values()])
    features, notes = baseline_features(replays, views, embedding=embedding)  # as score_rows: encoded once
    usable = [f for f in FEATURES if any(v.get(f) is not None for per in features.values() for v in per.values())]

    labels, columns, beside, lengths = _judge_columns(by_judge, judges, ok, features, usable)
    states = {k: d["states"] for k, d in ok.items() if len(d["states"]) >= 2}
    chain = {k: float(s[0]["intensity"] - s[-1]["intensity"]) for k, s in states.items()}
    shown = [(view, f) for view in views for f in FEATURES]
    base_cols = [{k: v for k, fs in features[view].items() if (v := fs.get(f)) is not None} for view, f in shown]
    cells = column_cells(ok, [*columns, chain, *base_cols], seed, n_boot)
    margin_cells = column_cells(ok, columns, seed, n_boot, beside)
    length_rows = [
        _row(*label, length_cells(ok, col, words, seed, n_boot))
        for label, col, words in zip(labels, columns, lengths, strict=True)
    ]
    rows = [_row(*label, c) for label, c in zip(labels, cells[: len(columns)], strict=True)]
    if chain:  # no row where no judge needed the simulated user to live through the replays
        rows.append(_row(*CHAIN_ROW, "", cells[len(columns)]))
    return {
        "targets": TARGETS,
        "target_labels": TARGET_LABELS,
        "rows": rows,
        "baselines": [
            _row(f"baseline ({view})", f, "", c) for (view, f), c in zip(shown, cells[len(columns) + 1 :], strict=True)
        ],
        "margins": [
            _row(f"{j} - best baseline", name, scoring, c)
            for (j, name, scoring), c in zip(labels, margin_cells, strict=True)
        ],
        "length_control": length_rows,
        "length_labels": LENGTH_LABELS,
        "differences": _difference_rows(by_judge, ok, judges, seed, n_boot),
        "counts": _counts(replays, ok, by_judge, judges, views, usable, notes),
        "pace": pace(ok, store.config(), seed=seed, n_boot=n_boot),
        "events": store.event_counts(),
        "usage_by_role": store.usage_by_role(),
        "config": store.config(),
        "wall_s": float(store.meta().get("wall_s", "0")),
        "seed": seed,
        "n_boot": n_boot,
    }


def _judge_columns(by_judge: Judged, judges: list[str], ok: dict[str, Any], features: Features,
                   usable: list[str]) -> tuple[list[Label], list[Column], list[Baselines], list[Column]]:  # fmt: skip
    """Each judge's columns, one per scoring and score its rubric has, on the replayed conversations: their
    labels (judge, score, scoring), the columns, the baselines beside each and the words the judge saw."""
    labels: list[Label] = []
    columns: list[Column] = []
    beside: list[Baselines] = []
    lengths: list[Column] = []  # the words of the supporter's replies each column's judge saw
    for judge in judges:
        judged = {k: a for k, a in by_judge[judge].items() if k in ok}
        for scoring in scorings_of(list(judged.values())):
            for name in SCORES:
                col = {k: v for k, a in judged.items() if (v := score_of(a.under(scoring) or {}, name)) is not None}
                if not col and name != "overall":  # a score the judge's rubric does not have (a one-question card)
                    continue
                labels.append((judge, name, scoring))
                columns.append(col)
                beside.append(_baselines_of(col, judged, features, usable))
                lengths.append(_length_of(col, judged, features))
    return labels, columns, beside, lengths


def _counts(replays: dict[str, Any], ok: dict[str, Any], by_judge: Judged, judges: list[str], views: list[str],
            usable: list[str], notes: list[str]) -> dict[str, Any]:  # fmt: skip
    """What the table rests on: the conversations, replays, judges' scores, views and baselines."""
    return {
        "conversations": len(replays),
        "replay_errors": len(replays) - len(ok),
        "failed": sum(1 for d in ok.values() if d["esconv"]["failed"]),
        "truncated": sum(1 for d in ok.values() if d["esconv"]["truncated"]),
        "supporter_turns_replayed": sum(d["esconv"]["supporter_turns_replayed"] for d in ok.values()),
        "supporter_turns_total": sum(d["esconv"]["supporter_turns_total"] for d in ok.values()),
        "by_source": dict(Counter(k.rsplit(":", 1)[0] for k in ok)),
        "coherence": asdict(
            total_coherence(Conversation.model_validate(d) for d in ok.values() if d.get("perceived", True))
        ),
        "judges": {
            j: {
                "scored": sum(1 for k, a in by_judge[j].items() if k in ok and a.scored),
                "unscored": sum(1 for k, a in by_judge[j].items() if k in ok and not a.scored),
                "not_assessed": sum(1 for k in ok if k not in by_judge[j]),
            }
            for j in judges
        },
        "saw": {j: views_used(list(by_judge[j].values())) for j in judges},
        "views": views,
        "margin_baselines": usable,
        "length_feature": LENGTH_FEATURE,
        "notes": notes,
    }


def _baselines_of(col: Column, judged: dict[str, Assessment], features: Features, usable: list[str]) -> Baselines:
    """The usable baselines of the view the judge saw, for each conversation of ``col`` that has them all."""
    out = {}
    for k in col:
        values = features.get(judged[k].saw, {}).get(k, {})
        b = tuple(values.get(f) for f in usable)
        if usable and None not in b:
            out[k] = tuple(float(v) for v in b if v is not None)
    return out


def _length_of(col: Column, judged: dict[str, Assessment], features: Features) -> Column:
    """``LENGTH_FEATURE`` of the view the judge saw, for each conversation of ``col`` that has it."""
    seen = {k: features.get(judged[k].saw, {}).get(k, {}).get(LENGTH_FEATURE) for k in col}
    return {k: float(v) for k, v in seen.items() if v is not None}


def length_cells(ok: dict[str, Any], col: Column, words: Column, seed: int, n_boot: int) -> dict[str, dict[str, Any]]:
    """A judge column's length-controlled cell for every target, on the conversations with a score, a word
    count and the target (in the column's order, as every other cell): for a seeker rating, the partial
    Spearman rho of the score with it, the word count partialled out; for ``not_failed``, the
    cross-validated AUROC of [words, score] minus that of [words] (``stats.length.cv_auroc_gain``). Both with
    the paired bootstrap's resamples (same seed, same draws)."""
    out = {}
    for t in TARGETS:
        got = {k: v for k in col if k in words and (v := target_of(ok[k]["esconv"], t)) is not None}
        x, z, y = [col[k] for k in got], [words[k] for k in got], list(got.values())
        if t == "not_failed":
            e = cv_auroc_gain(z, x, np.array(y, dtype=bool), seed=seed, n_boot=n_boot)
        elif got:
            e = bootstrap_rows(partial_spearman_rows, order_codes(x), order_codes(z), order_codes(y), seed=seed,
                               n_boot=n_boot)  # fmt: skip
        else:
            e = Estimate(None, None, None, 0)
        out[t] = asdict(e)
    return out


def _difference_rows(
    by_judge: Judged, ok: dict[str, Any], judges: list[str], seed: int, n_boot: int
) -> list[dict[str, Any]]:
    """The user-judge's overall statistic minus each other judge's, on the conversations both scored, for
    each scoring both have."""
    if "user" not in by_judge:
        return []
    user = by_judge["user"]
    out = []
    for other in [j for j in judges if j != "user"]:
        theirs = by_judge[other]
        for scoring in [s for s in scorings_of(list(theirs.values())) if s in scorings_of(list(user.values()))]:
            cells = {}
            for t in TARGETS:
                items = [
                    (x, y, z)
                    for k, a in user.items()
                    if k in ok and k in theirs
                    if (x := score_of(a.under(scoring) or {}, "overall")) is not None
                    and (y := score_of(theirs[k].under(scoring) or {}, "overall")) is not None
                    and (z := target_of(ok[k]["esconv"], t)) is not None
                ]
                cells[t] = cell(difference_rows(_stat(t)), items, t, seed, n_boot)
            out.append(_row(f"user - {other}", "overall", scoring, cells))
    return out


def score_rows(store: RunStore, *, embedding: bool = True) -> list[dict[str, Any]]:
    """One flat row per conversation and judge, for an analysis of one's own: the record, the seeker's
    survey, the simulated user's intensity trajectory, the baseline features of every view a judge used
    (``mean_supporter_words_replayed`` ...), and the judge's 10 scores with the group means (empty where
    unscored), with ``*_expected`` beside them where the judge gave probability-weighted scores. A
    conversation no judge has assessed yet has one row without a judge."""
    by_conv: dict[str, list[Assessment]] = {}
    for a in records.assessments(store):
        by_conv.setdefault(a.conversation, []).append(a)
    replays = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
    views = views_used([a for per in by_conv.values() for a in per])
    features, _notes = baseline_features(replays, views, embedding=embedding)
    out = []
    for key, d in replays.items():
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
            **{feature_column(f, view): features[view].get(key, {}).get(f) for view in views for f in FEATURES},
        }
        judged = sorted(by_conv.get(key, []), key=lambda a: (a.judge != "user", a.judge))
        if not judged:
            out.append(base)
        for a in judged:
            out.append({**base, "judge": a.judge, "unscored": not a.scored, "saw": a.saw, **_flat_scores(a)})
    return out


def feature_column(feature: str, view: str) -> str:
    return f"{feature.replace(' ', '_')}_{view}"


def _flat_scores(a: Assessment) -> dict[str, Any]:
    """The group means and the 10 scores, and the same with ``_expected`` where the record has ``expected``."""
    out: dict[str, Any] = {}
    for scoring in SCORINGS if a.expected is not None else SCORINGS[:1]:
        sc, suffix = a.under(scoring) or {}, "" if scoring == "argmax" else f"_{scoring}"
        out |= {f"{name}{suffix}": score_of(sc, name) for name in SCORES if name != "relief"}
        out |= {f"{k}{suffix}": sc.get(k) for k in keys()}
    return out


def export_tables(store: RunStore) -> dict[str, list[dict[str, Any]]]:
    """``validate_scores``: one flat row per conversation and judge, beside the seeker's own ratings."""
    return {"validate_scores": score_rows(store)}
