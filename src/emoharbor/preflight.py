"""Checks made before a command writes anything: every file a config names can be read, there is work to do
and not absurdly much of it, and every model can be built (its files, packages and key are there) and its
endpoints accept connections. A command that finds a problem here has made no run folder and drawn no
progress bar."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from . import userfiles
from .config import load_config
from .data.esconv import load_esconv
from .errors import ConfigError, DataError
from .evaluate.plan import Plan
from .evolve.config import EvolveConfig
from .heart.config import HeartConfig, HistorySource, resolve_path
from .heart.dimensions import load_lexicon
from .heart.histories import LoadReport
from .heart.stages.candidates import system_prompt
from .heart.stages.sources import load_heart_source, load_histories
from .heart.stages.strategies import load_strategies
from .models.pool import check_model_spec, check_reachable
from .models.spec import ModelSpec
from .simulate.supporter import supporter_prompt
from .store.run_store import DB_NAME, RunStore

MAX_CONVERSATIONS = 1_000_000  # profiles x supporters x repeats in one run


def is_new_run(folder: Path) -> bool:
    """Whether ``folder`` (which must be able to be a folder) holds no run yet: then the models are checked
    before it is made. A folder that holds a run is resumed or reprinted; a finished one reaches no model."""
    userfiles.output_folder(folder, "run folder")
    if (folder / DB_NAME).is_dir():
        raise ConfigError(f"run folder {folder}: {folder / DB_NAME} is a folder, not a run database")
    if not (folder / DB_NAME).exists():
        return True
    RunStore.open_existing(folder).close()  # one that cannot be read is refused now
    return False


def _unique(specs: Iterable[ModelSpec]) -> list[ModelSpec]:
    seen: dict[str, ModelSpec] = {}
    for s in specs:
        seen.setdefault(s.identity, s)
    return list(seen.values())


def check_models(specs: Iterable[ModelSpec]) -> None:
    """Every model can be built; nothing is started or reached."""
    for spec in _unique(specs):
        check_model_spec(spec)


def check_named_models(models: Iterable[tuple[str, ModelSpec]], where: str = "") -> None:
    """``check_models`` for models named by the field that gives them (``roles.judge``): an error names the
    file (``where``) and that field; without ``where``, the field is a command-line option (``--user``). A
    model given in several fields is checked once."""
    seen: set[str] = set()
    for field, spec in models:
        key = spec.identity
        if key in seen:
            continue
        seen.add(key)
        try:
            check_model_spec(spec)
        except ConfigError as e:
            raise ConfigError(f"{where}: field '{field}': {e}" if where else f"{field}: {e}") from None


def check_reach(specs: Iterable[ModelSpec]) -> None:
    """Every endpoint-served model has an endpoint that accepts connections."""
    groups = {tuple(sorted(s.endpoint_urls())) for s in _unique(specs) if s.backend == "openai"}

    async def reach_all() -> None:
        for urls in sorted(groups):
            await check_reachable(list(urls))

    if groups:
        asyncio.run(reach_all())


def check_scorers(user: tuple[str, ModelSpec] | None, judges: Iterable[tuple[str, ModelSpec]]) -> None:
    """A new run's simulated user (the option that gives it, and its model; None: no user) and judges (by card
    name), each built and its endpoint reached: validate's, sensitivity's and seekers' check."""
    named = [*([user] if user else []), *((f"--judge {name}", spec) for name, spec in judges)]
    check_named_models(named)
    check_reach([spec for _, spec in named])


