"""Two or more sensitivity runs on the same cases (a prompt, a layout or a model changed), compared pairwise:
for each scorer both runs have, its "all kinds" share in each run on the cases both scored, and the paired
difference (the later run minus the first) with a bootstrap 95% interval over those cases (each case's
outcomes averaged over its bad replies, so the case is the unit resampled). ``emoharbor report A B
--format md|json`` prints it after the runs' tables."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..stats.bootstrap import paired_difference
from ..store.run_store import RunStore
from ..tables import interval, num, render_data, text_table
from .kind import tidy


def outcomes(store: RunStore) -> dict[str, dict[str, dict[str, float]]]:
    """Per scorer, case and bad-reply maker: the scored outcome (``kind.tidy``; unscored left out)."""
    by: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in tidy(store):
        if r["outcome"] is not None:
            by[r["scorer"]][r["case"]][r["kind"]] = r["outcome"]
    return by


def paired_rows(first: RunStore, other: RunStore, *, seed: int = 0) -> list[dict[str, Any]]:
    """One row per scorer of both runs: the cases both scored (on the bad replies both scored), each run's share on
    them, and the paired difference ``other - first``."""
    a, b = outcomes(first), outcomes(other)
    rows = []
    for scorer in [s for s in a if s in b]:
        pairs = []
        for case in sorted(set(a[scorer]) & set(b[scorer])):
            makers = sorted(set(a[scorer][case]) & set(b[scorer][case]))
            if makers:
                pairs.append((np.mean([a[scorer][case][k] for k in makers]),
                              np.mean([b[scorer][case][k] for k in makers])))  # fmt: skip
        x = np.asarray(pairs, dtype=float).reshape(-1, 2)
        diff = paired_difference(list(x[:, 1] - x[:, 0]), seed=seed)
        rows.append({"scorer": scorer, "cases": len(pairs), "first": float(x[:, 0].mean()) if pairs else None,
                     "other": float(x[:, 1].mean()) if pairs else None, "difference": diff})  # fmt: skip
    return rows


def _percent(x: float | None) -> float | None:
    return None if x is None else 100 * x


def _text(data: dict[str, Any], md: bool = False) -> str:
    blocks = []
    for c in data["comparisons"]:
        rows = []
        for r in c["rows"]:
            d = r["difference"]
            diff = interval(_percent(d["mean"]), _percent(d["lo"]), _percent(d["hi"]), 0, signed=True)
            rows.append([r["scorer"], str(r["cases"]), num(_percent(r["first"]), 0), num(_percent(r["other"]), 0),
                         diff])  # fmt: skip
        title = (f"Paired: {c['other']} against {c['first']} (the cases both scored; difference in points, "
                 "95% interval, cases resampled)")  # fmt: skip
        head = ["scorer", "cases", "first %", "other %", "difference"]
        blocks.append("\n".join([title, text_table(head, rows, md=md)]))
    return "\n\n".join(blocks)


def _csv(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"first": c["first"], "other": c["other"], "scorer": r["scorer"], "cases": r["cases"],
             "first_share": r["first"], "other_share": r["other"], "difference": r["difference"]["mean"],
             "lo": r["difference"]["lo"], "hi": r["difference"]["hi"], "p": r["difference"]["p"]}
            for c in data["comparisons"] for r in c["rows"]]  # fmt: skip


def compare_runs(stores: list[RunStore], fmt: str, *, seed: int = 0) -> tuple[str, dict[str, Any]]:
    """Every later run against the first: rendered, and its data."""
    first = stores[0]
    data = {"kind": "sensitivity_comparison",
            "comparisons": [{"first": str(first.folder), "other": str(s.folder),
                             "rows": paired_rows(first, s, seed=seed)} for s in stores[1:]]}  # fmt: skip
    return render_data(data, fmt, _csv, _text), data
