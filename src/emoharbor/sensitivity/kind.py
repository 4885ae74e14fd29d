"""The sensitivity run (``emoharbor sensitivity``) as a kind of run (``kinds.py``): ``emoharbor leaderboard``
and ``report --format`` print its sensitivity table, ``emoharbor report`` shows it as a heat map (scorer x
bad reply: ``section.py``), ``emoharbor export`` writes it as a long table (``sensitivity.FMT``), the
tidy results hold one row per case, bad-reply maker and scorer (``results.FMT``, ``load_results``) and
``emoharbor judges`` shows how often each judge prefers the real reply."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary
from ..scoring.judges import scorer_rows
from ..scoring.names import REAL
from .analysis import bad_makers, outcomes_of, pair_outcomes, pointwise_values, sensitivity_table
from .names import ALL
from .render import csv_rows, render_sensitivity

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .run import SensitivityPlan


def tidy(store: RunStore) -> list[dict[str, Any]]:
    """One row per (case, bad-reply maker, scorer): the real reply's score and the bad one's (a pairwise
    judge: none), and the outcome the table averages (1: the real reply above, 0: below, 0.5: a tie or, for a
    pairwise judge, orders that disagree; None: unscored)."""
    cfg, cases = store.config(), {d["id"]: d for _, d in store.items("case")}
    makers = bad_makers(cfg)
    pointwise = pointwise_values(cfg, cases, [d for _, d in store.items("score")])
    run = store.folder.name
    out = []
    for scorer, values in pointwise.items():
        for maker in makers:
            for case, outcome in outcomes_of(values, maker).items():
                out.append({"run": run, "case": case, "source": cases.get(case, {}).get("source"), "kind": maker,
                            "scorer": scorer, "pairwise": False, "real": values.get((case, REAL)),
                            "bad": values.get((case, maker)), "outcome": outcome})  # fmt: skip
    for scorer, outs in pair_outcomes([d for _, d in store.items("pair")]).items():
        for (case, maker), outcome in sorted(outs.items()):
            out.append({"run": run, "case": case, "source": cases.get(case, {}).get("source"), "kind": maker,
                        "scorer": scorer, "pairwise": True, "real": None, "bad": None, "outcome": outcome})  # fmt: skip
    return out


def preference(r: dict[str, Any]) -> str:
    """The cell of ``emoharbor judges``: the share of pairs where the real reply is preferred, its interval and
    n, the tie rate."""
    c = r.get("sensitivity")
    if not c or c.get("value") is None:
        return "-"
    ties = r.get("sensitivity_ties")
    tail = f", ties {ties:.0%}" if ties is not None else ""
    if c.get("lo") is None:
        return f"{c['value']:.0%} (n={c['n']}{tail})"
    return f"{c['value']:.0%} [{c['lo']:.0%}, {c['hi']:.0%}] n={c['n']}{tail}"


class SensitivityKind(RunKind):
    name = "sensitivity"
    title = "a sensitivity run (emoharbor sensitivity)"
    judges_note = "'prefers the real reply' (emoharbor sensitivity): 50% is chance, and a tie counts half."

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        """The sensitivity table (every scorer and bad-reply maker): rendered, and its data."""
        data = sensitivity_table(store, seed=seed)
        return render_sensitivity(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        view.data = sensitivity_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """Each judge's share of pairs where it prefers the real reply to a rule-made bad one (over every bad
        reply, ties half, with its bootstrap interval) and its tie rate; the simulated user's reward is
        the judge "user" (expected: from its probability-weighted readouts). From the run with the most cases."""
        data = sensitivity_table(store)
        for row, r in scorer_rows(store, ("score", "pair"), data["rows"], rows, "sensitivity", data["cases"]):
            c = r[ALL]
            row.update(
                sensitivity_run=str(folder),
                sensitivity_n=data["cases"],
                sensitivity={"value": c["share"], "lo": c["lo"], "hi": c["hi"], "n": c["n"]},
                sensitivity_ties=r["tie_rate"],
                sensitivity_pairs=r["pairs"],
            )

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        return [("prefers the real reply", preference)]

    def export(self, store: RunStore) -> dict[str, Rows]:
        """``sensitivity``: one row per scorer and bad-reply maker (and "all kinds"), as ``--format csv``."""
        return {"sensitivity": csv_rows(sensitivity_table(store))}

    def tidy(self, store: RunStore) -> Rows:
        return tidy(store)

    def check(self, plan: SensitivityPlan, *, new: bool) -> None:
        """The plan read the user's files and the judges' cards; the models are built, and reached for a new
        run."""
        from ..preflight import check_run_models, scorer_models

        check_run_models(scorer_models(plan.opts.user, [(j.card.name, j.model) for j in plan.judges]), new=new)

    async def execute(self, plan: SensitivityPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_sensitivity

        return await run_sensitivity(plan, folder, progress=progress)
