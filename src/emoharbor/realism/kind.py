"""The realism run (``emoharbor realism``) as a kind of run (``kinds.py``): ``emoharbor leaderboard`` and
``report --format`` print its table, ``emoharbor report`` shows it (``section.py``), ``emoharbor export`` writes
the table and one row per simulated message (``realism``, ``realism_messages``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kinds import JudgeRows, Rows, RunKind, Summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..run_view import RunView
    from ..store.run_store import RunStore
    from .run import RealismPlan


def message_rows(store: RunStore) -> Rows:
    """One row per cut: the talk, the position, the real next message, the simulated one and its status."""
    done = dict(store.items("next"))
    out = []
    for key, cut in store.items("cut"):
        d = done.get(key) or {}
        out.append({"talk": cut["talk"], "at": cut["at"], "real": cut["real"], "simulated": d.get("text"),
                    "status": d.get("status", "not done"), "decision": d.get("decision")})  # fmt: skip
    return out


def talks_like_people(r: dict[str, Any]) -> str:
    """The cell of ``emoharbor judges`` for the simulated user: the discriminator and the goals met."""
    return str(r.get("realism") or "-")


class RealismKind(RunKind):
    name = "realism"
    title = "a realism run (emoharbor realism)"
    judges_note = ("talks like people: the simulated user's messages told apart from real seekers' (AUROC, 0.5 "
                   "none) and the realism goals met, from the realism run with the most cuts")  # fmt: skip

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        from .analysis import realism_table
        from .render import render_realism

        data = realism_table(store, seed=seed)
        return render_realism(data, fmt), data

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        from .analysis import realism_table

        view.data = realism_table(store, seed=seed)

    def html(self, view: RunView, rid: str, seed: int) -> str:
        from .section import section_html

        return section_html(view, rid)

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        """The simulated user's row ("user"): how far its messages are told apart from people's, the goals met."""
        from ..report.judges_table import add, takes
        from .analysis import CHECKS, agent_of, next_table
        from .render import shown

        n = next_table(store, seed=0, n_boot=500)  # the whole talks are not in this column: not made
        if not n["rows"] or not takes(rows.get(("user", "argmax"), {}), "realism", n["cuts"]):
            return
        checks = [n[k] for k in CHECKS if n.get(k)]
        verdicts = [r["verdict"] for r in [*n["rows"], *checks]]
        auroc = shown((n.get("discriminator") or {}).get("sim_vs_real"))
        met = f"{verdicts.count('met')} of {len(verdicts)} goals met"
        row = add(rows, "user", "argmax", {}, {})
        row.update(realism_n=n["cuts"], realism=f"{agent_of(store)} user: AUROC {auroc}; {met} ({n['cuts']} cuts, "
                   f"{folder})")  # fmt: skip

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        return [("talks like people", talks_like_people)]

    def export(self, store: RunStore) -> dict[str, Rows]:
        from .analysis import realism_table
        from .render import csv_rows

        return {"realism": csv_rows(realism_table(store)), "realism_messages": message_rows(store)}

    def check(self, plan: RealismPlan, *, new: bool) -> None:
        """The plan read the files; the models are built, and reached for a new run."""
        from ..preflight import check_run_models

        named = [("--model", plan.opts.user)]
        named += [("--supporter-model", plan.opts.supporter_model)] if plan.talks else []
        check_run_models(named, new=new)

    async def execute(self, plan: RealismPlan, folder: Path, *, progress: bool = True) -> Summary:
        from .run import run_realism

        return await run_realism(plan, folder, progress=progress)
