"""The ladder's table as text, Markdown, JSON or CSV."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ..tables import RESUME, bounds, interval, nothing_measured, num, render_data, text_table


def shown_pairs(rungs: list[str]) -> list[tuple[str, str]]:
    """The pairs a table shows: each rung above the next, then default above each rung below it."""
    out = list(pairwise(rungs))
    if "default" in rungs:
        i = rungs.index("default")
        out += [("default", r) for r in rungs[i + 2 :]]
    return out


def share(p: dict[str, Any] | None, unit: str = "") -> str:
    """A share in percent with its interval (``unit`` after the value: "58% [17, 92]")."""
    if not p or p.get("value") is None:
        return "n/a"
    ci = bounds(None if p["lo"] is None else 100 * p["lo"], None if p["hi"] is None else 100 * p["hi"], 0)
    return f"{100 * p['value']:.0f}{unit} {ci}".rstrip()


def resolution(r: dict[str, Any] | None) -> str:
    return "none" if r is None else f"{r['above']} > {r['below']}"


def scorer_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    pairs = shown_pairs(data["rungs"])
    head = ["scorer", *data["rungs"], "tau", "resolution", *(f"{a} > {b} (%)" for a, b in pairs)]
    rows = []
    for r in data["rows"]:
        by = {(p["above"], p["below"]): p for p in r["pairs"]}
        t = r["tau"]
        rows.append([f"{r['group']}: {r['scorer']}", *(num(r["means"][g]) for g in data["rungs"]),
                     interval(t["value"], t["lo"], t["hi"]), resolution(r["resolution"]),
                     *(share(by.get(p)) for p in pairs)])  # fmt: skip
    return head, rows


def goal_rows(data: dict[str, Any]) -> list[list[str]]:
    out = []
    for g in data["goals"]:
        f = g["figure"] or {}
        fig = f"tau {num(f['value'])} against {num(f['lived'])}" if "lived" in f else share(f, "%")
        out.append([g["goal"], fig, g["verdict"]])
    return out


def to_text(data: dict[str, Any], md: bool = False) -> str:
    order = " > ".join(data["rungs"])
    lines = [
        f"Ladder: the {data['user_agent']} user on {data['user_model']}, rung models on {data['supporter_model']}, "
        f"judges {', '.join(data['judges']) or 'none'}; {data['profiles']} profiles ({data['complete_profiles']} "
        f"with every rung finished), at most {data['turns']} supporter turns; model time so far "
        f"{data['wall_s']:.0f} s.",
        f"Known order, best first: {order}. Each cell: the share of profiles whose scores order the pair as known "
        f"(ties half), tau: Kendall's tau against the known order averaged over profiles (1 right order, 0 none, -1 "
        f"reversed), resolution: the closest pair ordered with its interval above 50%. Intervals: 95%, resampling "
        f"profiles ({data['too_small']} under 5).",
    ]
    if not data["rows"]:
        return "\n".join([*lines, nothing_measured(f"no talk is finished yet: {RESUME}")])
    head, rows = scorer_rows(data)
    lines += [text_table(head, rows, md=md), "", text_table(["goal", "figure", "verdict"], goal_rows(data), md=md)]
    spread = [[j, num(s["distinct"], 1), num(s["sd"]), str(s["n"])] for j, s in data["spread"].items()]
    if spread:
        lines += ["", "How far each judge's ratings spread over the dimensions of one talk:",
                  text_table(["judge", "distinct values (median)", "SD (mean)", "ratings"], spread, md=md)]  # fmt: skip
    gaps = [[g["judge"], g["rung"], interval(g["mean"], g["lo"], g["hi"], signed=True)] for g in data["gaps"]]
    if gaps:
        lines += ["", "Generic minus personal score, by rung (generic empathy should show the largest gap):",
                  text_table(["judge", "rung", "generic - personal"], gaps, md=md)]  # fmt: skip
    ends = "; ".join(f"{r}: " + ", ".join(f"{k} {v}" for k, v in e.items()) for r, e in data["endings"].items())
    turns = ", ".join(f"{r} {data['seeker_turns'][r]:.1f}" for r in data["rungs"] if r in data["seeker_turns"])
    status = ", ".join(f"{k} {v}" for k, v in data["status"].items())
    lines += ["", f"How the talks ended: {ends}", f"Seeker turns (mean): {turns}", f"Units: {status}"]
    return "\n".join(lines)


def csv_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per scorer and pair of rungs (and its tau, as the pair "tau")."""
    out = []
    for r in data["rows"]:
        for p in [*r["pairs"], {"above": "tau", "below": "", **r["tau"]}]:
            out.append({"group": r["group"], "scorer": r["scorer"], "above": p["above"], "below": p["below"],
                        "value": p["value"], "lo": p["lo"], "hi": p["hi"], "profiles": p["n"]})  # fmt: skip
    return out


def render_ladder(data: dict[str, Any], fmt: str) -> str:
    return render_data(data, fmt, csv_rows, to_text)
