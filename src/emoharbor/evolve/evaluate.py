"""Measure each round in **one paired run**: M0, M1, ... (and a control) are the supporters of one EmoHarbor
evaluation (the same profiles, user, judges and seeds for every model, each served as an ``hf:`` supporter), so
each model is compared with the first on the same profiles and repeats: the leaderboard's paired bootstrap
difference with its 95% interval, P(difference > 0) and Holm-adjusted p, per judge. Each model's card gets its
means and its change from the first. Unscored ratings are counted, never averaged in.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import RunConfig, load_config
from ..errors import ConfigError, EmoharborError
from ..evaluate.plan import Plan
from ..models.folder import MODEL_CARD
from ..models.pool import check_model_spec
from ..store import records
from ..store.run_store import RunStore
from ..tables import nothing_measured
from .card import refuse_trained_profiles
from .reply_card import FOLDER, RULE_MADE, plan_reply_card, reply_card
from .trainer import release_memory

Log = Callable[[str], None]
DEFAULT_BAD = ("generic_long",)  # platitudes padded to the real reply's length: a judge that likes padding passes them
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


ENGINES = ("hf", "local")  # how the models are served: transformers, or llama.cpp (a GGUF base and its adapter)


def models_config(base: RunConfig, models: list[tuple[str, Path | str]], engine: str = "hf") -> RunConfig:
    """``base`` with its supporters replaced by ``models`` (each a folder emoharbor trained, or a base model the
    engine knows: ``qwen0.5b``, ``smollm2``, for ``hf`` a Hub id too), served locally by ``engine`` (``hf:`` or
    ``local:``), each with the rest of ``base``'s first supporter (its system prompt, its token budget)."""
    template = base.roles.supporter[0].model_dump(exclude={"model", "name", "replies", "base_url", "endpoints",
                                                            "api_key_env"})  # fmt: skip
    supporters = []
    for name, folder in models:
        where = Path(folder).resolve() if Path(folder).exists() else folder
        supporters.append({**template, "model": f"{engine}:{where}", "name": name})
    roles = base.roles.model_dump() | {"supporter": supporters}
    return RunConfig.model_validate(base.model_dump() | {"roles": roles, "name": f"{base.name}-evolve"})


def dimension_means(run_dir: Path) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """supporter -> judge -> dimension -> {mean, scored, unscored}."""
    store = RunStore.open_existing(run_dir)
    try:
        values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        unscored: dict[tuple[str, str, str], int] = defaultdict(int)
        for key, d in store.items("assessment"):
            a, sup = records.Assessment.of(d), key[1]
            if not a.scored:  # the whole assessment failed
                unscored[(sup, a.judge, RECORD)] += 1
            for dim, v in a.scores.items():
                if v is None:
                    unscored[(sup, a.judge, dim)] += 1
                else:
                    values[(sup, a.judge, dim)].append(float(v))
    finally:
        store.close()
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    for sup, judge, dim in sorted(set(values) | set(unscored)):
        vs = values.get((sup, judge, dim), [])
        out[sup][judge][dim] = {"mean": sum(vs) / len(vs) if vs else float("nan"), "scored": float(len(vs)),
                                "unscored": float(unscored.get((sup, judge, dim), 0))}  # fmt: skip
    return {sup: dict(judges) for sup, judges in out.items()}


def compare_table(run_dir: Path, *, seed: int = 0) -> str:
    """Each judge's leaderboard of the paired run (Markdown): every model's means, then each model minus the
    first on the same profiles and repeats, with its interval, P(difference > 0) and Holm's p."""
    from ..assess.leaderboard import RunResults, leaderboard
    from ..assess.render import render

    store = RunStore.open_existing(run_dir)
    try:
        results = RunResults.read(store)
    finally:
        store.close()
    judges = sorted({a.judge for a in results.assessments})
    if not judges:
        return nothing_measured("no judge rated a conversation of the evaluation run: see `emoharbor leaderboard RUN`")
    return "\n\n".join(f"judge: {j}\n{render(leaderboard(results, j, seed=seed), 'md')}" for j in judges)


