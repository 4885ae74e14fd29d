"""Measure each round: the same EmoHarbor evaluation (profiles, user, judge, seed) run on M0, M1, ...,
each served as an ``hf:`` supporter, then the mean of every dimension per model and its change from
the first model. Unscored dimensions are counted, never averaged in."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import RunConfig, load_config
from ..errors import EmoharborError
from ..evaluate.plan import Plan
from ..models.hf import MODEL_CARD, resolve_hf
from ..store import records
from ..store.run_store import RunStore
from ..tables import nothing_measured
from .trainer import release_memory

Log = Callable[[str], None]
RECORD = "(whole assessment)"  # the row counting assessments that produced no score at all


def _evaluator() -> Callable[..., Any]:
    try:
        from ..evaluate import run_evaluation  # type: ignore[attr-defined,unused-ignore]
    except ImportError as e:
        if e.name not in (None, "emoharbor.evaluate"):
            raise  # the evaluator is there but something it needs is not: show that
        raise EmoharborError(
            "the EmoHarbor evaluator (emoharbor.evaluate.run_evaluation) is not installed in this build, "
            "so `evolve eval` cannot run yet"
        ) from None
    return run_evaluation  # type: ignore[no-any-return,unused-ignore]


def model_config(base: RunConfig, name: str, folder: Path | str) -> RunConfig:
    """``base`` with its supporters replaced by one: the model in ``folder`` (or a base model the ``hf``
    backend knows: ``smollm2``, a Hub id), served locally."""
    template = base.roles.supporter[0].model_dump(exclude={"model", "name", "replies", "base_url", "endpoints",
                                                            "api_key_env"})  # fmt: skip
    where = Path(folder).resolve() if Path(folder).exists() else folder
    supporter = {**template, "model": f"hf:{where}", "name": name}
    roles = base.roles.model_dump() | {"supporter": [supporter]}
    return RunConfig.model_validate(base.model_dump() | {"roles": roles, "name": f"{base.name}-{name}"})


def dimension_means(run_dir: Path) -> dict[str, dict[str, dict[str, float]]]:
    """judge -> dimension -> {mean, scored, unscored}."""
    store = RunStore.open_existing(run_dir)
    try:
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        unscored: dict[tuple[str, str], int] = defaultdict(int)
        for a in records.assessments(store):
            if not a.scored:  # the whole assessment failed
                unscored[(a.judge, RECORD)] += 1
            for dim, v in a.scores.items():
                if v is None:
                    unscored[(a.judge, dim)] += 1
                else:
                    values[(a.judge, dim)].append(float(v))
    finally:
        store.close()
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for judge, dim in sorted(set(values) | set(unscored)):
        vs = values.get((judge, dim), [])
        out[judge][dim] = {"mean": sum(vs) / len(vs) if vs else float("nan"), "scored": float(len(vs)),
                           "unscored": float(unscored.get((judge, dim), 0))}  # fmt: skip
    return dict(out)


def _cell(c: dict[str, float] | None) -> str:
    if c is None:
        return "-"
    un = f"unscored {int(c['unscored'])}" if c["unscored"] else ""
    if not c["scored"]:
        return un or "-"
    return f"{c['mean']:.2f} (n={int(c['scored'])}{', ' + un if un else ''})"


def compare_table(results: dict[str, dict[str, dict[str, dict[str, float]]]]) -> str:
    """One block per judge: dimension, each model's mean (n scored), and each later model's change."""
    names = list(results)
    lines: list[str] = []
    judges = sorted({j for r in results.values() for j in r})
    if not judges:
        return nothing_measured("no judge rated a conversation of the evaluation runs: see `emoharbor leaderboard RUN`")
    for judge in judges:
        dims = sorted({d for r in results.values() for d in r.get(judge, {})})
        head = ["dimension", *names, *[f"{n}-{names[0]}" for n in names[1:]]]
        lines += [f"judge: {judge}", " | ".join(head), " | ".join("---" for _ in head)]
        for d in dims:
            cells = [results[n].get(judge, {}).get(d) for n in names]
            row = [d, *(_cell(c) for c in cells)]
            first = cells[0]
            row += [f"{c['mean'] - first['mean']:+.2f}" if c and first and c["scored"] > 0 and first["scored"] > 0
                    else "n/a" for c in cells[1:]]  # fmt: skip
            lines.append(" | ".join(row))
        lines.append("")
    return "\n".join(lines)


def evaluate_models(plan: Plan | Path, models: list[tuple[str, Path | str]], out: Path, *, log: Log,
                    progress: bool = True) -> str:  # fmt: skip
    """The evaluation of ``plan`` (a run config's file is planned here first: the library's callers) on each of
    ``models``, each run the plan with its supporter replaced (its profiles and judges are the plan's)."""
    run_evaluation = _evaluator()
    plan = plan if isinstance(plan, Plan) else Plan.of(load_config(plan), str(plan))
    for name, folder in models:  # every model and name checked before any run folder is made
        if "|" in name or not name:
            raise EmoharborError(f"model name {name!r}: give a name without '|' (NAME=FOLDER)")
        resolve_hf(str(folder))
    results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for name, folder in models:
        run_dir = out / name
        log(f"eval: {name} ({folder}) -> {run_dir}")
        asyncio.run(run_evaluation(plan.with_config(model_config(plan.cfg, name, folder)), run_dir, progress=progress))
        release_memory()
        results[name] = dimension_means(run_dir)
    record_deltas(models, results, out)
    return compare_table(results)


def record_deltas(models: list[tuple[str, Path | str]], results: dict[str, Any], out: Path) -> None:
    """Each evolve model's card gets its means and its change from the first model, per judge and dimension."""
    from .card import add_evaluation

    ref_name = models[0][0]
    ref = results[ref_name]
    for name, folder in models:
        if not (Path(folder) / MODEL_CARD).is_file():
            continue  # not a model emoharbor trained: nothing to write into
        means = {
            judge: {dim: {**cell, "delta": cell["mean"] - ref[judge][dim]["mean"]
                          if name != ref_name and dim in ref.get(judge, {}) and cell["scored"]
                          and ref[judge][dim]["scored"] else None}
                    for dim, cell in dims.items()}
            for judge, dims in results[name].items()
        }  # fmt: skip
        add_evaluation(Path(folder), {"run": str(out / name), "reference": ref_name, "means": means})
