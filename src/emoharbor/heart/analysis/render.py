"""Rendering the HEART reports: Markdown for reading, JSON for everything, CSV for one table at a time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import EmoharborError
from ...stats.bootstrap import MIN_N, TOO_SMALL, too_small
from ...tables import NA, RESUME, csv_table, interval, md_table, nothing_measured, num
from ..dimensions import OVERALL

CSV_TABLES = {
    "ratings": ["ratings", "win_rates_vs_human", "order_consistency", "length_terms"],
    "agreement": ["judge_human", "human_human", "alpha", "bias", "rationale_focus", "people_pairs", "people_ratings"],
    "strategies": ["profiles"],
}
JUDGE = "`emoharbor heart judge RUN` makes the judges' verdicts"  # what to run for a table of the judges' verdicts


def dict_table(rows: list[dict[str, Any]], empty: str) -> str:
    """A Markdown table of rows with the first row's keys as columns; no rows: one line saying why (``empty``)."""
    cols = list(rows[0]) if rows else []
    return md_table(cols, [[r.get(c) for c in cols] for r in rows], empty)


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def to_csv(data: dict[str, Any], report: str, table: str | None) -> str:
    names = CSV_TABLES[report]
    name = table or names[0]
    if name not in names:
        raise EmoharborError(f"no table '{name}' in the {report} report: choose one of {', '.join(names)}")
    rows: list[dict[str, Any]] = data[name]
    cols: list[str] = list(dict.fromkeys(c for r in rows for c in r))
    return csv_table(cols, [[r.get(c) for c in cols] for r in rows])


Row = dict[str, Any]


def _grouped(rows: list[Row], last: str) -> dict[tuple[str, str, str], list[Row]]:
    """The rows by (judge, subset, ``last``), in the order first seen."""
    out: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        out.setdefault((r["judge"], r["subset"], r[last]), []).append(r)
    return out


def rating_tables(data: dict[str, Any]) -> list[tuple[tuple[str, str, str], list[tuple[str, dict[str, Row], str]]]]:
    """The ratings grouped as they are shown: one table per (judge, subset, variant), one row per competitor
    (highest overall rating first) holding its rows by dimension and its overall wins-ties-losses."""
    out = []
    for scope, rows in _grouped(data["ratings"], "variant").items():
        comps = []
        by_overall = [r["competitor"] for r in rows if r["dimension"] == OVERALL]  # rows come sorted by rating
        for c in dict.fromkeys([*by_overall, *(r["competitor"] for r in rows)]):
            by_dim = {r["dimension"]: r for r in rows if r["competitor"] == c}
            o = by_dim.get(OVERALL) or {"wins": 0, "ties": 0, "losses": 0}
            comps.append((c, by_dim, f"{o['wins']}-{o['ties']}-{o['losses']}"))
        out.append((scope, comps))
    return out


def win_rate_rows(data: dict[str, Any]) -> list[tuple[tuple[str, str, str], dict[str, Row]]]:
    """Win rates against the human reply by (judge, subset, competitor), each with its rows by dimension;
    groups whose histories have no human reply are left out."""
    groups = _grouped(data["win_rates_vs_human"], "competitor").items()
    by_dim = [(g, {r["dimension"]: r for r in rows}) for g, rows in groups]
    return [(g, rows) for g, rows in by_dim if any(r["pairs"] for r in rows.values())]


def _figure(value: Any, low: Any, high: Any, histories: int | None, digits: int = 2, na: str = NA) -> str:
    """A figure with its interval; under ``MIN_N`` histories the figure alone, "n too small"; ``na`` without one."""
    if value is None:
        return na
    if too_small(histories):
        return f"{num(value, digits)} ({TOO_SMALL})"
    return interval(value, low, high, digits)


def _interval(r: Row | None, prefix: str = "") -> str:
    """A rating with its interval (``prefix`` "lc_": the length-controlled one)."""
    r = r or {}
    return _figure(r.get(f"{prefix}rating"), r.get(f"{prefix}low"), r.get(f"{prefix}high"), r.get("histories"),
                   na="not compared")  # fmt: skip


def _win_rate(r: Row, prefix: str = "") -> str:
    """A win rate with its interval over histories and n (pairs); under ``MIN_N`` histories "n too small"."""
    wr = r.get(f"{prefix}win_rate")
    if wr is None:
        return f"n/a (n={r['pairs']})"
    if too_small(r.get("histories")):
        return f"{num(wr, 3)} ({TOO_SMALL}, n={r['pairs']})"
    return f"{interval(wr, r.get(f'{prefix}low'), r.get(f'{prefix}high'), 3)} (n={r['pairs']})"


LC = "length-controlled"


