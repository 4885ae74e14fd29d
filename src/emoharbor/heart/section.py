"""A HEART run's section of ``emoharbor report``: what `emoharbor heart ratings|agreement|strategies` print, as
HTML tables (the run's own bootstrap setting, so the intervals match the command's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..report.html import dict_rows_table, esc, note, plain, table
from ..stats.bootstrap import MIN_N, TOO_SMALL, too_small
from ..tables import bounds, num
from .analysis.render import LC as LC_SHORT
from .analysis.render import length_term_rows, overview_md, rating_tables, win_rate_rows

NA = '<span class="na">-</span>'  # a cell without a figure


def heart_html(folder: Path) -> str:
    try:
        data, agree, strat = _reports(folder)
    except EmoharborError as e:  # one unreadable run must not cost the report its other runs
        return note(f"This is a HEART run, but its results could not be read: {e}")
    keys: list[str] = data["dimensions"]
    parts = [
        f'<p class="hint">Bradley-Terry ratings (Elo scale, 1000 = geometric mean) with 95% intervals over '
        f"{data['bootstrap']} bootstrap resamples of histories. plain: a pair verdict is one win; strength: "
        "the winner's strength (1-5) counts as wins. A winner that flips with the order is a tie. "
        f"{LC_SHORT}: the length-controlled figure (AlpacaEval 2's way), the same verdicts fitted with a term for "
        "the difference in words, read at equal length. Under "
        f"{MIN_N} histories a figure has no interval ({TOO_SMALL}).</p>"
    ]
    scopes = rating_tables(data)
    for (judge, subset, variant), comps in scopes:
        body = [[esc(c), *[_rating(by_dim.get(d)) for d in keys], wtl] for c, by_dim, wtl in comps]
        parts.append(f"<h4>{esc(variant)}: judge {esc(judge)}, histories {esc(subset)}</h4>")
        parts.append(table(["competitor", *[esc(d) for d in keys], "overall W-T-L"], body, cls="heart-ratings"))
    if not scopes:
        parts.append(note("no pair was scored in both orders, so there is nothing to rate yet"))
    parts.append("<h4>Win rate against the human reply (ties count half)</h4>" + _win_rates(data, keys))
    parts.append(_length_terms(data, keys))
    parts.append("<h4>Order consistency</h4>" + dict_rows_table(data.get("order_consistency", [])))
    parts.append(_agreement(agree))
    if strat is not None:
        parts.append(_strategies(strat))
    lines = overview_md(data["overview"], data["counts"]).splitlines()
    parts.append("<h4>Counts</h4><ul>" + "".join(f"<li>{esc(ln.lstrip(' -'))}</li>" for ln in lines) + "</ul>")
    return "".join(parts)


def _reports(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """The run's ratings, agreement and (once its replies are labelled) strategies reports."""
    from .analysis.reports import agreement_report, ratings_report, strategies_report
    from .stages.pipeline import read_run
    from .stages.strategies import label_patterns

    store, config, base = read_run(folder)
    try:
        data = ratings_report(store, config)
        agree = agreement_report(store, config, base)
        labelled = store.get("stage", ("strategies",)) is not None
        strat = strategies_report(store, config, base) if labelled else None
        if strat is not None:
            strat["label_patterns"] = label_patterns([d for _, d in store.items("strategy")], strat["strategies"])
    finally:
        store.close()
    return data, agree, strat


def _agreement(agree: dict[str, Any]) -> str:
    """The judges' biases, their agreement with the people (where there are human judgments) and what the
    rationales talk about."""
    parts = [
        '<h4>Judge biases</h4><p class="hint">first_shown_wins: share of verdicts for the reply shown first; '
        "longer_wins: for the longer reply (pairs whose replies differ in length); own_win_rate: for the "
        "replies of the candidates served by the judge's own model, against the others.</p>"
        + dict_rows_table(agree["bias"])
    ]
    if agree["human_judgments"]:
        for title, key in [
            ("Judge-human agreement", "judge_human"),
            ("Human-human agreement (the ceiling)", "human_human"),
            ("Krippendorff's alpha (nominal: a / b / tie)", "alpha"),
            ("Scorers against the people's pairs (both orders counted; minus the longer reply)", "people_pairs"),
            ("Reply scores against the people's ratings (Spearman; minus the word count)", "people_ratings"),
        ]:
            if agree.get(key) or not key.startswith("people_"):  # the scorers' tables only where there are some
                parts.append(f"<h4>{title}</h4>" + dict_rows_table(agree[key]))
    else:
        parts.append(note("No human judgments imported: `emoharbor heart agreement RUN --human FILE` adds them."))
    parts.append("<h4>What rationales talk about</h4>" + dict_rows_table(agree["rationale_focus"]))
    return "".join(parts)


