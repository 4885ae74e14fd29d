"""The sensitivity table as text, Markdown, JSON or CSV."""

from __future__ import annotations

from typing import Any

from ..scoring.values import usage_text
from ..stats.bootstrap import TOO_SMALL
from ..tables import RESUME, nothing_measured, render_data, text_table
from .names import ALL

SHORT = {"off_target": "off-tgt", "generic": "generic", "generic_long": "gen-long", "dismissive": "dismiss",
         "dismissive_long": "dis-long", "advice": "advice", "ignores_last": "ign-last", "wrong_facts": "wrong",
         "repeats": "repeats", "role_break": "role"}  # fmt: skip


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}"


def interval(c: dict[str, Any]) -> str:
    if c["share"] is None:
        return "n/a"
    if c["lo"] is None:
        return f"{pct(c['share'])}% ({TOO_SMALL})" if c["n"] else "n/a"
    return f"{pct(c['share'])}% [{pct(c['lo'])}, {pct(c['hi'])}]"


def to_text(data: dict[str, Any], md: bool = False) -> str:
    src = ", ".join(f"{n} {s}" for s, n in sorted(data["sources"].items())) or "none"
    if data.get("unfinished"):
        src += f"; {data['unfinished']} cases not finished yet are left out"
    title = (f"Sensitivity: {data['cases']} cases ({src}); user model {data['user_model'] or '(none)'}; suite "
             f"{data['suite']}; model time so far {data['wall_s']:.0f} s")  # fmt: skip
    if not any(r[ALL]["share"] is not None for r in data["rows"]):
        return "\n".join([title, nothing_measured(f"no case is finished yet: {RESUME}")])
    makers = data["kinds"]
    head = ["scorer", *[SHORT.get(k, k) for k in makers], ALL]
    shares = [[r["scorer"], *[pct(r["cells"][k]["share"]) for k in makers], interval(r[ALL])] for r in data["rows"]]
    detail = [[r["scorer"], str(r["pairs"]), pct(r["tie_rate"]), str(r[ALL]["unscored"]),
               "-" if r["distinct"] is None else str(r["distinct"]), usage_text(r["usage"])]
              for r in data["rows"]]  # fmt: skip
    lines = [
        title,
        "Share of cases where the real reply scores above the bad one, % (ties count half); "
        f"{ALL}: with a bootstrap 95% interval (cases resampled)",
        text_table(head, shares, md=md),
        "",
        text_table(["scorer", "pairs", "ties %", "unscored", "distinct values", "cost"], detail, md=md),
    ]
    return "\n".join(lines)


def csv_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in data["rows"]:
        for k, c in [*r["cells"].items(), (ALL, r[ALL])]:
            out.append({"scorer": r["scorer"], "kind": k, "share": c["share"], "lo": c["lo"], "hi": c["hi"],
                        "n": c["n"], "ties": c["ties"], "unscored": c["unscored"],
                        "distinct": r["distinct"]})  # fmt: skip
    return out


def render_sensitivity(data: dict[str, Any], fmt: str) -> str:
    return render_data(data, fmt, csv_rows, to_text)
