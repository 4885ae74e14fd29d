"""The rows of ``emoharbor judges`` a reply-scoring run fills: each figure row by the (judge, scoring) it stands
for, with the judge's card, judgments, unscored share and cost."""

from __future__ import annotations

import json
from typing import Any

from ..kinds import JudgeRows
from ..report.judges_table import add, counts, takes
from ..store.run_store import RunStore
from .names import USER


def row_judge(scorer: str, pairwise: bool) -> tuple[str, str] | None:
    """The (judge, scoring) a figure row of a reply-scoring run stands for: the simulated user's reward is "user", a
    reply card's written and expected scores its argmax and expected scoring, a pairwise judge argmax; None
    for the other rows (the word count, the user's parts)."""
    if pairwise:
        return scorer, "argmax"
    if scorer in ("user reward", "user reward (expected)"):
        return "user", "expected" if scorer.endswith("(expected)") else "argmax"
    for suffix, scoring in ((" (written)", "argmax"), (" (expected)", "expected")):
        if scorer.endswith(suffix) and not scorer.startswith("user "):
            return scorer.removesuffix(suffix), scoring
    return None


def scorer_rows(store: RunStore, unit_tables: tuple[str, ...], figures: list[dict[str, Any]], rows: JudgeRows,
                suite: str, n: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:  # fmt: skip
    """The rows of ``emoharbor judges`` of a run of ``suite`` whose units are scorers' ``unit_tables`` (a
    sensitivity or seekers run: a score's key is (case, reply, scorer), a pair's (case, maker, judge, order)),
    keyed by the (judge, scoring) each figure row stands for, with each one's card, judgments, unscored share
    and cost; returns (row, figure row) of each row that takes the run's figures (``takes``: the
    run's ``n`` units are more than those of the suite's run it holds figures from)."""
    cards: dict[str, Any] = json.loads(store.meta().get("judges", "{}"))
    made = {got: r for r in figures if (got := row_judge(r["scorer"], bool(r.get("pairwise")))) is not None}
    counted = counts(store, unit_tables, 2, field="scorer")
    for judge, scoring in made:
        scorer = USER if judge == "user" else judge
        add(rows, judge, scoring, cards.get(scorer, {}), counted.get(scorer, {}))
    return [(rows[key], r) for key, r in made.items() if takes(rows[key], suite, n)]
