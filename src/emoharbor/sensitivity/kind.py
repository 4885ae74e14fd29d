"""The sensitivity run (``emoharbor sensitivity``) as a kind of run (``kinds.py``): ``emoharbor leaderboard``
and ``report --format`` print its sensitivity table, ``emoharbor report`` shows it as a heat map (scorer x
kind of bad reply), ``emoharbor export`` writes it as a long table (``sensitivity.FMT``) and the tidy results
hold one row per case, kind of bad reply and scorer (``results.FMT``, ``load_results``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import Rows, RunKind, Summary
from ..report.html import Cell, esc, heat, note, table
from ..stats.bootstrap import MIN_N, TOO_SMALL, too_small
from .analysis import Values, card_values, outcomes_of, pair_outcomes, sensitivity_table, user_values
from .names import ALL
from .render import csv_rows, pct, render_sensitivity, usage_text

if TYPE_CHECKING:
    from ..report.runs import RunView
    from ..store.run_store import RunStore
    from .run import SensitivityPlan


def tidy(store: RunStore) -> list[dict[str, Any]]:
    """One row per (case, kind of bad reply, scorer): the real reply's score and the bad one's (a pairwise
    judge: none), and the outcome the table averages (1: the real reply above, 0: below, 0.5: a tie or, for a
    pairwise judge, orders that disagree; None: unscored)."""
    from ..reward.settings import RewardSettings
    from .bad import KINDS
    from .names import REAL, USER

    cfg = store.config()
    run = store.folder.name
    s = RewardSettings.model_validate(cfg.get("reward") or {})
    cases = {d["id"]: d for _, d in store.items("case")}
    kinds = [k for k in KINDS if k in (cfg.get("bad") or KINDS)]
    words: Values = {(c, k): float(len(t.split())) for c, d in cases.items() for k, t in d["replies"].items()}
    scores = [d for _, d in store.items("score")]
    user = user_values([r for r in scores if r.get("scorer") == USER], s)
    pointwise: dict[str, Values] = {
        "words": words,
        **user,
        **card_values([r for r in scores if r.get("scorer") != USER]),
    }
    out = []
    for scorer, values in pointwise.items():
        for kind in kinds:
            for case, outcome in outcomes_of(values, kind).items():
                out.append({"run": run, "case": case, "source": cases.get(case, {}).get("source"), "kind": kind,
                            "scorer": scorer, "pairwise": False, "real": values.get((case, REAL)),
                            "bad": values.get((case, kind)), "outcome": outcome})  # fmt: skip
    for scorer, outs in pair_outcomes([d for _, d in store.items("pair")]).items():
        for (case, kind), outcome in sorted(outs.items()):
            out.append({"run": run, "case": case, "source": cases.get(case, {}).get("source"), "kind": kind,
                        "scorer": scorer, "pairwise": True, "real": None, "bad": None, "outcome": outcome})  # fmt: skip
    return out


# -- the report's section --------------------------------------------------------------------------------


def _share(c: dict[str, Any], *, interval: bool = False) -> tuple[str, str]:
    """A share as a cell: the percentage, coloured from red (the bad reply wins) through white (chance) to
    green (the real reply wins), its ties and unscored pairs on hover; with ``interval`` its bootstrap
    interval and ties shown; under ``MIN_N`` cases uncoloured, "n too small"."""
    n = f" <small>n={c['n']}</small>"
    hover = f'title="ties {c["ties"]}, unscored {c["unscored"]}"'
    ties = f" <small>ties {c['ties']}</small>" if interval else ""
    if c["share"] is None:
        return f'<span class="na" data-sort="">n/a</span>{n}', hover
    shown = f'<span data-sort="{c["share"]:.6f}">{pct(c["share"])}%</span>'
    if too_small(c["n"]):
        return f'{shown} <small class="small-n">{TOO_SMALL}</small>{n}{ties}', hover
    ci = f" <small>[{pct(c['lo'])}, {pct(c['hi'])}]</small>" if interval and c["lo"] is not None else ""
    return shown + ci + n + ties, f"{heat(c['share'] - 0.5, 0.5)} {hover}"


def sensitivity_html(data: dict[str, Any], rid: str) -> str:
    kinds = data["kinds"]
    header = ["scorer", *[esc(k) for k in kinds], f"{ALL} [95% interval]", "ties", "pairs", "unscored",
              "distinct values", "calls, model time"]  # fmt: skip
    rows: list[list[Cell]] = []
    for r in data["rows"]:
        name = esc(r["scorer"]) + (" <small>(pairwise)</small>" if r["pairwise"] else "")
        tie = "-" if r["tie_rate"] is None else f'<span data-sort="{r["tie_rate"]:.6f}">{pct(r["tie_rate"])}%</span>'
        rows.append([name, *[_share(r["cells"][k]) for k in kinds], _share(r[ALL], interval=True), tie,
                     str(r["pairs"]), str(r[ALL]["unscored"]), "-" if r["distinct"] is None else str(r["distinct"]),
                     esc(usage_text(r["usage"]))])  # fmt: skip
    src = ", ".join(f"{n} {s}" for s, n in sorted(data["sources"].items())) or "none"
    parts = [
        f"<p>{data['cases']} cases ({esc(src)}); simulated user <b>{esc(data['user_model'] or '(none)')}</b>; "
        f"suite <code>{esc(data['suite'])}</code>; model time so far {data['wall_s']:.0f} s.</p>",
        '<p class="hint">For each scorer and kind of bad reply: the share of cases where the real reply scores '
        "above the rule-made bad one (ties count half; a pairwise judge whose two orders disagree is a tie). "
        "Green: the scorer prefers the real reply; white: chance (50%); red: it prefers the bad one. "
        f"{esc(ALL)}: the mean over every pair, with a bootstrap 95% interval resampling cases; under {MIN_N} "
        f"cases no interval and no colour ({TOO_SMALL}). The word count needs no model: a scorer no better "
        "than it on a padded kind (generic_long, dismissive_long) reads length, not support.</p>",
    ]
    if not data["rows"]:
        return "".join(parts) + note("no scorer has scored a reply yet")
    parts.append(table(header, rows, tid=f"{rid}-sensitivity", cls="sensitivity"))
    return "".join(parts)


def run_html(view: RunView, rid: str) -> str:
    from ..report.health import units_health
    from ..report.html import section

    if view.analysis is None:
        return note("This sensitivity run could not be read.")
    return section("Does each scorer prefer the real reply?", sensitivity_html(view.analysis, rid), level=3) + section(
        "Run health", units_health(view), level=3
    )


class SensitivityKind(RunKind):
    name = "sensitivity"
    title = "a sensitivity run (emoharbor sensitivity)"

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        """The sensitivity table (every scorer and kind of bad reply): rendered, and its data."""
        data = sensitivity_table(store, seed=seed)
        return render_sensitivity(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        view.analysis = sensitivity_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        return run_html(view, rid)

    def export(self, store: RunStore) -> dict[str, Rows]:
        """``sensitivity``: one row per scorer and kind of bad reply (and "all kinds"), as ``--format csv``."""
        return {"sensitivity": csv_rows(sensitivity_table(store))}

    def tidy(self, store: RunStore) -> Rows:
        return tidy(store)

    def check(self, plan: SensitivityPlan, *, new: bool) -> None:
        """The plan read the user's files and the judges' cards; a new run's models are built and reached."""
        from ..preflight import check_scorers

        if new:
            user = ("--model", plan.opts.user) if plan.opts.user else None
            check_scorers(user, [(j.card.name, j.model) for j in plan.judges])

    async def execute(self, plan: SensitivityPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_sensitivity

        return await run_sensitivity(plan, folder, progress=progress)
