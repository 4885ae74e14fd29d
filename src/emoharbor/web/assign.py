"""Who rates what: every item to ``overlap`` raters (the least loaded first), every attention check to
every rater, each rater's new items shuffled after their existing queue, and for each rater and pair
which reply is shown as A."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

from .study import Study


def assign(study: Study, overlap: int, seed: int) -> dict[str, int]:
    """Give every item without ``overlap`` raters yet to the least-loaded raters that lack it, and
    every attention check to every rater; new work goes after a rater's existing queue, shuffled."""
    items, raters = study.items(), [r.id for r in study.raters()]
    with study.transaction() as db:
        have: dict[str, set[str]] = defaultdict(set)
        for rid, iid in db.execute("SELECT rater_id, item_id FROM assignments"):
            have[iid].add(rid)
        rng = random.Random(f"{seed}|{len(raters)}|{sum(len(v) for v in have.values())}")
        load = Counter(rid for it in items if not it.attention for rid in have[it.id])
        new: dict[str, list[str]] = defaultdict(list)
        got: Counter[str] = Counter()  # new raters per item
        order = [it for it in items if not it.attention]
        rng.shuffle(order)
        for it in order:
            free = sorted((r for r in raters if r not in have[it.id]), key=lambda r: (load[r], rng.random()))
            for rid in free[: max(0, overlap - len(have[it.id]))]:
                new[rid].append(it.id)
                load[rid] += 1
                got[it.id] += 1
        for it in items:
            if it.attention:
                for rid in raters:
                    if rid not in have[it.id]:
                        new[rid].append(it.id)
        for rid, ids in new.items():
            rng.shuffle(ids)
            start = db.execute("SELECT COALESCE(MAX(position), 0) FROM assignments WHERE rater_id=?",
                               (rid,)).fetchone()[0]  # fmt: skip
            for k, iid in enumerate(ids, start + 1):
                db.execute("INSERT INTO assignments (rater_id, item_id, position, first) VALUES (?, ?, ?, ?)",
                           (rid, iid, k, rng.choice("ab")))  # fmt: skip
    short = sum(1 for it in order if len(have[it.id]) + got[it.id] < overlap)
    return {"new_assignments": sum(len(v) for v in new.values()), "items_short_of_overlap": short}
