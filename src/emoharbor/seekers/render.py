"""The seekers table as text, Markdown, JSON or CSV."""

from __future__ import annotations

from typing import Any

from ..scoring.values import usage_text
from ..stats.bootstrap import TOO_SMALL, too_small
from ..tables import RESUME, interval, nothing_measured, num, render_data, text_table

FIGURES = ("rho", "rho_margin", "pairs", "pairs_margin")


def shown(c: dict[str, Any] | None, *, signed: bool = False) -> str:
    """``0.21 [0.12, 0.30]``; under ``MIN_N`` talks the estimate and "n too small"; n/a without one."""
    if not c or c.get("value") is None:
        return "n/a"
    if c.get("lo") is None:
        return num(c["value"], signed=signed) + (f" ({TOO_SMALL})" if too_small(c["talks"]) else "")
    return interval(c["value"], c["lo"], c["hi"], signed=signed)


def beats(r: dict[str, Any]) -> str:
    if r["baseline"]:
        return "(baseline)"
    return f"rho {r['rho_beats']}, pairs {r['pairs_beats']}"


def has_figure(rows: list[dict[str, Any]]) -> bool:
    """Whether any scorer or baseline of ``rows`` has a figure (rho or pairs agree)."""
    return any((r.get(f) or {}).get("value") is not None for r in rows for f in ("rho", "pairs"))


def to_text(data: dict[str, Any], md: bool = False) -> str:
    src = ", ".join(f"{n} {s}" for s, n in data["sources"].items()) or "none"
    if data["unfinished"]:
        src += f"; {data['unfinished']} points not finished yet are left out"
    ratings = ", ".join(f"{k}: {v}" for k, v in data["ratings"].items()) or "none"
    title = (f"Seekers: {data['points']} rated reply blocks in {data['talks']} talks ({src}); ratings {ratings}; "
             f"{data['pairs']} within-talk pairs with different ratings; user model {data['user_model'] or '(none)'}; "
             f"model time so far {data['wall_s']:.0f} s")  # fmt: skip
    if not has_figure(data["rows"]):
        few = f"{data['points']} points are too few for a figure"
        return "\n".join([title, nothing_measured(few if data["points"] else f"no point is finished yet: {RESUME}")])
    head = ["scorer", "rho vs rating", "minus best baseline", "pairs agree", "minus best baseline",
            "beats the baselines", "scored", "unscored"]  # fmt: skip
    rows = [[r["scorer"], shown(r["rho"]), shown(r.get("rho_margin"), signed=True), shown(r["pairs"]),
             shown(r.get("pairs_margin"), signed=True), beats(r), str(r["scored"]), str(r["unscored"])]
            for r in data["rows"]]  # fmt: skip
    detail = [[r["scorer"], r.get("rho_best") or "-", r.get("pairs_best") or "-", str(r["pairs"]["n"]),
               usage_text(r["usage"])] for r in data["rows"] if not r["baseline"]]  # fmt: skip
    lines = [
        title,
        "rho: Spearman with the seeker's rating over every point; pairs agree: the share of within-talk pairs "
        "the scorer orders as the seeker did (a tie half); 95% intervals resample talks; a scorer beats the "
        "baselines (words, position, echo) on a figure when its margin over the best one lies above 0",
        text_table(head, rows, md=md),
        "",
        text_table(["scorer", "best baseline (rho)", "best baseline (pairs)", "pairs", "cost"], detail, md=md),
    ]
    if data.get("by_source"):
        lines += ["", by_source_text(data["by_source"], md)]
    return "\n".join(lines)


def by_source_text(parts: list[dict[str, Any]], md: bool) -> str:
    """The same figures on each file's points alone (its talks resampled), one column group a file."""
    head = ["scorer"] + [f"{p['source']}: {fig}" for p in parts for fig in ("rho", "pairs agree", "beats")]
    rows = [[r["scorer"]] + [cell for p in parts for cell in (shown(p["rows"][k]["rho"]),
            shown(p["rows"][k]["pairs"]), beats(p["rows"][k]))] for k, r in enumerate(parts[0]["rows"])]  # fmt: skip
    counts = "; ".join(f"{p['source']}: {p['points']} points, {p['pairs']} within-talk pairs" for p in parts)
    kept = rows if any(has_figure(p["rows"]) for p in parts) else []
    why = "no file alone has points enough for a figure"
    return "\n".join([f"By file ({counts}):", text_table(head, kept, md=md, empty=why)])


def csv_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row a figure of a scorer: on every point (``source`` all), then on each file's alone."""
    out = []
    tables = [("all", data["rows"])] + [(p["source"], p["rows"]) for p in data.get("by_source", [])]
    for src, rows in tables:
        for r in rows:
            for fig in FIGURES:
                c = r.get(fig)
                if c is None:
                    continue
                best = r.get(f"{fig.removesuffix('_margin')}_best") if fig.endswith("_margin") else None
                out.append({"source": src, "scorer": r["scorer"], "baseline": r["baseline"], "figure": fig,
                            "value": c["value"], "lo": c["lo"], "hi": c["hi"], "n": c["n"], "talks": c["talks"],
                            "best_baseline": best, "scored": r["scored"], "unscored": r["unscored"]})  # fmt: skip
    return out


def render_seekers(data: dict[str, Any], fmt: str) -> str:
    return render_data(data, fmt, csv_rows, to_text)
