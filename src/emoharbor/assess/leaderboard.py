"""The leaderboard of an EmoHarbor run: per supporter, each dimension's mean with a bootstrap 95%
interval, generic vs personal means and their gap, the change in emotion intensity, the supporter's words a
message (beside every score: a judge that rewards length is seen), termination reasons, unscored counts, and
tokens and cost per role."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..simulate.conversation import Conversation
from ..stats.bootstrap import bootstrap_ci, holm, paired_difference, shown
from ..store import records
from ..store.run_store import RunStore
from .dimensions import group_keys, keys
from .evidence import OUTCOMES, assessment_evidence

LENGTH = "words"  # the supporter's mean words a message in a conversation: a row and a difference of every board


def _row_means(scores: list[dict[str, int | None]], dims: list[str] | None = None) -> list[float]:
    """Each record's mean over ``dims`` (None: over every dimension it has, as a one-question card's)."""
    out = []
    for s in scores:
        vals = [s[d] for d in (dims if dims is not None else list(s)) if s.get(d) is not None]
        if vals:
            out.append(float(np.mean(vals)))  # type: ignore[arg-type]
    return out


def _usage_by_supporter(calls: list[records.Call]) -> dict[str, dict[str, dict[str, float]]]:
    """Calls, tokens and cost per supporter and role, from the calls of each supporter's units (those of
    attempts done again among them): ``tokens`` and ``cost_usd`` spent, ``cached_tokens`` and
    ``cached_cost_usd`` from the cache."""
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    for c in calls:
        if c.table not in ("conversation", "assessment"):  # keyed (profile, supporter, repeat[, judge])
            continue
        u = out[c.unit[1]][c.role]
        u["calls"] += 1
        pre = "cached_" if c.cached else ""
        u[pre + "tokens"] += c.tokens
        u[pre + "cost_usd"] += c.cost_usd
    return out


def differences(convs: list[Conversation], under: dict[str, dict[str, Any] | None], dim_keys: list[str], base: str,
                *, seed: int) -> dict[str, dict[str, dict[str, Any]]]:  # fmt: skip
    """Each supporter minus ``base`` on the same profiles and repeats: per dimension and for the overall, generic
    and personal means, a paired bootstrap over the pairs, P(difference > 0), and Holm-adjusted p across the
    dimensions (the group means are not in that family); and the supporter's words a message (``LENGTH``), over
    the pairs of conversations both supporters wrote in, scored or not."""
    by = {(c.supporter, c.profile_id, c.repeat): under.get(c.id) for c in convs}
    lengths = {(c.supporter, c.profile_id, c.repeat): c.supporter_words for c in convs}
    groups = {"overall": None, "generic": group_keys("generic"), "personal": group_keys("personal")}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for sup in sorted({c.supporter for c in convs} - {base}):
        pairs = [(s, b) for (who, pid, rep), s in by.items()
                 if who == sup and s is not None and (b := by.get((base, pid, rep))) is not None]  # fmt: skip
        cells: dict[str, dict[str, Any]] = {}
        for d in dim_keys:
            diffs = [s[d] - b[d] for s, b in pairs if s.get(d) is not None and b.get(d) is not None]
            cells[d] = paired_difference(diffs, seed=seed)
        for name, ds in groups.items():
            diffs = [m[0] - n[0] for s, b in pairs if (m := _row_means([s], ds)) and (n := _row_means([b], ds))]
            cells[name] = paired_difference(diffs, seed=seed)
        for d, p in zip(dim_keys, holm([cells[d]["p"] for d in dim_keys]), strict=True):
            cells[d]["p_holm"] = p
        longer = [w - w0 for (who, pid, rep), w in lengths.items()
                  if who == sup and w is not None and (w0 := lengths.get((base, pid, rep))) is not None]  # fmt: skip
        cells[LENGTH] = paired_difference(longer, seed=seed)
        out[sup] = cells
    return out


@dataclass(frozen=True)
class RunResults:
    """What an EmoHarbor run's leaderboards are made of, read from its store once (each record decoded once) and
    shared by every judge's board (the report makes one per judge)."""

    conversations: list[Conversation]
    assessments: list[records.Assessment]
    usage: dict[str, dict[str, dict[str, float]]]  # supporter -> role -> calls, tokens, cost
    supporters: list[str]  # in the run config's order
    usage_by_role: dict[str, dict[str, float]]
    events: dict[str, int]

    @classmethod
    def read(cls, store: RunStore) -> RunResults:
        order = [str(s.get("name") or "") for s in (store.config().get("roles") or {}).get("supporter") or []]
        return cls([Conversation.model_validate(d) for _, d in store.items("conversation")],
                   records.assessments(store), _usage_by_supporter(records.calls(store)), order,
                   store.usage_by_role(), store.event_counts())  # fmt: skip


