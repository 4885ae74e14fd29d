"""What the admin page shows: progress per rater and per item, attention-check results, and agreement
so far (percent agreement and Cohen's kappa on the items two raters both submitted)."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from typing import Any

from ..assess.dimensions import keys as conversation_keys
from ..heart.analysis.stats import agreement, cohen_kappa
from .export import Rated, iso, rated
from .forms import PAIR, pair_keys, side_of
from .study import Item, Study

Labels = dict[tuple[str, str], dict[str, str]]  # (what is rated, dimension) -> item id -> label, for one rater


def attention_passed(item: Item, answers: dict[str, str], first: str) -> bool:
    """Whether a submitted attention check got its known answer."""
    exp = item.expect or {}
    value = answers.get(str(exp.get("field")))
    if "winner" in exp:
        return bool(side_of(value, first) == exp["winner"])
    return value is not None and value.isdigit() and int(value) <= int(exp["max"])


def rater_progress(study: Study, ratings: list[Rated]) -> list[dict[str, Any]]:
    assignments = study.assignments()
    queue = Counter(a.rater_id for a in assignments)
    done = Counter(r.assignment.rater_id for r in ratings)
    last: dict[str, float] = {}
    drafts: dict[str, set[str]] = defaultdict(set)
    submitted = {(r.assignment.rater_id, r.item.id) for r in ratings}
    for ans in study.all_answers():
        last[ans["rater_id"]] = max(last.get(ans["rater_id"], 0.0), ans["updated"])
        if (ans["rater_id"], ans["item_id"]) not in submitted:
            drafts[ans["rater_id"]].add(ans["item_id"])
    checks: dict[str, Counter[str]] = defaultdict(Counter)
    for r in ratings:
        if r.item.attention:
            ok = attention_passed(r.item, r.answers, r.assignment.first)
            checks[r.assignment.rater_id]["passed" if ok else "failed"] += 1
    attention_ids = {it.id for it in study.items() if it.attention}
    for a in assignments:
        if a.status != "submitted" and a.item_id in attention_ids:
            checks[a.rater_id]["pending"] += 1
    return [{"rater": r.name, "assigned": queue[r.id], "submitted": done[r.id], "drafts": len(drafts[r.id]),
             "last_activity": iso(last[r.id]) if r.id in last else "", "attention_passed": checks[r.id]["passed"],
             "attention_failed": checks[r.id]["failed"], "attention_pending": checks[r.id]["pending"]}
            for r in study.raters()]  # fmt: skip


def item_progress(study: Study, ratings: list[Rated]) -> list[dict[str, Any]]:
    assigned = Counter(a.item_id for a in study.assignments())
    done = Counter(r.item.id for r in ratings)
    return [{"item": it.id, "kind": it.rated, "attention": it.attention, "assigned": assigned[it.id],
             "submitted": done[it.id]} for it in study.items()]  # fmt: skip


def labels_by_rater(study: Study, ratings: list[Rated]) -> dict[str, Labels]:
    """Every rater's labels on non-attention items: pair sides ("a"/"b"/"tie") or conversation scores."""
    dims = pair_keys(study.heart_dimensions())
    out: dict[str, Labels] = defaultdict(lambda: defaultdict(dict))
    for r in ratings:
        if r.item.attention:
            continue
        if r.item.rated == PAIR:
            for d in dims:
                side = side_of(r.answers.get(f"choice.{d}"), r.assignment.first)
                if side is not None:
                    out[r.rater][(PAIR, d)][r.item.id] = side
        else:
            for d in conversation_keys():
                if f"score.{d}" in r.answers:
                    out[r.rater][("conversation", d)][r.item.id] = r.answers[f"score.{d}"]
    return out


def _stats(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    share, n = agreement(pairs)
    kappa = cohen_kappa(pairs)
    return {
        "labels_compared": n,
        "percent_agreement": round(100 * share, 1) if share is not None else None,
        "kappa": round(kappa, 3) if kappa is not None else None,
    }


def agreement_so_far(study: Study, ratings: list[Rated]) -> dict[str, list[dict[str, Any]]]:
    labels = labels_by_rater(study, ratings)
    between = []
    for x, y in combinations(sorted(labels), 2):
        for what in ("pair", "conversation"):
            keys = [k for k in labels[x] if k[0] == what and k in labels[y]]
            pairs = [(labels[x][k][i], labels[y][k][i]) for k in keys for i in labels[x][k] if i in labels[y][k]]
            shared = {i for k in keys for i in labels[x][k] if i in labels[y][k]}
            if pairs:
                between.append({"rater_1": x, "rater_2": y, "kind": what, "shared_items": len(shared), **_stats(pairs)})
    per_dim = []
    all_keys = sorted({k for lab in labels.values() for k in lab}, key=lambda k: (k[0] != PAIR, k[1]))
    for what, dim in all_keys:
        by_item: dict[str, list[str]] = defaultdict(list)
        for lab in labels.values():
            for item, value in lab.get((what, dim), {}).items():
                by_item[item].append(value)
        pairs = [p for vs in by_item.values() for p in combinations(vs, 2)]
        multi = sum(1 for vs in by_item.values() if len(vs) > 1)
        per_dim.append({"kind": what, "dimension": dim, "items_with_several_raters": multi, **_stats(pairs)})
    return {"between_raters": between, "per_dimension": per_dim}


def admin_data(study: Study) -> dict[str, Any]:
    ratings, counts = rated(study, include_attention=True)
    return {
        "raters": rater_progress(study, ratings),
        "items": item_progress(study, ratings),
        "agreement": agreement_so_far(study, ratings),
        "overlap": study.meta().get("overlap", ""),
        "drafts": counts["unsubmitted_drafts_left_out"],
    }