def evaluate_models(plan: Plan | Path, models: list[tuple[str, Path | str]], out: Path, *, log: Log,
                    progress: bool = True, replies: ReplyCardOptions | None = None,
                    engine: str = "hf") -> str:  # fmt: skip
    """The evaluation of ``plan`` (a run config's file is planned here first: the library's callers) with
    ``models`` as its supporters, served by ``engine``, in one run in ``out`` (its profiles and judges are the
    plan's; a profile a model's card says it trained on is refused); with ``replies``, the reply card beside it
    (``reply_card.py``), on the same supporters."""
    run_evaluation = _evaluator()
    plan = plan if isinstance(plan, Plan) else Plan.of(load_config(plan), str(plan))
    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r}: give one of {', '.join(ENGINES)}")
    for name, _ in models:  # every model and name checked before the run folder is made
        if "|" in name or not name:
            raise EmoharborError(f"model name {name!r}: give a name without '|' (NAME=FOLDER)")
    cfg = models_config(plan.cfg, models, engine)
    for supporter in cfg.roles.supporter:
        check_model_spec(supporter)  # a local: adapter is written as a GGUF LoRA file here, once
    refuse_trained_profiles([p.id for p in plan.profiles], [f for _, f in models])
    card = None
    if replies is not None and replies.contexts > 0:  # its judge and contexts checked before anything runs
        card = plan_reply_card(replies.esconv, replies.contexts, judge_card=replies.judge_card,
                               judge_model=plan.cfg.roles.judge, trained=[f for _, f in models],
                               seed=plan.cfg.seed, bad=replies.bad)  # fmt: skip
    replies_table = ""
    if card is not None:  # first: it costs a fraction of the talks, so a run stopped during them has it
        log(f"eval: the reply card, {len(card.contexts)} held-out contexts -> {out / FOLDER}")
        fig, replies_table = reply_card(card, cfg.roles.supporter, out, workers=plan.cfg.concurrency,
                                        progress=progress)  # fmt: skip
        release_memory()
        record_reply_card(models, fig)
    log(f"eval: {', '.join(f'{n} ({f})' for n, f in models)} as the supporters of one run -> {out}")
    asyncio.run(run_evaluation(plan.with_config(cfg), out, progress=progress))
    release_memory()
    record_deltas(models, dimension_means(out), out)
    table = compare_table(out)
    return f"{table}\n\n{replies_table}" if replies_table else table


@dataclass(frozen=True)
class ReplyCardOptions:
    """``evolve eval``'s reply card: ``contexts`` held-out contexts of the ESConv files ``esconv`` (0: none), scored by
    the judge card ``judge_card`` (of the form reply) on the run's judge model unless the card names its own."""

    contexts: int = 0
    esconv: list[str] = field(default_factory=list)
    judge_card: str = "third_party_reply"
    bad: list[str] = field(default_factory=lambda: list(DEFAULT_BAD))  # the rule-made bad replies' makers


def record_reply_card(models: list[tuple[str, Path | str]], fig: dict[str, Any]) -> None:
    """Each evolve model's card gets its row of the reply card (its mean, words, difference from the first)."""
    from .card import add_to_card

    head = {k: fig[k] for k in ("judge", "contexts", "reference")}
    head["rule_made"] = {row: r["mean"] for row, r in fig["models"].items() if row.startswith(RULE_MADE)}
    for name, folder in models:
        if (Path(folder) / MODEL_CARD).is_file() and name in fig["models"]:
            add_to_card(Path(folder), "reply_card", {**head, **fig["models"][name]})


def record_deltas(models: list[tuple[str, Path | str]], results: dict[str, Any], out: Path) -> None:
    """Each evolve model's card gets its means and its change from the first model, per judge and dimension."""
    from .card import add_evaluation

    ref_name = models[0][0]
    ref = results.get(ref_name, {})
    for name, folder in models:
        if not (Path(folder) / MODEL_CARD).is_file():
            continue  # not a model emoharbor trained: nothing to write into
        means = {
            judge: {dim: {**cell, "delta": cell["mean"] - ref[judge][dim]["mean"]
                          if name != ref_name and dim in ref.get(judge, {}) and cell["scored"]
                          and ref[judge][dim]["scored"] else None}
                    for dim, cell in dims.items()}
            for judge, dims in results.get(name, {}).items()
        }  # fmt: skip
        add_evaluation(Path(folder), {"run": str(out), "reference": ref_name, "means": means})