def length_term_rows(data: dict[str, Any]) -> list[tuple[tuple[str, str, str], dict[str, Row]]]:
    """The length terms by (judge, subset, variant), each with its rows by dimension."""
    groups = _grouped(data.get("length_terms", []), "variant").items()
    return [(g, {r["dimension"]: r for r in rows}) for g, rows in groups]


def _gamma(r: Row | None) -> str:
    r = r or {}
    return _figure(r.get("gamma"), r.get("low"), r.get("high"), r.get("histories"))


def ratings_md(data: dict[str, Any]) -> str:
    keys: list[str] = data["dimensions"]
    parts = [
        f"# HEART ratings: {data['run']}",
        "",
        f"Bradley-Terry ratings (Elo scale, 1000 = geometric mean; 400 points = 10:1 odds), "
        f"{data['bootstrap']} bootstrap resamples of histories for 95% intervals, prior {data['prior']} "
        f"pseudo-wins each way per compared pair. Under {MIN_N} histories a figure has no interval ({TOO_SMALL}).",
        "",
        f"**{LC}** rows: the same verdicts fitted with a length term, logit P(a beats b) = theta_a - theta_b + "
        "gamma * tanh(d / s), d = words of a's reply - words of b's, s = the root mean square of d (AlpacaEval 2); "
        "the rating is theta (the length term held at 0), the win rate against the human the model's "
        "P(beats the human) at equal length.",
    ]
    parts += [f"- **{k}**: {v}" for k, v in data["variants"].items()]
    if not data["ratings"]:
        parts += ["", "**No pair was scored in both orders, so there is nothing to rate**: see the counts below."]
    for (judge, subset, variant), comps in rating_tables(data):
        table = []
        for c, by_dim, wtl in comps:
            table.append([c, *[_interval(by_dim.get(k)) for k in keys], wtl])
            table.append([f"{c} ({LC})", *[_interval(by_dim.get(k), "lc_") for k in keys], ""])
        parts += [
            "",
            f"## {variant} — judge: {judge}, histories: {subset}",
            "",
            md_table(["competitor", *keys, "overall W-T-L"], table),
        ]
    wr = []
    for g, by_dim in win_rate_rows(data):
        wr.append([*g, "raw", *[_win_rate(by_dim[k]) if k in by_dim else "n/a" for k in keys]])
        wr.append([*g, LC, *[_win_rate(by_dim[k], "lc_") if k in by_dim else "n/a" for k in keys]])
    if wr:
        parts += ["", "## Win rate against the human reply (ties count half)", ""]
        parts.append(md_table(["judge", "histories", "competitor", "win rate", *keys], wr))
    terms = [[*g, *[_gamma(by_dim.get(k)) for k in keys]] for g, by_dim in length_term_rows(data)]
    if terms:
        parts += [
            "",
            "## Length term (gamma: a reply longer by the typical difference s gains 0.76 gamma in log-odds; "
            "0 = no pull toward length)",
            "",
            md_table(["judge", "histories", "variant", *keys], terms),
        ]
    parts += [
        "",
        "## Order consistency (the winner did not flip when the order was swapped)",
        "",
        dict_table(data["order_consistency"], f"no pair was scored in both orders: {JUDGE}; see the counts below"),
        "",
        "## Counts",
        "",
    ]
    parts.append(overview_md(data["overview"], data["counts"]))
    return "\n".join(parts) + "\n"


def counts_text(counts: Mapping[str, Any], empty: str = "none") -> str:
    """Counts as words: {"ok": 7, "judge_unscored": 4} -> "7 ok, 4 judge unscored"; ``empty`` when there are none."""
    return ", ".join(f"{n} {str(k).replace('_', ' ')}" for k, n in counts.items()) or empty


def by_status(statuses: Mapping[str, int]) -> str:
    """Units by status: "20 ok, 4 unscored, 0 errors" (those three always, any other status after them)."""
    main = {"ok": statuses.get("ok", 0), "unscored": statuses.get("unscored", 0), "errors": statuses.get("error", 0)}
    return counts_text({**main, **{k: v for k, v in statuses.items() if k not in ("ok", "unscored", "error")}})


