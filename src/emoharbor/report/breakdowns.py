"""Breakdowns by profile attribute: who each supporter fails.

The score of a conversation is the judge's mean over the personal dimensions (the user-judge's by default).
The attributes: problem type, hidden need type, each Big Five trait high (>= 0.67) or low (<= 0.33; moderate
values are left out), disclosure pace, age group, gender, culture and risk level. For each attribute value
and supporter a cell holds the mean over the conversations of such people with its 95% percentile bootstrap
interval (`stats.bootstrap.bootstrap_ci`, resampling conversations) and n, as the leaderboard does.

The small-n rule is the leaderboard's too: under ``MIN_N`` (5) conversations a cell shows the mean and "n too
small", with no interval, no difference and no colour, and is never cited. From ``MIN_N`` up a cell also
holds its difference from the supporter's own mean over all its scored conversations, and is coloured only
where its whole 95% interval lies on one side of that mean (taken as fixed): red below (people of this kind
the supporter serves worse than it usually does), green above. "Where each supporter personalises worst"
cites the cells of at least ``MIN_N`` conversations below the supporter's own mean, lowest first.

``breakdown`` returns plain data (JSON-ready); ``breakdown_html`` / ``render_breakdown`` show it as the
report's table or as text, Markdown, JSON or CSV (``emoharbor leaderboard RUN --by ATTRIBUTE``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..assess.dimensions import group_keys
from ..assess.render import no_scores
from ..profiles.schema import Profile
from ..profiles.stats import CATEGORICAL, TRAITS
from ..run_view import RunView
from ..stats.bootstrap import MIN_N, TOO_SMALL, bootstrap_ci, shown, too_small
from ..store.records import Assessment
from ..tables import csv_table, interval, nothing_measured, num, text_table
from .html import esc, heat, note, table

HIGH, LOW = 0.67, 0.33  # a trait at or above HIGH is "high", at or below LOW "low", between them left out


def _trait(name: str) -> Callable[[Profile], str | None]:
    def level(p: Profile) -> str | None:
        v = float(getattr(p.personality, name))
        return "high" if v >= HIGH else "low" if v <= LOW else None

    return level


# attribute name (as --by takes it) -> its value for a profile (None: the profile is left out of it)
ATTRIBUTES: dict[str, Callable[[Profile], str | None]] = {
    "problem_type": CATEGORICAL["problem_type"],
    "hidden_need_type": CATEGORICAL["hidden_need_type"],
    **{t: _trait(t) for t in TRAITS},
    "disclosure_pace": CATEGORICAL["disclosure_pace"],
    "age_group": CATEGORICAL["age_group"],
    "gender": CATEGORICAL["gender"],
    "culture": lambda p: p.culture or "(not given)",
    "risk_level": CATEGORICAL["risk_level"],
}
# values shown in this order (the others alphabetically after them)
ORDER = {
    "disclosure_pace": ["slow", "medium", "fast"],
    "risk_level": ["none", "low", "elevated", "high"],
    "age_group": ["under 18", "18-24", "25-39", "40-59", "60-74", "75+"],
    **{t: ["high", "low"] for t in TRAITS},
}


def label(attribute: str) -> str:
    """An attribute as people read it: ``hidden need type``."""
    return attribute.replace("_", " ")


def attribute_names(given: Sequence[str]) -> list[str]:
    """The attributes ``given`` (spelt with _, - or spaces; "all": every one), in the order of ``ATTRIBUTES``;
    an unknown one is a ValueError naming the valid ones."""
    wanted = {g.strip().lower().replace("-", "_").replace(" ", "_") for g in given}
    if "all" in wanted or not wanted:
        return list(ATTRIBUTES)
    unknown = sorted(wanted - set(ATTRIBUTES))
    if unknown:
        raise ValueError(f"no profile attribute {', '.join(unknown)}: choose from all, {', '.join(ATTRIBUTES)}")
    return [a for a in ATTRIBUTES if a in wanted]


def personal_score(a: Assessment | None, scoring: str = "argmax") -> float | None:
    scores = None if a is None else a.under(scoring)
    if scores is None:
        return None
    vals = [v for k in group_keys("personal") if (v := scores.get(k)) is not None]
    return float(np.mean(vals)) if vals else None


def _cell(values: list[float], average: float, seed: int) -> dict[str, Any]:
    e = bootstrap_ci(values, seed=seed)
    assert e.value is not None
    if too_small(e.n):
        return {"mean": e.value, "lo": None, "hi": None, "n": e.n, "difference": None, "side": None}
    assert e.lo is not None and e.hi is not None
    side = "below" if e.hi < average else "above" if e.lo > average else None
    return {"mean": e.value, "lo": e.lo, "hi": e.hi, "n": e.n, "difference": e.value - average, "side": side}


def _values(attribute: str, seen: set[str]) -> list[str]:
    order = ORDER.get(attribute, [])
    return sorted(seen, key=lambda v: (order.index(v) if v in order else len(order), v))


def breakdown(
    view: RunView, judge: str = "user", attributes: Sequence[str] = (), *, scoring: str = "argmax", seed: int = 0
) -> dict[str, Any]:
    """Per attribute value and supporter, the personal-dimension mean with its interval and n (see the module).

    ``{"judge", "scoring", "min_n", "attributes", "supporters", "baseline": {supporter: {mean, lo, hi, n}},
    "rows": [{"attribute", "value", "cells": {supporter: {mean, lo, hi, n, difference, side}}}]}``; a
    supporter with no conversation of an attribute value has no cell there. ``attributes``: names of
    ``ATTRIBUTES`` (default: all)."""
    names = attribute_names(attributes)
    per_sup: dict[str, list[float]] = defaultdict(list)
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in view.conversations:
        s = personal_score(view.assessments.get(c.id, {}).get(judge), scoring)
        p = view.profiles.get(c.profile_id)
        if s is None or p is None:
            continue
        per_sup[c.supporter].append(s)
        for attr in names:
            value = ATTRIBUTES[attr](p)
            if value is not None:
                groups[(attr, value)][c.supporter].append(s)
    sups = sorted(per_sup)
    baseline = {sup: bootstrap_ci(per_sup[sup], seed=seed) for sup in sups}
    average = {sup: float(np.mean(per_sup[sup])) for sup in sups}  # every supporter here has a scored conversation
    rows = []
    for attr in names:
        for value in _values(attr, {v for a, v in groups if a == attr}):
            by = groups[(attr, value)]
            cells = {sup: _cell(by[sup], average[sup], seed) for sup in sups if by.get(sup)}
            rows.append({"attribute": attr, "value": value, "cells": cells})
    return {
        "judge": judge,
        "scoring": scoring,
        "min_n": MIN_N,
        "attributes": names,
        "supporters": sups,
        "baseline": {s: shown(e) for s, e in baseline.items()},
        "rows": rows,
    }


def worst(data: dict[str, Any], supporter: str, k: int = 3) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(row, cell) of the ``k`` attribute values of at least ``MIN_N`` conversations where ``supporter`` falls
    furthest below its own mean."""
    got = [(r, c) for r in data["rows"] if (c := r["cells"].get(supporter)) and c["n"] >= MIN_N]
    below = [(r, c) for r, c in got if c["difference"] is not None and c["difference"] < 0]
    return sorted(below, key=lambda rc: rc[1]["difference"])[:k]