def leaderboard(results: RunResults, judge: str = "user", seed: int = 0, scoring: str = "argmax",
                baseline: str | None = None) -> dict[str, Any]:  # fmt: skip
    """``judge``'s leaderboard of a run (``RunResults.read(store)``). ``scoring``: the judge's written integers,
    or its probability-weighted scores (``expected``; an assessment without them counts as unscored here).
    ``baseline``: the supporter the others are compared with, pair by pair (default: the run's first
    supporter)."""
    convs = results.conversations
    assessments = {a.conversation: a for a in results.assessments if a.judge == judge}
    under = {k: a.under(scoring) for k, a in assessments.items()}
    # the 10 dimensions, or the dimensions of the judge card's own rubric (one, for a one-question card)
    seen = {d for sc in under.values() if sc for d in sc}
    dim_keys = [*keys(), *sorted(seen - set(keys()))]
    names = sorted({c.supporter for c in convs})
    rows = [_supporter_row(sup, [c for c in convs if c.supporter == sup], assessments, under, dim_keys,
                           results.usage.get(sup, {}), seed) for sup in names]  # fmt: skip
    rows.sort(key=lambda r: -(r["overall"]["mean"] if r["overall"]["mean"] is not None else -99))
    sups = [s for s in results.supporters if any(c.supporter == s for c in convs)] or names
    base = baseline or (sups[0] if sups else None)
    if base is not None and sups and base not in sups:
        raise ValueError(f"--baseline {base!r} is not a supporter of this run; its supporters: {', '.join(sups)}")
    return {"judge": judge, "scoring": scoring, "baseline": base,
            "differences": differences(convs, under, dim_keys, base, seed=seed) if base is not None else {},
            "dimension_keys": dim_keys, "judges": sorted({a.judge for a in results.assessments}), "rows": rows,
            "usage_by_role": results.usage_by_role, "events": results.events}  # fmt: skip


def _supporter_row(sup: str, mine: list[Conversation], assessments: dict[str, records.Assessment],
                   under: dict[str, dict[str, Any] | None], dim_keys: list[str], usage: dict[str, dict[str, float]],
                   seed: int) -> dict[str, Any]:  # fmt: skip
    """One supporter's row of the board, from its conversations ``mine``."""
    generic, personal = group_keys("generic"), group_keys("personal")
    scored = [s for c in mine if (s := under.get(c.id)) is not None]
    dims = {d: bootstrap_ci([s[d] for s in scored if s.get(d) is not None], seed=seed) for d in dim_keys}
    gaps = [a - b for a, b in zip(_row_means(scored, generic), _row_means(scored, personal), strict=False)]
    changes = [c.intensity_change for c in mine if c.intensity_change is not None]
    evidence: Counter[str] = Counter({k: 0 for k in OUTCOMES})
    for c in mine:
        evidence.update(assessment_evidence(assessments.get(c.id), c))
    return {
        "supporter": sup,
        "conversations": len(mine),
        "scored": len(scored),
        "unscored": sum(1 for c in mine if c.id in assessments and under[c.id] is None),
        "not_assessed": sum(1 for c in mine if c.id not in assessments),
        "dimensions": {d: shown(e) for d, e in dims.items()},
        "generic": shown(bootstrap_ci(_row_means(scored, generic), seed=seed)),
        "personal": shown(bootstrap_ci(_row_means(scored, personal), seed=seed)),
        "gap": shown(bootstrap_ci(gaps, seed=seed)),
        "overall": shown(bootstrap_ci(_row_means(scored), seed=seed)),
        "intensity_change": shown(bootstrap_ci(changes, seed=seed)),
        LENGTH: shown(bootstrap_ci([w for c in mine if (w := c.supporter_words) is not None], seed=seed)),
        "evidence": dict(evidence),
        "terminations": dict(Counter(c.termination for c in mine)),
        "events": dict(Counter(ev for c in mine for ev, _ in c.events)),
        "usage": {role: dict(v) for role, v in usage.items()},
    }
