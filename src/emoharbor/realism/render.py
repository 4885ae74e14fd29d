"""The realism table as text, Markdown, JSON or CSV."""

from __future__ import annotations

from typing import Any

from ..stats.bootstrap import TOO_SMALL
from ..tables import RESUME, interval, nothing_measured, render_data, text_table
from .analysis import CHECKS

PERCENT = ("gratitude", "question", "voice", "narrates", "repeat", "false_stops")


def shown(e: dict[str, Any] | None, figure: str = "", *, signed: bool = False) -> str:
    """A value with its interval (shares in percent); "n/a" without one."""
    if not e or e.get("value") is None:
        return "n/a"
    k = 100.0 if figure in PERCENT else 1.0
    digits = 0 if figure in PERCENT or figure == "words" else 2
    v, lo, hi = (None if x is None else k * x for x in (e["value"], e.get("lo"), e.get("hi")))
    return interval(v, lo, hi, digits, signed=signed)


def vs_real(r: dict[str, Any]) -> str:
    if r["vs_real"].get("value") is None:
        return "n/a"
    if r["compare"] == "ratio":
        return shown(r["vs_real"]) + "x"
    return shown(r["vs_real"], r["figure"], signed=True) + " pts"


def figure_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [[r["label"], shown(r["sim"], r["figure"]), shown(r["real"], r["figure"]), vs_real(r), r["goal"],
             r["verdict"]] for r in rows]  # fmt: skip


HEAD = ["figure", "simulated", "people", "simulated vs people", "goal", "verdict"]


def next_rows(n: dict[str, Any]) -> list[list[str]]:
    """The next-message table's rows: the message figures, then the discriminator and the similarity."""
    rows = figure_rows(n["rows"])
    disc, sim = n.get("discriminator"), n.get("similarity")
    if disc:
        floor = shown(disc["real_vs_real"])
        rows.append(["told apart from people (AUROC)", shown(disc["sim_vs_real"]), f"{floor} (real vs real)", "",
                     disc["goal"], disc["verdict"]])  # fmt: skip
    if sim:
        rows.append(["similarity to the real next message", shown(sim["next"]), f"{shown(sim['other'])} (another "
                     "talk's)", shown(sim["difference"], signed=True), sim["goal"], sim["verdict"]])  # fmt: skip
    stops = n.get("false_stops")
    if stops:
        rows.append(["ends the talk where the real seeker went on", shown(stops["sim"], "false_stops"), "0%", "",
                     stops["goal"], stops["verdict"]])  # fmt: skip
    return rows


def next_text(n: dict[str, Any], md: bool) -> list[str]:
    if not n["planned"]:
        return ["Next message: no cut asked for (--cuts 0)"]
    left = f"; {n['unfinished']} not finished yet" if n["unfinished"] else ""
    lines = [f"Next message: {n['cuts']} cuts of {n['talks']} talks ({n['unscored']} unscored{left}); the simulated "
             "user writes the seeker's next message where the real one wrote it"]  # fmt: skip
    if not n["rows"]:
        return [*lines, nothing_measured(f"no cut is scored yet: {RESUME}")]
    lines.append(text_table(HEAD, next_rows(n), md=md))
    if not n.get("discriminator"):
        lines.append(f"discriminator and similarity: {n.get('embeddings', 'n/a')}")
    r = n["reask"]
    decisions = ", ".join(f"{k} {v}" for k, v in sorted(n["decisions"].items()))
    lines.append(f"re-asked after a slip or a repeat: {r['asked']} messages; the kept message clean in "
                 f"{r['mended']}, still wrong in {r['still']} (in a new way in {r['worse']}). "
                 f"Decisions: {decisions}")  # fmt: skip
    return lines


def whole_text(w: dict[str, Any] | None, md: bool) -> list[str]:
    if w is None:
        return []
    head = f"Whole talks: {w['talks']} of {w['planned']} simulated ({w['unscored']} unscored)"
    if not w.get("rows"):
        return ["", head, nothing_measured(f"no talk is scored yet: {RESUME}")]
    cap = w.get("turns_cap")
    st, rel, bye = w["seeker_turns"], w["relief"], w["last_thanks_or_bye"]
    shape = [
        ["seeker turns", shown(st["sim"]), shown(st["real"]), f"the simulated talk stops after {cap} supporter "
         f"turns; people's cut there: {shown(st['real_at_cap'])}; {st['goal']}: {st['verdict']}"],
        ["relief per supporter turn (intensity points)", shown(rel["sim"]), shown(rel["real"]),
         f"{rel['goal']}: {rel['verdict']}"],
        ["last message thanks or says goodbye", shown(bye["sim"]), shown(bye["real"]), ""],
    ]  # fmt: skip
    by_turn = ", ".join(f"{x['turn']}: {_n(x['sim'])}/{_n(x['real'])}" for x in w["words_by_turn"])
    ends = ", ".join(f"{k} {v}" for k, v in sorted(w["endings"].items()))
    return ["", head, text_table(["shape", "simulated", "people", "note"], shape, md=md),
            f"median words by seeker turn (simulated/people): {by_turn}", f"how the simulated talks ended: {ends}",
            text_table(HEAD, figure_rows(w["rows"]), md=md)]  # fmt: skip


def _n(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def to_text(data: dict[str, Any], md: bool = False) -> str:
    lines = [
        f"Realism: the {data['user_agent']} user on {data['user_model']} beside real ESConv seekers; model time so "
        f"far {data['wall_s']:.0f} s. Intervals: 95%, resampling talks ({TOO_SMALL} under 5 talks).",
        *next_text(data["next"], md),
        *whole_text(data["whole"], md),
    ]
    return "\n".join(lines)


def csv_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row a figure: view (next, whole), figure, side, value, interval, goal, verdict."""
    n = data["next"]
    parts = [(view, r["figure"], r, ["sim", "real", "vs_real"]) for view in ("next", "whole")
             for r in (data.get(view) or {}).get("rows", [])]  # fmt: skip
    parts += [("next", name, n[name], [k for k, e in n[name].items() if isinstance(e, dict)])
              for name in CHECKS if n.get(name)]  # fmt: skip
    return [{"view": view, "figure": figure, "side": side, "value": p[side]["value"], "lo": p[side]["lo"],
             "hi": p[side]["hi"], "goal": p["goal"], "verdict": p["verdict"]}
            for view, figure, p, sides in parts for side in sides]  # fmt: skip


def render_realism(data: dict[str, Any], fmt: str) -> str:
    return render_data(data, fmt, csv_rows, to_text)