def _cell_text(c: dict[str, Any]) -> str:
    if too_small(c["n"]):
        return f"{num(c['mean'])} n={c['n']} ({TOO_SMALL})"
    mark = {"below": " (worse)", "above": " (better)"}.get(c["side"] or "", "")
    return f"{interval(c['mean'], c['lo'], c['hi'])} n={c['n']} {num(c['difference'], signed=True)}{mark}"


def _average_text(b: dict[str, Any]) -> str:
    return (
        f"{num(b['mean'])}, n={b['n']}, {TOO_SMALL}"
        if too_small(b["n"])
        else f"{interval(b['mean'], b['lo'], b['hi'])}, n={b['n']}"
    )


def _worst_text(data: dict[str, Any], supporter: str) -> str:
    cited = [f"{label(r['attribute'])}: {r['value']} ({_cell_text(c)})" for r, c in worst(data, supporter)]
    return "; ".join(cited) or f"no attribute value with n >= {MIN_N} below its average"


def _hint(data: dict[str, Any], *, colour: bool) -> str:
    how = (
        "coloured only where the whole interval lies below (red) or above (green) that average"
        if colour
        else "(worse) or (better) where the whole interval lies below or above that average"
    )
    return (
        f"Personal-dimension mean by the {data['judge']} judge per profile attribute value, with its 95% "
        f"bootstrap interval and n, and its difference from the supporter's own average; {how}. Under "
        f"{MIN_N} conversations only the mean is shown ({TOO_SMALL}): no interval, no difference, no colour."
    )


