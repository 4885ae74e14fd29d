"""The ladder's table from a run store: every scorer of the talks, and whether it orders the rungs as known.

Scorers (higher is better in each; a rung's score in a profile is the mean over its repeats):
- each judge's overall, generic and personal means and each of its dimensions (``user`` is the simulated user
  rating its own talk: User-as-a-Judge);
- the user's lived trajectory: its final intensity and its relief (intensity at the start minus at the end;
  lower intensity is better, so both are negated into "higher is better"), its final trust, and the needs it
  felt met over the talk;
- baselines that need no model: the supporter's words per reply, its share of empathy words (a lexicon,
  ``texts.yaml``), and its share of content words that the seeker used (a reply that picks up what was said).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from statistics import median
from typing import Any

import numpy as np

from ..assess.dimensions import group_keys
from ..heart.dimensions import keyword_pattern
from ..sensitivity.bad import content_words
from ..simulate.conversation import words
from ..stats.bootstrap import TOO_SMALL, bootstrap_ci, shown
from ..store.record import user_model
from ..store.records import Assessment
from ..store.run_store import RunStore
from .figures import ladder_figures
from .rungs import texts

LIVED = "lived"
BASELINE = "baseline (no model)"
WORD = re.compile(r"[a-z']+")


@cache
def _empathy() -> list[re.Pattern[str]]:
    return [keyword_pattern(w) for w in str(texts()["empathy_words"]).split()]


def empathy_share(text: str) -> float:
    low = text.lower()
    return sum(len(p.findall(low)) for p in _empathy()) / max(len(WORD.findall(low)), 1)


def talk_scores(conv: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The lived and no-model scores of one stored talk."""
    out: dict[tuple[str, str], float] = {}
    states = conv.get("states") or []
    if len(states) >= 2:
        first, last = states[0], states[-1]
        out[(LIVED, "final intensity (lower better)")] = -float(last["intensity"])
        out[(LIVED, "relief (intensity points)")] = float(first["intensity"] - last["intensity"])
        out[(LIVED, "final trust")] = float(last["trust"])
        out[(LIVED, "needs met")] = float(len({n for s in states[1:] for n in s.get("needs_met") or []}))
    replies = [t["text"] for t in conv["turns"] if t["speaker"] == "supporter"]
    seeker = {w for t in conv["turns"] if t["speaker"] == "user" for w in content_words(t["text"])}
    if replies:
        out[(BASELINE, "words per reply")] = float(np.mean([words(r) for r in replies]))
        out[(BASELINE, "empathy words")] = float(np.mean([empathy_share(r) for r in replies]))
        mine = [set(content_words(r)) for r in replies]
        picked = [len(m & seeker) / max(len(m), 1) for m in mine]
        out[(BASELINE, "the seeker's words picked up")] = float(np.mean(picked))
    return out


def judge_scores(a: Assessment) -> dict[str, float]:
    """A judge's overall, generic and personal means and its dimensions, from one rating; a card with
    probability-weighted scores also gives them, each named "... (expected)"."""
    out: dict[str, float] = {}
    for scoring, suffix in (("argmax", ""), ("expected", " (expected)")):
        s = {k: float(v) for k, v in (a.under(scoring) or {}).items() if v is not None}
        if not s:
            continue
        means = {"overall": float(np.mean(list(s.values())))}
        for group in ("generic", "personal"):
            vals = [s[k] for k in group_keys(group) if k in s]
            if vals:
                means[group] = float(np.mean(vals))
        out |= {k + suffix: v for k, v in {**means, **s}.items()}
    return out


def spread(a: Assessment) -> tuple[int, float] | None:
    """How many distinct values a rating gives its dimensions, and their standard deviation."""
    vals = [v for v in a.scores.values() if v is not None]
    return (len(set(vals)), float(np.std(vals))) if len(vals) >= 2 else None


Values = dict[tuple[str, str], dict[str, dict[str, list[float]]]]
"""(scorer group, scorer) -> profile -> rung -> the values of its repeats."""


