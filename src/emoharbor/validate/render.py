"""The validation table as plain text, Markdown, CSV or JSON."""

from __future__ import annotations

import json
from typing import Any

from ..stats.bootstrap import TOO_SMALL, too_small
from ..tables import RESUME, csv_table, interval, num, text_table
from .analysis import LENGTH_KEYS
from .pace import pace_lines

CELL_FIELDS = ("value", "lo", "hi", "n")
VIEW_WORDS = {"replayed": "replayed turns", "all": "whole dialog"}


def cell_text(c: dict[str, Any]) -> str:
    """``0.41 [0.20, 0.60] n=12``; ``0.41 (n=12)`` without an interval; ``0.41 (n too small, n=3)`` under
    ``MIN_N`` items (as the leaderboard and the report); ``n/a (n=0)``."""
    if c["value"] is not None and too_small(c["n"]):
        return f"{num(c['value'])} ({TOO_SMALL}, n={c['n']})"
    text = interval(c["value"], c["lo"], c["hi"])
    return f"{text} n={c['n']}" if c["value"] is not None and c["lo"] is not None else f"{text} (n={c['n']})"


def all_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row of the table in print order: the judges and the inner state, the baselines, the margins
    over the best baseline, the differences between judges."""
    return [*data["rows"], *data.get("baselines", []), *data.get("margins", []), *data["differences"]]


def is_difference(data: dict[str, Any], row: dict[str, Any]) -> bool:
    """A margin or a difference between judges: 0, not chance level, means no better."""
    return any(row is r for r in [*data.get("margins", []), *data["differences"]])


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows``, or none when not one of their cells holds a figure (a table of n/a says nothing)."""
    return rows if any(c["value"] is not None for r in rows for c in r["cells"].values()) else []


def table_rows(data: dict[str, Any], length: bool = False) -> tuple[list[str], list[list[str]]]:
    """The agreement table, or (``length``) the length-controlled one: one row per judge row, what its score
    says beyond the word count."""
    labels = data.get("length_labels", {}) if length else data["target_labels"]
    header = ["judge", "score", "scoring", *[labels.get(t, t) for t in data["targets"]]]
    rows = [
        [r["judge"], r["score"], r.get("scoring", ""), *[cell_text(r["cells"][t]) for t in data["targets"]]]
        for r in measured(data.get("length_control", []) if length else all_rows(data))
    ]
    return header, rows


def length_title(data: dict[str, Any]) -> str:
    feature = data["counts"].get("length_feature", "mean supporter words")
    return f"Beyond length: each judge with the {feature} of the turns it saw controlled for"


def summary_lines(data: dict[str, Any]) -> list[str]:
    c = data["counts"]
    cfg = data["config"]
    cap = cfg.get("max_supporter_turns") or "none"
    sources = ", ".join(f"{k} {v}" for k, v in sorted(c["by_source"].items())) or "none"
    lines = [
        f"conversations: {c['conversations']} ({sources}); "
        f"replay errors {c['replay_errors']}; failed (ESConv label) {c['failed']}",
        f"supporter turns replayed: {c['supporter_turns_replayed']} of {c['supporter_turns_total']} "
        f"(cap {cap} per conversation; {c['truncated']} conversations cut at the cap)",
    ]
    co = c.get("coherence")
    if co and co["checked"]:
        lines.append(
            f"inner state coherence: {co['incoherent']} of {co['checked']} replayed turns where the appraisal's fit "
            "and the intensity move disagree (a good fit with rising intensity, a poor fit with falling)"
        )
    for j, n in c["judges"].items():
        views = c.get("saw", {}).get(j)
        saw = f"; saw the {' and the '.join(VIEW_WORDS.get(v, v) for v in views)}" if views else ""
        lines.append(
            f"judge {j}: scored {n['scored']}, unscored {n['unscored']}, not assessed {n['not_assessed']}{saw}"
        )
    if c.get("margin_baselines"):
        lines.append(
            "baselines: no model, from the turns each judge saw; margins: a judge minus the best of "
            f"{', '.join(c['margin_baselines'])}, chosen in every resample"
        )
    if data.get("length_control"):
        lines.append(
            f"beyond length: 'partial rho ... | words' is the judge's rho with the {c.get('length_feature')} of "
            "the turns it saw partialled out (on ranks); 'AUROC beyond length' is the cross-validated AUROC of a "
            "logistic regression on words and the judge's score minus that on words alone (stratified 5-fold, "
            "leave-one-out up to 20 conversations, redone in every resample); 0 = nothing beyond length"
        )
    lines += pace_lines(data.get("pace") or {})
    lines += [f"note: {x}" for x in c.get("notes", [])]
    judge = cfg.get("judge", {}).get("model")  # runs from before judge cards name one third-party judge
    lines.append(
        f"models: user {cfg['user']['model']}" + (f", third-party judge {judge}" if judge else "") + "; "
        f"paired bootstrap 95% intervals, {data['n_boot']} resamples, seed {data['seed']}"
    )
    calls = sum(int(u["calls"]) for u in data["usage_by_role"].values())
    usage = data["usage_by_role"].values()
    cached = sum(int(u.get("cached", 0)) for u in usage)
    tokens = sum(int(u["prompt_tokens"] + u["completion_tokens"]) for u in usage)
    cached_tokens = sum(int(u.get("cached_prompt_tokens", 0) + u.get("cached_completion_tokens", 0)) for u in usage)
    spent, saved = sum(u.get("cost_usd", 0.0) for u in usage), sum(u.get("cached_cost_usd", 0.0) for u in usage)
    lines.append(
        f"wall time {data.get('wall_s', 0):.0f} s (all sessions of this run); {calls} model calls "
        f"({calls - cached} made, {cached} from the cache); spent {tokens} tokens, ${spent:.4f}; "
        f"from the cache {cached_tokens} tokens, ${saved:.4f}"
    )
    return lines


def to_text(data: dict[str, Any], md: bool = False) -> str:
    header, rows = table_rows(data)
    head = "## " if md else "# "
    bullet = "- " if md else ""
    n = data["counts"]["conversations"]
    few = f"{n} conversations are too few for a figure: a larger --limit replays more"
    why = few if n else f"no conversation is replayed yet: {RESUME}"
    parts = [f"{head}Agreement with real help-seekers (ESConv survey)", text_table(header, rows, md, why)]
    if data.get("length_control"):
        unscored = "no judge has scored a conversation: `emoharbor assess RUN --judge CARD` rates them"
        parts += [f"{head}{length_title(data)}", text_table(*table_rows(data, length=True), md, unscored)]
    parts.append("\n".join(bullet + line for line in summary_lines(data)))
    return "\n\n".join(parts)


def to_csv(data: dict[str, Any]) -> str:
    rows = [
        [r["judge"], r["score"], t, *(r["cells"][t][k] for k in CELL_FIELDS), r.get("scoring", "")]
        for r in all_rows(data)
        for t in data["targets"]
    ]
    rows += [
        [r["judge"], r["score"], LENGTH_KEYS[t], *(r["cells"][t][k] for k in CELL_FIELDS), r.get("scoring", "")]
        for r in data.get("length_control", [])
        for t in data["targets"]
    ]
    return csv_table(["judge", "score", "target", "value", "lo", "hi", "n", "scoring"], rows)


def render_validation(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, default=str)
    if fmt == "csv":
        return to_csv(data)
    return to_text(data, md=(fmt == "md"))