def render_breakdown(data: dict[str, Any], fmt: str = "text") -> str:
    """The breakdown as text or Markdown (one table per attribute), JSON (the data) or CSV (one row per cell)."""
    if fmt == "json":
        return json.dumps(data, indent=2)
    sups: list[str] = data["supporters"]
    if fmt == "csv":
        cols = ["attribute", "value", "supporter", "n", "mean", "lo", "hi", "difference", "side"]
        rows = [[r["attribute"], r["value"], s, *[c[k] for k in cols[3:]]] for r in data["rows"]
                for s in sups if (c := r["cells"].get(s))]  # fmt: skip
        return csv_table(cols, rows)
    if not sups:
        return nothing_measured(no_scores(data["judge"]))
    md = fmt == "md"
    head = "##" if md else "#"
    avg = [f"{s} (avg {_average_text(b)})" for s, b in data["baseline"].items()]
    parts = [f"{head} Breakdowns by profile attribute (judge: {data['judge']}, scoring: {data['scoring']})",
             _hint(data, colour=False), "Supporters: " + "; ".join(avg)]  # fmt: skip
    for attr in data["attributes"]:
        rows = [[r["value"], *[_cell_text(c) if (c := r["cells"].get(s)) else "-" for s in sups]]
                for r in data["rows"] if r["attribute"] == attr]  # fmt: skip
        if rows:
            parts += [f"{head}# {label(attr)}", text_table(["value", *sups], rows, md)]
    parts.append(f"{head} Where each supporter personalises worst")
    parts.append("\n".join(f"- {s}: {_worst_text(data, s)}" for s in sups))
    return "\n\n".join(parts)


def _cell_html(c: dict[str, Any]) -> str | tuple[str, str]:
    mean = f'<span data-sort="{c["mean"]:.6f}">{num(c["mean"])}</span>'
    if too_small(c["n"]):
        return f"{mean} <small>n={c['n']}, {TOO_SMALL}</small>"
    small = f"<small>[{num(c['lo'])}, {num(c['hi'])}] n={c['n']}, {num(c['difference'], signed=True)}</small>"
    return (f"{mean} {small}", heat(c["difference"], 1.0)) if c["side"] else f"{mean} {small}"


def breakdowns_html(view: RunView, judge: str = "user") -> str:
    if not view.profiles:
        return note("no profiles available for this run, so no breakdowns")
    data = breakdown(view, judge)
    sups: list[str] = data["supporters"]
    if not sups:
        return note(f"no conversation scored by the judge '{judge}', so no breakdowns")
    rows: list[list[str | tuple[str, str]]] = [
        [esc(label(r["attribute"])), esc(r["value"]),
         *[_cell_html(c) if (c := r["cells"].get(s)) else '<span class="na">-</span>' for s in sups]]
        for r in data["rows"]
    ]  # fmt: skip
    header = [
        "attribute",
        "value",
        *[f"{esc(s)} <small>(avg {num(data['baseline'][s]['mean'])})</small>" for s in sups],
    ]
    spots = "".join(f"<li><b>{esc(s)}</b>: {esc(_worst_text(data, s))}</li>" for s in sups)
    return (
        f'<p class="hint">{esc(_hint(data, colour=True))}</p>'
        + table(header, rows, cls="breakdown")
        + f"<p><b>Where each supporter personalises worst</b></p><ul>{spots}</ul>"
    )