def stage_text(stage: str, s: Mapping[str, Any]) -> str:
    """What a HEART stage did, as a sentence, from its summary (``pipeline.stage_summary``, or a strategy
    check's counts)."""
    done = f"{s.get('done_now', 0)} done now, {s.get('resumed', 0)} already done"
    if stage == "generate":
        return (
            f"generated {s.get('units', 0)} candidates ({by_status(s.get('candidates_by_status', {}))}) for "
            f"{s.get('histories', 0)} histories; {done}"
        )
    if stage == "import":
        return (
            f"imported {s.get('histories', 0)} histories with {s.get('units', 0)} candidate replies "
            f"({by_status(s.get('candidates_by_status', {}))}) and {s.get('human_judgments', 0)} human pair judgments "
            f"({s.get('human_ties', 0)} ties) implied by the ratings; {done}"
        )
    if stage == "judge":
        why = {"pairs_candidate_not_generated": "with a candidate not generated yet",
               "pairs_candidate_unusable": "with an unusable candidate"}  # fmt: skip
        left = {why.get(k, k): v for k, v in s.items() if k.startswith("pairs_")}
        return (
            f"judged {s.get('pairs', 0)} pairs in both orders by every judge: {s.get('judgements', 0)} judgements "
            f"({by_status(s.get('judgements_by_status', {}))}); {done}"
            + (f"; pairs left out: {counts_text(left)}" if left else "")
        )
    if stage == "strategies":
        return (
            f"labelled the sentences of {s.get('replies', 0)} replies ({by_status(s.get('replies_by_status', {}))}); "
            f"{done}; candidates without a usable reply, left out: {s.get('candidates_unusable', 0)}"
        )
    if stage == "strategy-check":
        return f"labelled {s.get('messages', 0)} ESConv messages; {done}"
    return counts_text({k: v for k, v in s.items() if isinstance(v, int)})


def _per(nested: Mapping[str, Mapping[str, int]]) -> str:
    """{who: {status: n}} as "echo: 4 ok, 1 unscored; human: 3 ok"."""
    return "; ".join(f"{who}: {counts_text(by)}" for who, by in nested.items()) or "none"


def overview_md(ov: dict[str, Any], counts: dict[str, Any]) -> str:
    lines = [f"- histories used: {counts_text(ov['histories'])}; speakers inferred in {ov['speakers_inferred']}"]
    for s in ov["sources"]:
        lines.append(
            f"- source {s['name']} ({s['source']}): examined {s['examined']}, usable {s['usable']}, "
            f"used {s['used']}, speakers inferred {s['inferred']}, skipped {sum((s['skipped'] or {}).values())}"
            + (f" ({counts_text(s['skipped'])})" if s["skipped"] else "")
        )
        lines += [f"  - {n}" for n in s["notes"][:5]]
    lines.append(f"- candidate replies by status: {_per(ov['candidates'])}")
    seeker = counts_text(ov["candidates_written_as_the_seeker"])
    lines.append(f"- candidate replies written as the seeker ('Seeker: ...'): {seeker}")
    lines.append(f"- judgements by status: {_per(ov['judgements'])}")
    lines.append(f"- pair verdicts: {counts_text(counts)}")
    for name, st in ov["stages"].items():
        lines.append(f"- stage {name}: {stage_text(name, st)}")
    lines.append(f"- events: {counts_text(ov['events'])}")
    for role, u in ov["usage_by_role"].items():
        lines.append(
            f"- calls ({role}): {int(u['calls'])} ({int(u['cached'])} cached, {int(u['errors'])} failed), "
            f"spent {int(u['prompt_tokens'])} prompt + {int(u['completion_tokens'])} completion tokens, "
            f"${u.get('cost_usd', 0.0):.4f}; from the cache "
            f"{int(u.get('cached_prompt_tokens', 0) + u.get('cached_completion_tokens', 0))} tokens, "
            f"${u.get('cached_cost_usd', 0.0):.4f}; {u['latency_s']:.0f} s"
        )
    return "\n".join(lines)


def agreement_md(data: dict[str, Any]) -> str:
    parts = [f"# HEART agreement and judge biases: {data['run']}", ""]
    parts += [f"- {n}" for n in data["notes"]]
    parts.append(f"- human judgments: {data['human_judgments']} from {data['human_raters']} raters")
    for imp in data["human_imports"]:
        parts.append(
            f"- import {imp['source']}: {imp['rows']} rows, {imp['imported']} imported, skipped "
            f"{counts_text(imp['skipped'], empty='0')}"
        )
        parts += [f"  - {n}" for n in imp["notes"][:5]]
    for title, key, why in [
        ("Judge-human agreement", "judge_human", f"no pair has both a judge's verdict and a person's yet: {JUDGE}"),
        ("Human-human agreement (the ceiling)", "human_human", "no item was judged by two people or more: no ceiling"),
        ("Krippendorff's alpha (nominal: a / b / tie)", "alpha", "no item was judged by two raters or more"),
        ("Judge biases", "bias", f"no judgment yet: {JUDGE}"),
        ("What rationales talk about (share of rationales per dimension)", "rationale_focus",
         f"no rationale yet: {JUDGE}"),
    ]:  # fmt: skip
        parts += ["", f"## {title}", "", measured_table(data[key], why)]
    return "\n".join(parts + people_md(data)) + "\n"


