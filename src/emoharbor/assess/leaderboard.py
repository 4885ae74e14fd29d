"""The leaderboard of an EmoHarbor run: per supporter, each dimension's mean with a bootstrap 95%
interval, generic vs personal means and their gap, the change in emotion intensity, termination
reasons, unscored counts, and tokens and cost per role."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ..simulate.conversation import Conversation
from ..stats.bootstrap import Estimate, bootstrap_ci
from ..store import records
from ..store.run_store import RunStore
from .dimensions import group_keys, keys
from .evidence import KINDS, assessment_evidence


def _row_means(scores: list[dict[str, int | None]], dims: list[str] | None = None) -> list[float]:
    """Each record's mean over ``dims`` (None: over every dimension it has, as a one-question card's)."""
    out = []
    for s in scores:
        vals = [s[d] for d in (dims if dims is not None else list(s)) if s.get(d) is not None]
        if vals:
            out.append(float(np.mean(vals)))  # type: ignore[arg-type]
    return out


def _usage_by_supporter(store: RunStore) -> dict[str, dict[str, dict[str, float]]]:
    """Calls, tokens and cost per supporter and role, from the calls of each supporter's units (those of
    attempts done again among them): ``tokens`` and ``cost_usd`` spent, ``cached_tokens`` and
    ``cached_cost_usd`` from the cache."""
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    for c in store.calls():
        parts = (c["unit_key"] or "").split("|")
        if len(parts) < 3:
            continue
        u = out[parts[1]][c["role"]]
        u["calls"] += 1
        pre = "cached_" if c["cached"] else ""
        u[pre + "tokens"] += (c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0)
        u[pre + "cost_usd"] += c["cost_usd"] or 0.0
    return out


def leaderboard(store: RunStore, judge: str = "user", seed: int = 0, scoring: str = "argmax") -> dict[str, Any]:
    """``scoring``: the judge's written integers, or its probability-weighted scores (``expected``; an
    assessment without them counts as unscored here)."""
    convs = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    assessments = {a.conversation: a for a in records.assessments(store) if a.judge == judge}
    under = {k: a.under(scoring) for k, a in assessments.items()}
    # the 10 dimensions, or the dimensions of the judge card's own rubric (one, for a one-question card)
    seen = {d for sc in under.values() if sc for d in sc}
    dim_keys = [*keys(), *sorted(seen - set(keys()))]
    usage = _usage_by_supporter(store)
    generic, personal = group_keys("generic"), group_keys("personal")
    rows: list[dict[str, Any]] = []
    for sup in sorted({c.supporter for c in convs}):
        mine = [c for c in convs if c.supporter == sup]
        scored = [s for c in mine if (s := under.get(c.id)) is not None]
        dims = {d: bootstrap_ci([s[d] for s in scored if s.get(d) is not None], seed=seed) for d in dim_keys}
        g = bootstrap_ci(_row_means(scored, generic), seed=seed)
        p = bootstrap_ci(_row_means(scored, personal), seed=seed)
        gaps = [a - b for a, b in zip(_row_means(scored, generic), _row_means(scored, personal), strict=False)]
        changes = [c.intensity_change for c in mine if c.intensity_change is not None]
        evidence: Counter[str] = Counter({k: 0 for k in KINDS})
        for c in mine:
            evidence.update(assessment_evidence(assessments.get(c.id), c))
        rows.append(
            {
                "supporter": sup,
                "conversations": len(mine),
                "scored": len(scored),
                "unscored": sum(1 for c in mine if c.id in assessments and under[c.id] is None),
                "not_assessed": sum(1 for c in mine if c.id not in assessments),
                "dimensions": {d: _est(e) for d, e in dims.items()},
                "generic": _est(g),
                "personal": _est(p),
                "gap": _est(bootstrap_ci(gaps, seed=seed)),
                "overall": _est(bootstrap_ci(_row_means(scored), seed=seed)),
                "intensity_change": _est(bootstrap_ci(changes, seed=seed)),
                "evidence": dict(evidence),
                "terminations": dict(Counter(c.termination for c in mine)),
                "events": dict(Counter(ev for c in mine for ev, _ in c.events)),
                "usage": {role: dict(v) for role, v in usage.get(sup, {}).items()},
            }
        )
    rows.sort(key=lambda r: -(r["overall"]["mean"] if r["overall"]["mean"] is not None else -99))
    judges = sorted({a.judge for a in records.assessments(store)})
    return {
        "judge": judge,
        "scoring": scoring,
        "dimension_keys": dim_keys,
        "judges": judges,
        "rows": rows,
        "usage_by_role": store.usage_by_role(),
        "events": store.event_counts(),
    }


def _est(e: Estimate) -> dict[str, Any]:
    return {"mean": e.value, "lo": e.lo, "hi": e.hi, "n": e.n}
