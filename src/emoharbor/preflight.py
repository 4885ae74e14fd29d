"""Checks made before a command writes anything: every file a config names can be read, there is work to do
and not absurdly much of it, and every model can be built (its files, packages and key are there) and its
endpoints accept connections. A command that finds a problem here has made no run folder and drawn no
progress bar."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path

from . import userfiles
from .config import ModelSpec, RunConfig
from .errors import ConfigError, DataError
from .evaluate import run_judges
from .heart.candidates import system_prompt
from .heart.config import HeartConfig, resolve_path
from .heart.dimensions import load_lexicon
from .heart.histories import LoadReport
from .heart.sources import load_histories
from .heart.strategies import load_strategies
from .models.pool import check_model_spec, check_reachable
from .profiles.loader import resolve_profiles
from .simulate.supporter import supporter_prompt
from .store.run_store import DB_NAME, RunStore

MAX_CONVERSATIONS = 1_000_000  # profiles x supporters x repeats in one run


def is_new_run(folder: Path) -> bool:
    """Whether ``folder`` (which must be able to be a folder) holds no run yet: then the models are checked
    before it is made. A folder that holds a run is resumed or reprinted; a finished one reaches no model."""
    userfiles.output_folder(folder, "run folder")
    if not (folder / DB_NAME).exists():
        return True
    RunStore.open_existing(folder).close()  # one that cannot be read is refused now
    return False


def _unique(specs: Iterable[ModelSpec]) -> list[ModelSpec]:
    seen: dict[str, ModelSpec] = {}
    for s in specs:
        seen.setdefault(json.dumps(s.model_dump(mode="json", exclude={"name", "system_prompt"}), sort_keys=True), s)
    return list(seen.values())


def check_models(specs: Iterable[ModelSpec]) -> None:
    """Every model can be built; nothing is started or reached."""
    for spec in _unique(specs):
        check_model_spec(spec)


def check_reach(specs: Iterable[ModelSpec]) -> None:
    """Every endpoint-served model has an endpoint that accepts connections."""
    groups = {tuple(sorted(s.endpoint_urls())) for s in _unique(specs) if s.backend == "openai"}

    async def reach_all() -> None:
        for urls in sorted(groups):
            await check_reachable(list(urls))

    if groups:
        asyncio.run(reach_all())


def check_run_config(cfg: RunConfig, where: str, *, models: bool = True, reach: bool = True) -> None:
    """An EmoHarbor run config: its supporters' system prompts, profiles and judge cards can be read, the run
    is not too large, and (``models``) its models can be built and (``reach``) reached."""
    for s in cfg.roles.supporter:
        try:
            supporter_prompt(s.system_prompt)
        except ConfigError as e:
            raise ConfigError(f"{where}: supporter {s.name}: system_prompt: {e}") from None
    conversations = len(resolve_profiles(cfg.profiles)) * len(cfg.roles.supporter) * cfg.repeats
    if conversations > MAX_CONVERSATIONS:
        raise ConfigError(
            f"{where}: profiles x supporters x repeats is {conversations:,} conversations, more than one run "
            f"holds ({MAX_CONVERSATIONS:,}): lower repeats or split the profiles over several runs"
        )
    specs = [*cfg.roles.supporter, cfg.roles.user, *(j.model for j in run_judges(cfg))]
    if models:
        check_models(specs)
    if reach:
        check_reach(specs)


def _skips(report: LoadReport) -> str:
    reasons = ", ".join(f"{n} {reason}" for reason, n in report.skipped.most_common()) or "none"
    first = f"; first: {report.notes[0]}" if report.notes else ""
    return f"{report.source}: {report.examined} items, skipped {reasons}{first}"


def check_heart_config(cfg: HeartConfig, base: Path, where: str) -> None:
    """A HEART config: its candidates' system prompts, history files (with at least one usable history),
    strategy file and lexicon file can be read."""
    for spec in cfg.candidates:
        system_prompt(spec, base)
    loaded, reports = load_histories(cfg, base)
    if not loaded:
        raise DataError(f"{where}: no usable history in its sources ({'; '.join(_skips(r) for r in reports)})")
    if cfg.strategy_file:
        load_strategies(resolve_path(base, cfg.strategy_file))
    if cfg.lexicon_file:
        load_lexicon(resolve_path(base, cfg.lexicon_file))