def check_run_config(plan: Plan, *, models: bool = True, reach: bool = True) -> None:
    """An EmoHarbor run's plan (its files were read when it was made): the run is not too large, and
    (``models``) its models can be built and (``reach``) reached."""
    cfg, where, profiles, judges = plan.cfg, plan.where, plan.profiles, plan.judges
    conversations = len(profiles) * len(cfg.roles.supporter) * cfg.repeats
    if conversations > MAX_CONVERSATIONS:
        raise ConfigError(
            f"{where}: profiles x supporters x repeats is {conversations:,} conversations, more than one run "
            f"holds ({MAX_CONVERSATIONS:,}): lower repeats or split the profiles over several runs"
        )

    def field_of(i: int, spec: ModelSpec) -> str:  # a judge's model: the judge role's, the user's, or its card's
        return "roles.judge" if spec == cfg.roles.judge else "roles.user" if spec == cfg.roles.user else f"judges.{i}"

    named = [
        *((f"roles.supporter.{i}", s) for i, s in enumerate(cfg.roles.supporter)),
        ("roles.user", cfg.roles.user),
        *((field_of(i, j.model), j.model) for i, j in enumerate(judges)),
    ]
    if models:
        check_named_models(named, where)
    if reach:
        check_reach([*cfg.roles.supporter, cfg.roles.user, *(j.model for j in judges)])


def _skips(report: LoadReport) -> str:
    reasons = ", ".join(f"{n} {reason}" for reason, n in report.skipped.most_common()) or "none"
    first = f"; first: {report.notes[0]}" if report.notes else ""
    return f"{report.source}: {report.examined} items, skipped {reasons}{first}"


def check_heart_config(cfg: HeartConfig, base: Path, where: str, *, models: bool = True) -> None:
    """A HEART config: its candidates' system prompts, history files (with at least one usable history),
    strategy file and lexicon file can be read, and (``models``) its models can be built."""
    for i, spec in enumerate(cfg.candidates):
        try:
            system_prompt(spec, base)
        except ConfigError as e:
            raise ConfigError(f"{where}: field 'candidates.{i}.system_prompt': {e}") from None
    try:
        loaded, reports = load_histories(cfg, base)
    except DataError as e:
        raise DataError(f"{where}: {e}") from None
    if not loaded:
        raise DataError(f"{where}: no usable history in its sources ({'; '.join(_skips(r) for r in reports)})")
    for field, load in (("strategy_file", load_strategies), ("lexicon_file", load_lexicon)):
        path = getattr(cfg, field)
        if path:
            try:
                load(resolve_path(base, path))
            except DataError as e:
                raise DataError(f"{where}: field '{field}': {e}") from None
    if models:
        check_named_models(
            [*((f"candidates.{i}", c) for i, c in enumerate(cfg.candidates)),
             *((f"judges.{i}", j) for i, j in enumerate(cfg.judges)),
             ("labeller", cfg.labeller_spec())],
            where,
        )  # fmt: skip


def check_evolve_config(cfg: EvolveConfig, where: str) -> None:
    """An evolve config: every file it names can be read (the data, pair and held-out files are there; the GRPO
    stage's HEART and ESConv context files load; its evaluation config and what that names can be read) and
    its system prompt resolves. Nothing is reached: run before any stage contacts a model."""
    c = cfg.grpo.contexts
    named = {"sft.data": cfg.sft.data, "refine.data": cfg.refine.data, "holdout": cfg.holdout,
             "dpo.extra_pairs": cfg.dpo.extra_pairs, "sft.general_data": [cfg.sft.general_data or ""],
             "refine.principles": [cfg.refine.principles or ""], "grpo.contexts.esconv": c.esconv,
             "grpo.contexts.heart": c.heart}  # fmt: skip
    for field, paths in named.items():
        for p in filter(None, paths):
            if not Path(p).is_file():
                raise ConfigError(f"{where}: field '{field}': {p} not found")
    try:
        for p in c.esconv:
            load_esconv(p)
        for p in c.heart:
            load_heart_source(HistorySource(path=p), Path(p))
    except DataError as e:
        raise DataError(f"{where}: field 'grpo.contexts': {e}") from None
    try:
        supporter_prompt(cfg.system_prompt)
    except ConfigError as e:
        raise ConfigError(f"{where}: field 'system_prompt': {e}") from None
    if cfg.grpo.episodes.reward == "judge":  # its card (a file is read now) and its model
        try:
            cfg.grpo.episode_judge()
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
    if cfg.grpo.eval_config:
        check_run_config(Plan.of(load_config(cfg.grpo.eval_config), cfg.grpo.eval_config), models=False, reach=False)
