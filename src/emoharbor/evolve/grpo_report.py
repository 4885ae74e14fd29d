"""The report of a GRPO stage: the reward per step (a chart with each step's 95% interval over its completions,
and a table), the penalties hit, and the held-out evaluation before and after; as Markdown and as one
self-contained HTML page. An episode stage (``grpo.episodes``) reads its episodes log the same way: one
completion is an episode, its penalties (the guards against reward hacking among them) counted per reply."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..report.html import esc, table
from ..report.svg import Dots, intervals
from ..stats.bootstrap import bootstrap_ci
from ..tables import num, text_table

REPORT = "report.md"
REPORT_HTML = "report.html"
REWARDS = "rewards.jsonl"  # rank 0's; another process r writes rewards-rank{r}.jsonl
EPISODES = "episodes.jsonl"  # the same, of an episode stage (episodes-rank{r}.jsonl)


def rewards_by_step(out: Path, log: str = REWARDS) -> dict[int, list[dict[str, Any]]]:
    """Every reward of the stage in ``out``, from every process's log (``log``: rank 0's name), by step in order."""
    by: dict[int, list[dict[str, Any]]] = {}
    for f in sorted(out.glob(log.removesuffix(".jsonl") + "*.jsonl")):
        for r in map(json.loads, f.read_text(encoding="utf-8").splitlines()):
            by.setdefault(int(r.get("step") or 0), []).append(r)
    return dict(sorted(by.items()))


def reward_curve(out: Path, log: str = REWARDS) -> list[dict[str, Any]]:
    """Per step, from every process's rewards: completions, scored, unscored, errors, the mean reward of the
    scored ones, and the penalties hit (an episode's: once per reply that hit each)."""
    curve = []
    for step, rs in rewards_by_step(out, log).items():
        got = [r["reward"] for r in rs if r["reward"] is not None]
        curve.append({"step": step, "completions": len(rs), "scored": len(got),
                      "unscored": sum(r["status"] == "unscored" for r in rs),
                      "errors": sum(r["status"] == "error" for r in rs),
                      "mean_reward": sum(got) / len(got) if got else None,
                      "penalties": dict(sorted(Counter(p for r in rs for p in r["penalties"]).items()))})  # fmt: skip
    return curve


def reward_totals(curve: list[dict[str, Any]], unit: str = "replies") -> dict[str, int]:
    """The whole stage's counts: ``unit`` (replies, or episodes), ok (scored), unscored, error, and ``penalty:NAME``."""
    totals: Counter[str] = Counter()
    for c in curve:
        totals.update({unit: c["completions"], "ok": c["scored"], "unscored": c["unscored"], "error": c["errors"]})
        totals.update({f"penalty:{k}": v for k, v in c["penalties"].items()})
    return {k: v for k, v in sorted(totals.items()) if v}


def _parts(out: Path, summary: dict[str, Any]) -> dict[str, Any]:
    t = summary["rewards"]
    sources = ", ".join(f"{k}: {v.get('used', 0)} used of {v.get('found', 0)} ({v.get('held_out', 0)} held out)"
                        for k, v in summary["contexts"].items())  # fmt: skip
    whole = summary.get("wall_s_with_eval")
    head = (f"{summary['train']['steps']} steps in {summary['train']['wall_s']:.0f} s (the stage: "
            f"{summary['wall_s']:.0f} s" + (f"; with its evaluation: {whole:.0f} s" if whole else "")
            + f"). Contexts: {sources}.")  # fmt: skip
    unit = summary.get("unit", "replies")
    counts = (f"Rewards: {t.get(unit, 0)} {unit}, {t.get('ok', 0)} scored, {t.get('unscored', 0)} unscored "
              f"(the user's reaction did not parse: no reward), {t.get('error', 0)} model errors.")  # fmt: skip
    if unit == "episodes":
        counts += (" Each episode is a whole talk; its penalties are counted per reply, the guards against reward "
                   "hacking (flattery, ends_early) among them.")  # fmt: skip
    curve = [[str(c["step"]), str(c["completions"]), str(c["scored"]), str(c["unscored"]), str(c["errors"]),
              num(c["mean_reward"], 3), ", ".join(f"{k} {v}" for k, v in c["penalties"].items()) or "-"]
             for c in summary["curve"]]  # fmt: skip
    penalties = sorted((k.removeprefix("penalty:"), v) for k, v in t.items() if k.startswith("penalty:"))
    return {"head": head, "counts": counts, "curve": curve, "penalties": [[k, str(v)] for k, v in penalties]}


CURVE = ["step", "completions", "scored", "unscored", "errors", "mean reward", "penalties"]
NO_STEP = (
    "no step logged a reward: `emoharbor evolve grpo` trains the steps (a killed stage resumes from its checkpoint)"
)


def report_md(out: Path, summary: dict[str, Any], eval_table: str) -> str:
    p = _parts(out, summary)
    return "\n".join([
        f"# GRPO against the simulated user: {out.name}", "", p["head"], "", p["counts"], "",
        "## Reward per step", "", text_table(CURVE, p["curve"], md=True, empty=NO_STEP), "",
        "## Penalties (replies hitting each, all steps)", "",
        text_table(["penalty", "replies"], p["penalties"], md=True) if p["penalties"] else "none", "",
        "## Held-out evaluation: before and after, per judge and dimension", "",
        eval_table or "not run (--no-eval)", "",
    ])  # fmt: skip


def reward_chart(out: Path, log: str = REWARDS, seed: int = 0) -> str:
    """The mean reward per step with a bootstrap 95% interval over that step's scored completions."""
    scored = {step: [float(r["reward"]) for r in rs if r["reward"] is not None]
              for step, rs in rewards_by_step(out, log).items()}  # fmt: skip
    by = {step: bootstrap_ci(got, seed=seed) for step, got in scored.items() if got}
    cells = [{"mean": e.value, "lo": e.lo, "hi": e.hi, "n": e.n} for e in by.values()]
    return intervals([f"step {s}" for s in by], [Dots("mean reward", "#1f77b4", cells)],
                     title="Reward per step: the mean over the step's scored replies and its 95% interval",
                     x_label="reward (-1..1 for a reaction; penalties below)", x_ticks=[-2, -1, -0.5, 0, 0.5, 1],
                     reference=0.0, note="read top to bottom: the training steps in order.")  # fmt: skip


def report_html(out: Path, summary: dict[str, Any], eval_table: str) -> str:
    from ..report.build import page

    p = _parts(out, summary)
    log = EPISODES if summary.get("unit") == "episodes" else REWARDS
    body = (f"<p>{esc(p['head'])}</p><p>{esc(p['counts'])}</p><h2>Reward per step</h2>"
            f'<div class="charts">{reward_chart(out, log)}</div>'
            f'{table(CURVE, [[esc(c) for c in r] for r in p["curve"]])}'
            "<h2>Penalties (replies hitting each, all steps)</h2>"
            + (table(["penalty", "replies"], p["penalties"]) if p["penalties"] else "<p>none</p>")
            + "<h2>Held-out evaluation: before and after, per judge and dimension</h2>"
            + f"<pre>{esc(eval_table or 'not run (--no-eval)')}</pre>"
            + "<p>The evaluation run in full: <code>emoharbor report eval</code>.</p>")  # fmt: skip
    return page(f"GRPO against the simulated user: {out.name}", body)


def write_reports(out: Path, summary: dict[str, Any], eval_table: str) -> None:
    (out / REPORT).write_text(report_md(out, summary, eval_table), encoding="utf-8")
    (out / REPORT_HTML).write_text(report_html(out, summary, eval_table), encoding="utf-8")
