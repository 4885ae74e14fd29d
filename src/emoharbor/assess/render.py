"""The leaderboard as plain text, Markdown, CSV or JSON."""

from __future__ import annotations

import json
from typing import Any

from ..stats.bootstrap import TOO_SMALL, too_small
from ..tables import RESUME, csv_table, interval, nothing_measured, num, text_table
from .dimensions import keys
from .leaderboard import LENGTH

GROUP_MEANS = ("overall", "generic", "personal")
NOT_IN_HOLM = (*GROUP_MEANS, LENGTH)  # the rows of a difference table that Holm's family leaves out
CSV_HEADER = ["supporter", "metric", "mean", "lo", "hi", "n", "vs", "p_above_0", "p", "p_holm"]
SUMMARY_HEADER = ["supporter", "convs", "scored", "unscored", "overall", "generic", "personal", "gap (gen-pers)",
                  "intensity change (end - start)", "words a message"]  # fmt: skip
ENDS_HEADER = ["supporter", "evidence quoted/not a quote/placeholder", "terminations", "events"]
USAGE_HEADER = ["supporter", "role", "calls", "tokens spent", "cost USD spent", "tokens from cache", "USD from cache"]


def _ci(e: dict[str, Any], digits: int = 2) -> str:
    if e["mean"] is not None and too_small(e.get("n")):
        return f"{num(e['mean'], digits)} ({TOO_SMALL})"
    return interval(e["mean"], e["lo"], e["hi"], digits)


def differences_text(board: dict[str, Any], md: bool) -> list[str]:
    """One table per supporter: minus the baseline on the same profiles and repeats."""
    head = "##" if md else "#"
    out = []
    for sup, cells in board.get("differences", {}).items():
        names = [*board.get("dimension_keys", keys()), *NOT_IN_HOLM]
        rows = [[d, str(cells[d]["n"]), _ci(cells[d]), num(cells[d]["p_above_0"]),
                 num(cells[d].get("p_holm"), 3) if d not in NOT_IN_HOLM else "-"]
                for d in names if d in cells]  # fmt: skip
        paired = any(c["n"] for d, c in cells.items() if d != LENGTH)  # words pair whether or not the judge scored
        why = f"no profile and repeat has the judge's scores for both {sup} and {board['baseline']}"
        out += [f"{head} {sup} minus {board['baseline']} (paired: the same profiles and repeats)",
                text_table(["score", "pairs", "difference [95% interval]", "P(difference > 0)", "p (Holm)"],
                           rows if paired else [], md, why)]  # fmt: skip
    return out


def to_text(board: dict[str, Any], md: bool = False) -> str:
    rows = board["rows"]
    if not rows:
        return nothing_measured(f"no conversation is finished yet: {RESUME}")
    head = "##" if md else "#"
    return "\n\n".join(
        [
            f"{head} Leaderboard (judge: {board['judge']}, {board.get('scoring', 'argmax')} scores; "
            "mean [95% bootstrap interval], 1-5)",
            text_table(SUMMARY_HEADER, [_summary_row(r) for r in rows], md),
            f"{head} Dimensions",
            dimensions_text(board, md),
            *differences_text(board, md),
            f"{head} How conversations ended",
            text_table(ENDS_HEADER, [_ends_row(r) for r in rows], md),
            f"{head} Tokens and cost",
            text_table(USAGE_HEADER, [row for r in rows for row in _usage_rows(r)], md),
        ]
    )


def dimensions_text(board: dict[str, Any], md: bool) -> str:
    """A row per dimension, a column per supporter; one line when the judge scored no conversation."""
    rows = board["rows"]
    table = [[d, *[_ci(r["dimensions"][d]) for r in rows]] for d in board.get("dimension_keys", keys())]
    counts = f"{sum(r['unscored'] for r in rows)} unscored, {sum(r['not_assessed'] for r in rows)} not assessed"
    scored = any(r["scored"] for r in rows)
    return text_table(["dimension", *[r["supporter"] for r in rows]], table if scored else [], md,
                      no_scores(board["judge"], counts))  # fmt: skip


def no_scores(judge: str, counts: str = "") -> str:
    """Why no conversation has ``judge``'s scores (``counts``: its unscored and not assessed ones), and what to run."""
    got = f" ({counts})" if counts else ""
    return f"no conversation has scores from the judge '{judge}'{got}: `emoharbor assess RUN --judge CARD` rates them"


def _summary_row(r: dict[str, Any]) -> list[str]:
    return [r["supporter"], str(r["conversations"]), str(r["scored"]), str(r["unscored"]), _ci(r["overall"]),
            _ci(r["generic"]), _ci(r["personal"]), _ci(r["gap"]), _ci(r["intensity_change"], 1),
            _ci(r[LENGTH], 1)]  # fmt: skip


def _ends_row(r: dict[str, Any]) -> list[str]:
    """The judge's evidence (quoted, not a quote, placeholder), the terminations and the events."""
    return [
        r["supporter"],
        "/".join(str(r["evidence"].get(k, 0)) for k in ("quoted", "not_a_quote", "placeholder")),
        ", ".join(f"{k} {v}" for k, v in sorted(r["terminations"].items())),
        ", ".join(f"{k} {v}" for k, v in sorted(r["events"].items())) or "-",
    ]


def _usage_rows(r: dict[str, Any]) -> list[list[str]]:
    """A supporter's calls, tokens and cost per role, spent and from the cache."""
    return [[r["supporter"], role, str(int(u["calls"])), str(int(u.get("tokens", 0))), num(u.get("cost_usd", 0.0), 4),
             str(int(u.get("cached_tokens", 0))), num(u.get("cached_cost_usd", 0.0), 4)]
            for role, u in sorted(r["usage"].items())]  # fmt: skip


def to_csv(board: dict[str, Any]) -> str:
    """One tidy table: a row per supporter and metric (``dim:<dimension>``, the group means, the gap, the
    intensity change), then a row per supporter and paired difference from the baseline (``diff:<dimension>``,
    ``diff:overall`` ...: ``vs`` names the baseline, with P(difference > 0), the bootstrap p and Holm's p across
    the dimensions). Fields a row does not have are empty; under ``MIN_N`` values lo and hi are empty."""
    dims = board.get("dimension_keys", keys())
    rows: list[list[Any]] = []
    for r in board["rows"]:
        metrics = {
            **{f"dim:{d}": r["dimensions"][d] for d in dims if d in r["dimensions"]},
            **{k: r[k] for k in (*GROUP_MEANS, "gap", "intensity_change", LENGTH)},
        }
        rows += [[r["supporter"], name, e["mean"], e["lo"], e["hi"], e["n"], None, None, None, None]
                 for name, e in metrics.items()]  # fmt: skip
    for sup, cells in board.get("differences", {}).items():
        for d in [*dims, *NOT_IN_HOLM]:
            if (c := cells.get(d)) is not None:
                rows.append([sup, f"diff:{d}", c["mean"], c["lo"], c["hi"], c["n"], board["baseline"],
                             c.get("p_above_0"), c.get("p"), c.get("p_holm")])  # fmt: skip
    return csv_table(CSV_HEADER, rows)


def render(board: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(board, indent=2)
    if fmt == "csv":
        return to_csv(board)
    return to_text(board, md=(fmt == "md"))