def _figure(value: float | None, low: float | None, high: float | None, histories: int | None, digits: int,
            *, sort: bool) -> str:  # fmt: skip
    """A rating or win rate with its interval; under ``MIN_N`` histories "n too small" (no interval)."""
    if value is None:
        return NA
    attr = f' data-sort="{value:.6f}"' if sort else ""
    shown = f"<span{attr}>{num(value, digits)}</span>"
    if too_small(histories):
        return f'{shown} <small class="small-n">{TOO_SMALL}</small>'
    ci = bounds(low, high, digits)
    return shown + (f" <small>{ci}</small>" if ci else "")


def _lc(r: dict[str, Any], key: str, digits: int) -> str:
    """The length-controlled figure (``lc_`` + ``key``), to go under the raw one; "" where the row has none."""
    if f"lc_{key}" not in r:
        return ""
    lc = _figure(r[f"lc_{key}"], r.get("lc_low"), r.get("lc_high"), r.get("histories"), digits, sort=False)
    return f'<br><small class="lc">{LC_SHORT}</small> {lc}'


def _rating(r: dict[str, Any] | None) -> str:
    """The raw rating (the cell sorts by it) and, under it, the length-controlled one."""
    if r is None or r.get("rating") is None:
        return NA
    return _figure(r["rating"], r.get("low"), r.get("high"), r.get("histories"), 2, sort=True) + _lc(r, "rating", 2)


def _win_rate(r: dict[str, Any]) -> str:
    raw = _figure(r.get("win_rate"), r.get("low"), r.get("high"), r.get("histories"), 3, sort=True)
    return f"{raw} <small>n={r['pairs']}</small>" + _lc(r, "win_rate", 3)


def _win_rates(data: dict[str, Any], keys: list[str]) -> str:
    rows = [[*[esc(x) for x in g], *[_win_rate(by_dim[k]) if k in by_dim else NA for k in keys]]
            for g, by_dim in win_rate_rows(data)]  # fmt: skip
    if not rows:
        return note("no pair with a human reply was scored in both orders")
    return table(["judge", "histories", "competitor", *[esc(k) for k in keys]], rows, cls="heart-winrates")


def _length_terms(data: dict[str, Any], keys: list[str]) -> str:
    rows = [[*[esc(x) for x in g], *[NA if (t := by_dim.get(k)) is None else
             _figure(t.get("gamma"), t.get("low"), t.get("high"), t.get("histories"), 2, sort=True) for k in keys]]
            for g, by_dim in length_term_rows(data)]  # fmt: skip
    if not rows:
        return ""
    return (
        '<h4>Length term</h4><p class="hint">gamma of the length-controlled fit: a reply longer by the typical '
        "difference gains 0.76 gamma in log-odds; 0 = no pull toward length.</p>"
        + table(["judge", "histories", "variant", *[esc(k) for k in keys]], rows, cls="heart-length")
    )


def _strategies(strat: dict[str, Any]) -> str:
    out = [
        f'<h4>Support strategies</h4><p class="hint">Share of each competitor\'s labelled sentences, labelled by '
        f"{esc(strat['labeller'])}; sentences {strat['sentences']}, unlabelled {strat['unlabelled_sentences']}.</p>"
    ]
    for subset in dict.fromkeys(r["subset"] for r in strat["profiles"]):
        rows = [r for r in strat["profiles"] if r["subset"] == subset]
        body = [[esc(s), *[plain(r[s]) for r in rows]] for s in strat["strategies"]]
        body += [[esc(k), *[esc(r[k]) for r in rows]] for k in ("replies", "sentences", "unlabelled")]
        out.append(f"<p>histories: {esc(subset)}</p>")
        out.append(table(["strategy", *[esc(r["competitor"]) for r in rows]], body, cls="heart-strategies"))
    p = strat["label_patterns"]
    out.append(
        f'<p class="hint">Most common label of first sentences: {esc(p["most_common_first"])} '
        f"({plain(p['most_common_first_share'])} of {p['first_sentences']}); adjacent sentences labelled with "
        f"the next strategy of the list: {plain(p['next_in_list_share'])} of {p['adjacent_pairs']} (by chance "
        f"about {plain(p['next_in_list_by_chance'])}).</p>"
    )
    out += [note(f"Warning: {w}. Check the labeller (emoharbor heart strategy-check).") for w in p["warnings"]]
    return "".join(out)