@dataclass
class _Tally:
    """What a ladder run's talks and ratings count, before the figures are drawn from them."""

    values: Values = field(default_factory=lambda: defaultdict(lambda: defaultdict(dict)))
    spreads: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    gaps: dict[tuple[str, str], dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    status: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    endings: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    seeker_turns: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def add_talks(self, convs: dict[Any, dict[str, Any]]) -> None:
        for (pid, rung, _rep), conv in convs.items():
            self.status[f"talks {conv['status']}"] += 1
            if conv["status"] != "ok":
                continue
            self.endings[rung][conv["termination"]] += 1
            self.seeker_turns[rung].append(sum(1 for t in conv["turns"] if t["speaker"] == "user"))
            for scorer, v in talk_scores(conv).items():
                self.values[scorer][pid].setdefault(rung, []).append(v)

    def add_ratings(self, store: RunStore) -> None:
        for key, d in store.items("assessment"):
            a = Assessment.of(d)
            pid, rung, judge = key[0], key[1], key[-1]
            self.status[f"ratings {a.status}"] += 1
            if not a.scored:
                continue
            if (sp := spread(a)) is not None:
                self.spreads[judge].append(sp)
            js = judge_scores(a)
            for name, v in js.items():
                self.values[(judge, name)][pid].setdefault(rung, []).append(v)
            if "generic" in js and "personal" in js:
                self.gaps[(judge, rung)][pid].append(js["generic"] - js["personal"])


def ladder_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    cfg = store.config()
    rungs: list[str] = list(cfg["rungs"])
    profiles = [k[0] for k in sorted(store.keys("profile"))]
    convs = dict(store.items("conversation"))
    judges = list(json.loads(store.meta().get("judges", "{}")))
    tally = _Tally()
    tally.add_talks(convs)
    tally.add_ratings(store)
    rows = _scorer_rows(tally.values, judges, profiles, rungs, seed=seed, n_boot=n_boot)
    return {
        "rungs": rungs,
        "profiles": len(profiles),
        "complete_profiles": _complete(convs, profiles, rungs),
        "user_model": user_model(cfg),
        "user_agent": (cfg.get("user_agent") or {}).get("agent"),
        "supporter_model": (cfg.get("supporter") or {}).get("model"),
        "judges": judges,
        "turns": cfg.get("turns"),
        "wall_s": float(store.meta().get("wall_s", "0")),
        **_counts(tally, rungs, seed=seed),
        "rows": rows,
        "goals": goals(rows, rungs),
        "too_small": TOO_SMALL,
    }


def _scorer_rows(
    values: Values, judges: list[str], profiles: list[str], rungs: list[str], *, seed: int, n_boot: int
) -> list[dict[str, Any]]:
    """One row per scorer: its mean per rung and the ladder's figures on the profile x rung means."""
    rows = []
    for scorer in _ordered(values, judges):
        m = np.full((len(profiles), len(rungs)), np.nan)
        for i, pid in enumerate(profiles):
            for j, rung in enumerate(rungs):
                vs = values[scorer].get(pid, {}).get(rung)
                if vs:
                    m[i, j] = float(np.mean(vs))
        f = ladder_figures(m, rungs, seed=seed, n_boot=n_boot)
        means = [None if np.isnan(m[:, j]).all() else float(np.nanmean(m[:, j])) for j in range(len(rungs))]
        rows.append({"group": scorer[0], "scorer": scorer[1], "means": dict(zip(rungs, means, strict=True)), **f})
    return rows


def _counts(tally: _Tally, rungs: list[str], *, seed: int) -> dict[str, Any]:
    """The table's counts: statuses, endings and seeker turns per rung, each judge's spread, the gaps."""
    return {
        "status": dict(sorted(tally.status.items())),
        "endings": {r: dict(sorted(tally.endings[r].items())) for r in rungs if r in tally.endings},
        "seeker_turns": {r: float(np.mean(v)) for r, v in tally.seeker_turns.items()},
        "spread": {
            j: {"distinct": median(d for d, _ in v), "sd": float(np.mean([s for _, s in v])), "n": len(v)}
            for j, v in tally.spreads.items()
        },
        "gaps": [
            {"judge": j, "rung": r, **shown(bootstrap_ci([float(np.mean(x)) for x in by.values()], seed=seed))}
            for (j, r), by in sorted(tally.gaps.items(), key=lambda kv: (kv[0][0], rungs.index(kv[0][1])))
        ],
    }


def _ordered(values: dict[tuple[str, str], Any], judges: list[str]) -> list[tuple[str, str]]:
    """The scorers: each judge's overall, generic, personal, then its dimensions; the lived ones; the baselines."""
    head = ("overall", "generic", "personal")
    rank = {g: i for i, g in enumerate([*judges, LIVED, BASELINE])}
    return sorted(values, key=lambda s: (rank.get(s[0], len(rank)), head.index(s[1]) if s[1] in head else len(head)))


def _complete(convs: dict[Any, dict[str, Any]], profiles: list[str], rungs: list[str]) -> int:
    ok = {(k[0], k[1]) for k, c in convs.items() if c["status"] == "ok"}
    return sum(1 for p in profiles if all((p, r) in ok for r in rungs))


def _row(rows: list[dict[str, Any]], group: str, scorer: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["group"] == group and r["scorer"] == scorer), None)


def _pair(row: dict[str, Any] | None, above: str, below: str) -> dict[str, Any] | None:
    return None if row is None else next((p for p in row["pairs"] if (p["above"], p["below"]) == (above, below)), None)


def goals(rows: list[dict[str, Any]], rungs: list[str]) -> list[dict[str, Any]]:
    """The ladder's goals with their verdicts (``n/a`` where the ladder lacks a rung or a scorer)."""
    third = next((r["group"] for r in rows if r["group"].startswith("third_party")), "third_party")
    out = []
    for group, who in (("user", "the user's rating"), (third, "the third-party judge")):
        for below in ("dismissive", "off_target"):
            p = _pair(_row(rows, group, "overall"), "default", below)
            ok = p is not None and p["lo"] is not None and p["value"] >= 0.9 and p["lo"] > 0.5
            out.append({"goal": f"{who} (overall) orders default above {below} in >= 90% of profiles, interval "
                        "above 0.5", "figure": p, "verdict": "n/a" if p is None or p["lo"] is None else
                        "met" if ok else "not met"})  # fmt: skip
    user, lived = _row(rows, "user", "overall"), _row(rows, LIVED, "final intensity (lower better)")
    tu, tl = (None if r is None else r["tau"]["value"] for r in (user, lived))
    out.append({"goal": "the user's rating orders the ladder at least as well as its own final intensity (mean tau)",
                "figure": {"value": tu, "lived": tl, "lo": None, "hi": None},
                "verdict": "n/a" if tu is None or tl is None else "met" if tu >= tl else "not met"})  # fmt: skip
    p = _pair(_row(rows, "user", "personal"), "default", "generic")
    out.append({"goal": "generic empathy below default on the user's personal score (interval above 0.5)",
                "figure": p, "verdict": "n/a" if p is None or p["lo"] is None else
                "met" if p["lo"] > 0.5 else "not met"})  # fmt: skip
    p = _pair(user, "knows", "default")
    out.append({"goal": "knows the person at or above default on the user's rating (share >= 0.5)", "figure": p,
                "verdict": "n/a" if p is None or p["value"] is None else
                "met" if p["value"] >= 0.5 else "not met"})  # fmt: skip
    return out
