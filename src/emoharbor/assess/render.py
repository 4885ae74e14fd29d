"""The leaderboard as plain text, Markdown, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from .dimensions import keys


def _ci(e: dict[str, Any], digits: int = 2) -> str:
    if e["mean"] is None:
        return "n/a"
    if e["lo"] is None:
        return f"{e['mean']:.{digits}f}"
    return f"{e['mean']:.{digits}f} [{e['lo']:.{digits}f},{e['hi']:.{digits}f}]"


def _table(header: list[str], rows: list[list[str]], md: bool) -> str:
    if md:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    body = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, "-" * len(line), *body])


def to_text(board: dict[str, Any], md: bool = False) -> str:
    rows = board["rows"]
    if not rows:
        return "no conversations in this run yet"
    summary = _table(
        [
            "supporter",
            "convs",
            "scored",
            "unscored",
            "overall",
            "generic",
            "personal",
            "gap (gen-pers)",
            "intensity change (end - start)",
        ],
        [
            [
                r["supporter"],
                str(r["conversations"]),
                str(r["scored"]),
                str(r["unscored"]),
                _ci(r["overall"]),
                _ci(r["generic"]),
                _ci(r["personal"]),
                _ci(r["gap"]),
                _ci(r["intensity_change"], 1),
            ]
            for r in rows
        ],
        md,
    )
    dims = _table(
        ["dimension", *[r["supporter"] for r in rows]],
        [[d, *[_ci(r["dimensions"][d]) for r in rows]] for d in board.get("dimension_keys", keys())],
        md,
    )
    ends = _table(
        ["supporter", "evidence quoted/not a quote/placeholder", "terminations", "events"],
        [
            [
                r["supporter"],
                "/".join(str(r["evidence"].get(k, 0)) for k in ("quoted", "not_a_quote", "placeholder")),
                ", ".join(f"{k} {v}" for k, v in sorted(r["terminations"].items())),
                ", ".join(f"{k} {v}" for k, v in sorted(r["events"].items())) or "-",
            ]
            for r in rows
        ],
        md,
    )
    usage_rows = []
    for r in rows:
        for role, u in sorted(r["usage"].items()):
            usage_rows.append(
                [
                    r["supporter"],
                    role,
                    str(int(u["calls"])),
                    str(int(u.get("tokens", 0))),
                    f"{u.get('cost_usd', 0.0):.4f}",
                    str(int(u.get("cached_tokens", 0))),
                    f"{u.get('cached_cost_usd', 0.0):.4f}",
                ]
            )
    header = ["supporter", "role", "calls", "tokens spent", "cost USD spent", "tokens from cache", "USD from cache"]
    usage = _table(header, usage_rows, md)
    head = "##" if md else "#"
    return "\n\n".join(
        [
            f"{head} Leaderboard (judge: {board['judge']}, {board.get('scoring', 'argmax')} scores; "
            "mean [95% bootstrap interval], 1-5)",
            summary,
            f"{head} Dimensions",
            dims,
            f"{head} How conversations ended",
            ends,
            f"{head} Tokens and cost",
            usage,
        ]
    )


def to_csv(board: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["supporter", "metric", "mean", "lo", "hi", "n"])
    for r in board["rows"]:
        metrics = {
            **{f"dim:{d}": r["dimensions"][d] for d in keys()},
            **{k: r[k] for k in ("overall", "generic", "personal", "gap", "intensity_change")},
        }
        for name, e in metrics.items():
            w.writerow([r["supporter"], name, e["mean"], e["lo"], e["hi"], e["n"]])
    return buf.getvalue()


def render(board: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(board, indent=2)
    if fmt == "csv":
        return to_csv(board)
    return to_text(board, md=(fmt == "md"))
