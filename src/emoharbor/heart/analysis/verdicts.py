"""From single judgements to pair verdicts: the two orders of a pair combined, a flip made a tie.

A pair verdict needs both orders scored; a pair with one order scored is counted and left out (its
only verdict would carry the judge's position bias). A judge whose card reads probability-weighted scores
(``strength_expected`` in its verdicts) weighs wins by that strength; a verdict whose expected strength
could not be read leaves the pair's dimension out, counted as ``verdicts_strength_unreadable``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ...store.records import Comparison

A, B, TIE = "a", "b", "tie"
HUMANS = "humans"  # the people, as a rater of the reports (beside each judge and the judges pooled)


@dataclass(frozen=True)
class PairVerdict:
    history_id: str
    subset: str
    a: str
    b: str
    rater: str  # a judge's name, or a human rater's id
    dimension: str
    outcome: str  # "a" | "b" | "tie"
    weight_a: float = 0.0  # strength-weighted wins of a (summed over the orders a won)
    weight_b: float = 0.0
    words_a: int = 0
    words_b: int = 0

    @property
    def item(self) -> tuple[str, str, str, str]:
        return (self.history_id, self.a, self.b, self.dimension)

    def winner(self) -> str | None:
        return self.a if self.outcome == A else self.b if self.outcome == B else None


@dataclass(frozen=True)
class OrderVerdict:
    """One scored judgement in one order, for position bias."""

    judge: str
    dimension: str
    first_won: bool


def combine_orders(comparisons: Iterable[Comparison]) -> tuple[list[PairVerdict], list[OrderVerdict], Counter[str]]:
    counts: Counter[str] = Counter()
    groups: dict[tuple[str, str, str, str], dict[str, Comparison]] = defaultdict(dict)
    singles: list[OrderVerdict] = []
    for c in comparisons:
        counts[f"judgements_{c.status}"] += 1
        groups[(c.history_id, c.a, c.b, c.judge)][c.order] = c
        if c.status == "ok":
            for dim, v in c.verdicts.items():
                singles.append(OrderVerdict(c.judge, dim, v["winner"] == c.first))
    out: list[PairVerdict] = []
    for (hid, a, b, judge), orders in sorted(groups.items()):
        scored = [c for c in orders.values() if c.status == "ok"]
        if len(scored) < 2:
            counts["pairs_one_order_scored" if scored else "pairs_no_order_scored"] += 1
            continue
        counts["pairs_both_orders_scored"] += 1
        first = scored[0]
        for dim in first.verdicts:
            wins = [c.verdicts[dim] for c in scored]
            names = {w["winner"] for w in wins}
            outcome = TIE if len(names) > 1 else (A if a in names else B)
            strengths = [w.get("strength_expected", w["strength"]) for w in wins]
            if any(v is None for v in strengths):
                counts["verdicts_strength_unreadable"] += 1
                continue
            wa, wb = (sum(float(v) for w, v in zip(wins, strengths, strict=True) if w["winner"] == x) for x in (a, b))
            na, nb = (first.words.get(x, 0) for x in (a, b))
            out.append(PairVerdict(hid, first.subset, a, b, judge, dim, outcome, wa, wb, na, nb))
    return out, singles, counts
