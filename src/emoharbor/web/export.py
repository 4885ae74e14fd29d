"""Exporting a study's submitted answers (attention checks and unsubmitted drafts left out).

Pair judgments are written with exactly the columns ``emoharbor.heart.humans`` reads, so
``emoharbor heart agreement RUN --human FILE`` imports them; conversation scores go to a separate
file (conversation_id, rater, dimension, score, time).
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..assess.dimensions import keys as conversation_keys
from ..errors import EmoharborError
from .forms import CONVERSATION, PAIR, pair_keys, side_of
from .study import Assignment, Item, Study

PAIR_COLUMNS = ["history_id", "competitor_a", "competitor_b", "rater", "dimension", "winner", "strength",
                "rationale", "first_shown"]  # fmt: skip
CONVERSATION_COLUMNS = ["conversation_id", "rater", "dimension", "score", "time"]


@dataclass(frozen=True)
class Rated:
    """One submitted item of one rater, with the rater's answers and their times."""

    assignment: Assignment
    item: Item
    rater: str
    answers: dict[str, str]
    times: dict[str, float]


def rated(study: Study, *, include_attention: bool = False) -> tuple[list[Rated], dict[str, int]]:
    items = {it.id: it for it in study.items()}
    names = {r.id: r.name for r in study.raters()}
    answers: dict[tuple[str, str], dict[str, tuple[str, float]]] = defaultdict(dict)
    for a in study.all_answers():
        answers[(a["rater_id"], a["item_id"])][a["field"]] = (a["value"], a["updated"])
    out, drafts, attention = [], 0, 0
    for asg in study.assignments():
        item, got = items[asg.item_id], answers.get((asg.rater_id, asg.item_id), {})
        if asg.status != "submitted":
            drafts += bool(got)
        elif item.attention and not include_attention:
            attention += 1
        else:
            values = {k: v for k, (v, _) in got.items()}
            out.append(Rated(asg, item, names[asg.rater_id], values, {k: t for k, (_, t) in got.items()}))
    return out, {"unsubmitted_drafts_left_out": drafts, "attention_checks_left_out": attention}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def pair_rows(study: Study, ratings: list[Rated]) -> list[dict[str, Any]]:
    dims = pair_keys(study.heart_dimensions())
    rows = []
    for r in ratings:
        if r.item.rated != PAIR:
            continue
        src, first = r.item.source, r.assignment.first
        names = {"a": src["competitor_a"], "b": src["competitor_b"], "tie": "tie"}
        for d in dims:
            side = side_of(r.answers.get(f"choice.{d}"), first)
            if side is None:  # cannot happen for a submitted item; never guessed at
                raise EmoharborError(f"item {r.item.id}, rater {r.rater}: submitted without a choice for {d}")
            strength = r.answers.get(f"strength.{d}") if side != "tie" else None
            rows.append({
                "history_id": src["history_id"], "competitor_a": src["competitor_a"],
                "competitor_b": src["competitor_b"], "rater": r.rater, "dimension": d, "winner": names[side],
                "strength": int(strength) if strength else None, "rationale": r.answers.get("reason", "").strip(),
                "first_shown": names[first],
            })  # fmt: skip
    return rows


def conversation_rows(ratings: list[Rated]) -> list[dict[str, Any]]:
    rows = []
    for r in ratings:
        if r.item.rated == CONVERSATION:
            for d in conversation_keys():
                field = f"score.{d}"
                rows.append({"conversation_id": r.item.source["conversation_id"], "rater": r.rater, "dimension": d,
                             "score": int(r.answers[field]), "time": iso(r.times[field])})  # fmt: skip
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise EmoharborError(f"{path}: the output file must end in .csv or .jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        if suffix == ".csv":
            w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            w.writeheader()
            w.writerows({k: "" if r[k] is None else r[k] for k in columns} for r in rows)
        else:
            for r in rows:
                f.write(json.dumps({k: r[k] for k in columns}, ensure_ascii=False) + "\n")


def export_study(study: Study, out: Path, conversations_out: Path | None = None) -> dict[str, Any]:
    """Write the pair judgments to ``out`` and, when the study has conversations, their scores to
    ``conversations_out`` (default: OUT's name with ``-conversations``)."""
    ratings, counts = rated(study)
    summary: dict[str, Any] = dict(counts)
    shown = {it.rated for it in study.items() if not it.attention}
    if PAIR in shown:
        rows = pair_rows(study, ratings)
        write_rows(out, rows, PAIR_COLUMNS)
        summary.update({"pair_rows": len(rows), "pair_file": str(out)})
    if CONVERSATION in shown:
        target = conversations_out or out.with_name(f"{out.stem}-conversations{out.suffix}")
        rows = conversation_rows(ratings)
        write_rows(target, rows, CONVERSATION_COLUMNS)
        summary.update({"conversation_rows": len(rows), "conversation_file": str(target)})
    return summary
