"""Judge-human agreement (with and without ties, Cohen's kappa), the human-human ceiling, and
Krippendorff's alpha, per dimension. Judges' verdicts are pair verdicts (both orders combined, a
flip is a tie); humans' are their rows as given."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
from typing import Any

from .ratings import POOLED, number
from .stats import agreement, cohen_kappa, krippendorff_alpha
from .verdicts import TIE, PairVerdict

ALL_DIMS = "all"
Item = tuple[str, str, str, str]


def human_verdicts(
    rows: Iterable[dict[str, Any]], subsets: dict[str, str], words: dict[tuple[str, str], int] | None = None
) -> list[PairVerdict]:
    """Human judgment rows as pair verdicts (``words``: each reply's word count, for the length-controlled fit)."""
    words = words or {}
    out = []
    for r in rows:
        hid, s = r["history_id"], float(r["strength"] or 1)
        outcome = TIE if r["winner"] == "tie" else ("a" if r["winner"] == r["a"] else "b")
        out.append(PairVerdict(hid, subsets.get(hid, ""), r["a"], r["b"], r["rater"], r["dimension"], outcome,
                               s if outcome == "a" else 0.0, s if outcome == "b" else 0.0,
                               words.get((hid, r["a"]), 0), words.get((hid, r["b"]), 0)))  # fmt: skip
    return out


def _by_item(verdicts: Iterable[PairVerdict]) -> dict[Item, list[PairVerdict]]:
    out: dict[Item, list[PairVerdict]] = defaultdict(list)
    for v in verdicts:
        out[v.item].append(v)
    return out


def _summary(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    with_ties, n = agreement(pairs)
    no_ties, n_no_ties = agreement(pairs, ignore=TIE)
    return {"pairs": n, "agree_with_ties": number(with_ties), "pairs_without_ties": n_no_ties,
            "agree_without_ties": number(no_ties), "kappa": number(cohen_kappa(pairs))}  # fmt: skip


def judge_human(
    judge_vs: list[PairVerdict], human_vs: list[PairVerdict], judges: list[str], keys: list[str]
) -> list[dict[str, Any]]:
    """Every (judge verdict, human vote) on the same item and dimension is one pair of labels."""
    humans = _by_item(human_vs)
    rows = []
    for judge in ([POOLED] if len(judges) > 1 else []) + judges:
        for key in [*keys, ALL_DIMS]:
            pairs = [
                (jv.outcome, hv.outcome)
                for jv in judge_vs
                if (judge == POOLED or jv.rater == judge) and key in (ALL_DIMS, jv.dimension)
                for hv in humans.get(jv.item, [])
            ]
            rows.append({"judge": judge, "dimension": key, **_summary(pairs)})
    return rows


def human_ceiling(human_vs: list[PairVerdict], keys: list[str]) -> list[dict[str, Any]]:
    """Human-human agreement: every two distinct raters of the same item and dimension."""
    items = _by_item(human_vs)
    rows = []
    for key in [*keys, ALL_DIMS]:
        pairs = [
            (x.outcome, y.outcome)
            for item, vs in items.items()
            if key in (ALL_DIMS, item[3])
            for x, y in combinations(vs, 2)
            if x.rater != y.rater
        ]
        multi = sum(1 for item, vs in items.items() if key in (ALL_DIMS, item[3]) and len({v.rater for v in vs}) > 1)
        rows.append({"dimension": key, "items_with_several_raters": multi, **_summary(pairs)})
    return rows


def alphas(
    judge_vs: list[PairVerdict], human_vs: list[PairVerdict], judges: list[str], keys: list[str]
) -> list[dict[str, Any]]:
    """Krippendorff's alpha (nominal: a / b / tie): among humans, and with each judge as one more rater."""
    humans = _by_item(human_vs)
    judged = _by_item(judge_vs)
    rows = []
    for key in [*keys, ALL_DIMS]:
        items = [i for i in humans if key in (ALL_DIMS, i[3])]
        row: dict[str, Any] = {"dimension": key}
        row["humans"] = number(krippendorff_alpha([[v.outcome for v in humans[i]] for i in items]))
        for judge in judges:
            units = [
                [v.outcome for v in humans[i]] + [v.outcome for v in judged.get(i, []) if v.rater == judge]
                for i in items
            ]
            row[f"humans+{judge}"] = number(krippendorff_alpha(units))
        rows.append(row)
    return rows