def measured_table(rows: list[dict[str, Any]], why: str) -> str:
    """The rows that hold a figure (a row whose figures are all n/a is left out, and said to be), or one line
    saying why there is none."""
    kept = [r for r in rows if any(isinstance(v, float) for v in r.values())]
    if not kept:
        return nothing_measured(why)
    left = len(rows) - len(kept)
    note = f"\n\n({left} {'row' if left == 1 else 'rows'} with nothing measured left out.)" if left else ""
    return dict_table(kept, why) + note


def people_md(data: dict[str, Any]) -> list[str]:
    """The scorers against the people's pairs and ratings (``people.py``), with the baselines."""
    if not data.get("people_pairs") and not data.get("people_ratings"):
        return []
    left = counts_text(data.get("people_ties", {}), empty="0")
    parts = ["", "## Scorers against the people's pairs (both orders counted; 95% intervals over histories)", "",
             f"The people's decided pairs: {data.get('people_decided', 0)}; their ties, left out, by dimension: "
             f"{left}. agreement: the share of pairs where the scorer names the people's choice, each order counting "
             "half (a flip is 0.5, counted in ties); the probability reading is the mean probability given to the "
             "people's choice. Every figure of a dimension is on the same pairs; unscored: pairs a scorer has no "
             "value for (left out; not asked: pairs the run's pairs: setting did not give the judge); minus "
             "baseline: the scorer's figure minus the baseline's on the same items, its interval from the same "
             "resamples; it beats the baseline when that interval lies above 0. Under "
             f"{MIN_N} histories: no interval ({TOO_SMALL}).", ""]  # fmt: skip
    ties = "the people decided no pair: their ties are counted above"
    parts.append(_people_rows(data.get("people_pairs", []), "agreement", "pairs", ties))
    if data.get("people_ratings"):
        parts += ["", "## Reply scores against the people's ratings (Spearman's rho; 95% intervals over histories)",
                  "", _people_rows(data["people_ratings"], "spearman", "replies")]  # fmt: skip
    return parts


def _people_rows(rows: list[Row], stat: str, n: str, empty: str = "") -> str:
    more = ["ties"] if rows and "ties" in rows[0] else []
    table = [[r["dimension"], r["scorer"] + (" (baseline)" if r["baseline"] else ""), r["reading"], r[n],
              r["histories"], _estimate(r, stat), _minus(r), r["beats_baseline"] or "(baseline)",
              *(r[k] for k in more), _unscored(r)] for r in rows]  # fmt: skip
    head = ["dimension", "scorer", "reading", n, "histories", stat, "minus baseline", "beats the baseline"]
    return md_table([*head, *more, "unscored"], table, empty)


def _unscored(r: Row) -> str:
    """Unscored, and the pairs a judge was not given beside it."""
    return f"{r['unscored']} (+{r['not_asked']} not asked)" if r.get("not_asked") else str(r["unscored"])


def _minus(r: Row) -> str:
    """The paired margin over the baseline, signed, with its interval."""
    na = "-" if r["baseline"] else "n/a"
    return interval(r["minus_baseline"], r["minus_baseline_low"], r["minus_baseline_high"], 3, na, signed=True)


def _estimate(r: Row, stat: str) -> str:
    return _figure(r[stat], r.get("low"), r.get("high"), r["histories"], 3)


def strategies_md(data: dict[str, Any]) -> str:
    parts = [
        f"# HEART support strategies: {data['run']}",
        "",
        f"Sentence-level labels by {data['labeller']} (one of {len(data['strategies'])} strategies per "
        f"sentence); shares are of labelled sentences. Replies by status: {by_status(data['replies_by_status'])}; "
        f"sentences {data['sentences']}, unlabelled {data['unlabelled_sentences']}; events "
        f"{counts_text(data['events'])}.",
    ]
    if not data["profiles"]:
        parts += ["", nothing_measured(f"no candidate reply is finished yet: {RESUME}")]
    for subset in dict.fromkeys(r["subset"] for r in data["profiles"]):
        rows = [r for r in data["profiles"] if r["subset"] == subset]
        comps = [r["competitor"] for r in rows]
        table = [[s, *[r[s] for r in rows]] for s in data["strategies"]]
        table += [[k, *[r[k] for r in rows]] for k in ("replies", "sentences", "unlabelled")]
        labelled = any(r["sentences"] > r["unlabelled"] for r in rows)
        why = f"none of the {sum(r['sentences'] for r in rows)} sentences got a label: see the replies by status above"
        parts += ["", f"## histories: {subset}", "", md_table(["strategy", *comps], table if labelled else [], why)]
    return "\n".join(parts) + "\n"
