"""Judge biases (position, length, self-preference) and what rationales talk about, judges next to humans."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...stats.length import length_controlled_bt
from ...store.records import Comparison
from ..dimensions import OVERALL, Lexicon, tag_dimensions
from .ratings import verdict_wins
from .verdicts import HUMANS, TIE, OrderVerdict, PairVerdict


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def win_rate(verdicts: Iterable[PairVerdict], names: set[str]) -> tuple[float | None, int]:
    """The win rate (ties count half) of the competitors ``names`` against all others: pairs with a
    competitor of ``names`` on both sides say nothing about them and are left out."""
    score, n = 0.0, 0
    for v in verdicts:
        if (v.a in names) != (v.b in names):
            n += 1
            score += 0.5 if v.outcome == TIE else float(v.winner() in names)
    return (round(score / n, 4) if n else None), n


def length_preference(verdicts: Iterable[PairVerdict], words: dict[tuple[str, str], int]) -> tuple[float | None, int]:
    """Among decided overall verdicts whose replies differ in length: the share the longer reply won."""
    hits = n = 0
    for v in verdicts:
        wa, wb = words.get((v.history_id, v.a), 0), words.get((v.history_id, v.b), 0)
        if v.dimension != OVERALL or v.outcome == TIE or wa == wb:
            continue
        n += 1
        hits += (v.outcome == "a") == (wa > wb)
    return _rate(hits, n), n


def length_term(
    verdicts: Iterable[PairVerdict], words: dict[tuple[str, str], int], *, prior: float = 0.1
) -> float | None:
    """The length coefficient gamma of the length-controlled Bradley-Terry fit (``stats.length``) of the
    overall verdicts, ties counting half: the log-odds added for the reply longer by the typical difference
    (times tanh(1)), the competitors' strengths held apart. 0: no pull toward length; None without verdicts
    or without any difference in length."""
    vs = [v for v in verdicts if v.dimension == OVERALL]
    diff = [words.get((v.history_id, v.a), 0) - words.get((v.history_id, v.b), 0) for v in vs]
    if not vs or not any(diff):
        return None
    names = sorted({c for v in vs for c in (v.a, v.b)})
    index = {c: i for i, c in enumerate(names)}
    wins = [verdict_wins(v, "plain") for v in vs]
    fit = length_controlled_bt(
        [index[v.a] for v in vs],
        [index[v.b] for v in vs],
        [w[0] for w in wins],
        [w[1] for w in wins],
        diff,
        [0] * len(vs),
        len(names),
        prior=prior,
    )
    return round(fit.gamma, 4)


def bias_table(
    judges: list[str],
    judge_vs: list[PairVerdict],
    singles: list[OrderVerdict],
    human_vs: list[PairVerdict],
    human_rows: list[dict[str, Any]],
    words: dict[tuple[str, str], int],
    own: dict[str, list[str]],
    *,
    prior: float = 0.1,
) -> list[dict[str, Any]]:
    """One row per judge (and one for the humans when there are human judgments).

    position: share of single-order overall verdicts won by the reply shown first (0.5 = none);
    length: share of decided overall verdicts won by the longer reply (``longer_wins``), and the length
    coefficient of the length-controlled fit (``length_gamma``, ``length_term``: the pull toward length
    with the competitors' own strengths held apart; 0 = none); self-preference: the judge's
    win rate for the replies of every candidate its own model serves (against the other competitors)
    minus the other judges' (else the humans') for the same replies.
    """
    rows = []
    overall = [v for v in judge_vs if v.dimension == OVERALL]
    human_overall = [v for v in human_vs if v.dimension == OVERALL]
    for judge in judges:
        first_won = [s.first_won for s in singles if s.judge == judge and s.dimension == OVERALL]
        row = _bias_row(judge, first_won, [v for v in overall if v.rater == judge], words, prior)
        comps = set(own.get(judge, []))
        if comps:  # every candidate served by the judge's own model, whatever its prompt
            row.update(_self_preference(judge, comps, overall, human_overall))
        rows.append(row)
    if human_rows:
        shown = [r for r in human_rows if r["dimension"] == OVERALL and r["first_shown"] and r["winner"] != "tie"]
        rows.append(_bias_row(HUMANS, [r["winner"] == r["first_shown"] for r in shown], human_overall, words, prior))
    return rows


def _bias_row(rater: str, first_won: list[bool], overall: list[PairVerdict], words: dict[tuple[str, str], int],
              prior: float) -> dict[str, Any]:  # fmt: skip
    """A rater's position bias (``first_won``: whether the reply shown first won, per single-order overall
    verdict) and length bias (of its overall verdicts)."""
    lp, ln = length_preference(overall, words)
    return {"rater": rater, "position_n": len(first_won), "first_shown_wins": _rate(sum(first_won), len(first_won)),
            "length_n": ln, "longer_wins": lp, "length_gamma": length_term(overall, words, prior=prior)}  # fmt: skip


def _self_preference(judge: str, comps: set[str], overall: list[PairVerdict],
                     human_overall: list[PairVerdict]) -> dict[str, Any]:  # fmt: skip
    """``judge``'s win rate for the competitors ``comps`` minus the other judges' (else the humans')."""
    own_rate, own_n = win_rate([v for v in overall if v.rater == judge], comps)
    other_rate, _ = win_rate([v for v in overall if v.rater != judge], comps)
    human_rate, _ = win_rate(human_overall, comps)
    base = other_rate if other_rate is not None else human_rate
    pref = round(own_rate - base, 4) if own_rate is not None and base is not None else None
    return {"own_model": ", ".join(sorted(comps)), "own_n": own_n, "own_win_rate": own_rate,
            "other_judges_win_rate": other_rate, "humans_win_rate": human_rate, "self_preference": pref}  # fmt: skip


def rationale_focus(
    comparisons: Iterable[Comparison], human_rows: list[dict[str, Any]], lexicon: Lexicon, keys: list[str]
) -> list[dict[str, Any]]:
    """Per source (each judge, all judges, humans): how many rationales, and the share that talk about
    each dimension. Judges' overall rationales are used (a dimension's own rationale is about it by
    construction); humans' rationales once per item and rater."""
    texts: dict[str, list[str]] = {}
    for c in comparisons:
        if c.status == "ok" and c.verdicts[OVERALL]["rationale"]:  # a choice (the seeker's) gives none
            texts.setdefault(c.judge, []).append(c.verdicts[OVERALL]["rationale"])
    if len(texts) > 1:
        texts["all judges"] = [t for ts in list(texts.values()) for t in ts]
    seen = {(r["history_id"], r["a"], r["b"], r["rater"], r["rationale"]) for r in human_rows if r["rationale"]}
    if seen:
        texts[HUMANS] = [s[-1] for s in sorted(seen)]
    rows = []
    for source, ts in texts.items():
        tags = [set(tag_dimensions(t, lexicon)) for t in ts]
        shares = {k: _rate(sum(k in t for t in tags), len(ts)) for k in keys}
        rows.append({"source": source, "rationales": len(ts), "none": _rate(tags.count(set()), len(ts)), **shares})
    return rows
