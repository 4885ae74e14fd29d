"""Breakdowns by profile attribute: where each supporter's personal scores fall below its own average.

The score is the user-judge's mean over the personal dimensions of one conversation. For each attribute
value (problem type, hidden need type, and each Big Five trait high (>= 0.67) or low (<= 0.33); moderate
values are left out) and supporter: the mean, n, and the difference from that supporter's mean over all
its conversations. A red cell is a kind of person the supporter serves worse than it usually does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..assess.dimensions import group_keys
from ..profiles.schema import Profile
from ..profiles.stats import TRAITS
from ..store.records import Assessment
from ..tables import num
from .html import esc, heat, note, table
from .runs import RunView


def attributes(p: Profile) -> list[tuple[str, str]]:
    out = [("problem type", p.situation.problem_type), ("hidden need", p.needs.hidden_need_type)]
    for t in TRAITS:
        v = float(getattr(p.personality, t))
        if v >= 0.67:
            out.append((t, "high"))
        elif v <= 0.33:
            out.append((t, "low"))
    return out


def personal_score(a: Assessment | None) -> float | None:
    if a is None or not a.scored:
        return None
    vals = [v for k in group_keys("personal") if (v := a.scores.get(k)) is not None]
    return float(np.mean(vals)) if vals else None


def breakdown(view: RunView, judge: str = "user") -> dict[str, Any]:
    """{"baseline": {supporter: mean}, "cells": {(attribute, value): {supporter: (mean, n)}}}"""
    per_sup: dict[str, list[float]] = defaultdict(list)
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in view.conversations:
        s = personal_score(view.assessments.get(c.id, {}).get(judge))
        p = view.profiles.get(c.profile_id)
        if s is None or p is None:
            continue
        per_sup[c.supporter].append(s)
        for attr in attributes(p):
            groups[attr][c.supporter].append(s)
    baseline = {k: float(np.mean(v)) for k, v in per_sup.items()}
    cells = {g: {sup: (float(np.mean(v)), len(v)) for sup, v in by.items()} for g, by in groups.items()}
    return {"baseline": baseline, "cells": cells}


def breakdowns_html(view: RunView, judge: str = "user") -> str:
    if not view.profiles:
        return note("no profiles available for this run, so no breakdowns")
    data = breakdown(view, judge)
    sups = sorted(data["baseline"])
    if not sups:
        return note(f"no conversation scored by the judge '{judge}', so no breakdowns")
    rows = []
    weakest: dict[str, list[tuple[float, str]]] = defaultdict(list)
    order = sorted(data["cells"], key=lambda g: (g[0] not in ("problem type", "hidden need"), g))
    for attr, value in order:
        row: list[str | tuple[str, str]] = [esc(attr), esc(value)]
        for sup in sups:
            got = data["cells"][(attr, value)].get(sup)
            if got is None:
                row.append('<span class="na">-</span>')
                continue
            mean, n = got
            delta = mean - data["baseline"][sup]
            weakest[sup].append((delta, f"{attr}: {value} ({num(mean)}, n={n})"))
            html = f'<span data-sort="{delta:.6f}">{num(mean)}</span> <small>n={n}, {num(delta, signed=True)}</small>'
            row.append((html, heat(delta, 1.0)))
        rows.append(row)
    header = ["attribute", "value", *[f"{esc(s)} <small>(avg {num(data['baseline'][s])})</small>" for s in sups]]
    spots = "".join(
        f"<li><b>{esc(s)}</b>: "
        + (esc("; ".join(t for d, t in sorted(weakest[s])[:3] if d < 0)) or "no attribute value below its average")
        + "</li>"
        for s in sups
    )
    return (
        f'<p class="hint">Personal-dimension mean by the {esc(judge)} judge per attribute value; the small '
        "figure is the difference from the supporter's own average (red: worse than usual).</p>"
        + table(header, rows, cls="breakdown")
        + f"<p><b>Where each supporter personalises worst</b></p><ul>{spots}</ul>"
    )
