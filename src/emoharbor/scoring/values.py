"""The scorers' values read back from a run's ``score`` records, and what each scorer cost.

- the simulated user (``user``): ``user reward`` and ``user reaction`` (the reward without its rule-based
  penalties: relief, trust and fit weighted), and ``user fit``, ``user relief``, ``user trust`` apart; with
  ``(expected)`` the same from the probability-weighted readouts, where the records have them;
- a reply card: ``CARD (written)`` / ``CARD (expected)``, the mean of its rubric's keys.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..reward.score import combine
from ..reward.settings import RewardSettings
from ..store.records import calls as stored_calls
from ..store.run_store import RunStore
from .names import USER

Values = dict[tuple[str, str], float | None]  # (case, reply: real or a maker) -> score (None: unscored)


def _mean(d: dict[str, Any] | None) -> float | None:
    vals = [float(v) for v in (d or {}).values() if v is not None]
    return float(np.mean(vals)) if vals else None


def reaction(parts: dict[str, Any], s: RewardSettings) -> float:
    """The reward's weighted reaction, without its penalties."""
    return combine(float(parts["relief"]), float(parts["trust"]), float(parts["fit"]), [], s)


def user_values(records: list[dict[str, Any]], s: RewardSettings) -> dict[str, Values]:
    """The simulated user's scorers from its ``score`` records: the reward and the reaction from the written
    parts, and (where the records have them) from the probability-weighted ones."""
    out: dict[str, Values] = defaultdict(dict)
    # no expected rows where no record has them: none is made up from the written
    suffixes = ("", " (expected)") if any(r.get("expected") for r in records) else ("",)
    for r in records:
        k = (r["case"], r["reply_kind"])
        ok = r.get("status") == "ok" and r.get("reward") is not None
        hit = list(r.get("penalties") or [])
        cost = -combine(0.0, 0.0, 0.0, hit, s)
        if ok and hit == ["empty"]:  # not shown to the user: its reward is the penalty alone
            for suffix in suffixes:
                out[f"user reward{suffix}"][k] = -cost
            continue
        for suffix in suffixes:
            parts = (r.get("expected") if suffix else r) if ok else None
            whole = parts is not None and all(parts.get(p) is not None for p in ("relief", "trust", "fit"))
            felt = reaction(parts, s) if whole and parts is not None else None
            out[f"user reward{suffix}"][k] = None if felt is None else felt - cost
            out[f"user reaction{suffix}"][k] = felt
            for p in ("fit", "relief", "trust"):
                out[f"user {p}{suffix}"][k] = parts.get(p) if parts is not None else None
    return out


def card_values(records: list[dict[str, Any]]) -> dict[str, Values]:
    out: dict[str, Values] = defaultdict(dict)
    for r in records:
        k = (r["case"], r["reply_kind"])
        ok = r.get("status") == "ok"
        out[f"{r['scorer']} (written)"][k] = _mean(r.get("scores")) if ok else None
        if "expected" in r:
            out[f"{r['scorer']} (expected)"][k] = _mean(r.get("expected")) if ok else None
    return out


def record_values(records: list[dict[str, Any]], s: RewardSettings) -> dict[str, Values]:
    """Every scorer's values from ``score`` records: the simulated user's, then each reply card's."""
    return {**user_values([r for r in records if r.get("scorer") == USER], s),
            **card_values([r for r in records if r.get("scorer") != USER])}  # fmt: skip


def scorer_usage(store: RunStore) -> dict[str, dict[str, float]]:
    """Per scorer (the third part of a unit's key: case, reply, scorer[, order]): calls, calls that reached a
    model, model time, cost."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "requests": 0, "model_s": 0.0, "cost_usd": 0.0})
    for c in stored_calls(store):
        if c.table not in ("score", "pair"):
            continue
        u = out[c.unit[2]]
        u["calls"] += 1
        if not c.cached:
            u["requests"] += 1
            u["model_s"] += c.latency_s
            u["cost_usd"] += c.cost_usd
    return dict(out)


def usage_text(u: dict[str, float] | None) -> str:
    if not u:
        return "-"
    cost = f", ${u['cost_usd']:.4f}" if u["cost_usd"] else ""
    return f"{int(u['calls'])} calls, {u['model_s']:.0f} s{cost}"
