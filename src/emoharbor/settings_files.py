"""Every settings file emoharbor reads (run configs, HEART configs, evolve configs, judge cards, profile files),
recognised from its keys, loaded and checked: ``emoharbor config check``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from . import kinds, userfiles
from .assess.cards import JudgeCard, load_card
from .config import RunConfig, load_config
from .errors import ConfigError
from .evaluate.plan import Plan, check_plan
from .evolve.config import EvolveConfig, load_evolve_config
from .evolve.plan import EvolvePlan
from .heart.config import HeartConfig, load_heart_config
from .heart.plan import HeartPlan
from .preflight import check_named_models
from .profiles.loader import load_profile_file
from .profiles.schema import Profile


def settings_file(raw: Any) -> str:
    """The settings file whose own settings (those no other file has) the file read uses most."""
    if isinstance(raw, list):
        return "profile file"
    if not isinstance(raw, dict):
        return "run config"

    def own(name: str) -> set[str]:
        others = [set(m.model_fields) for n, (m, _) in FILES.items() if n != name]
        return set(FILES[name][0].model_fields).difference(*others)

    hits = {name: len(own(name) & set(raw)) for name in FILES}
    return max(hits, key=lambda name: hits[name])


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip()


def _heart(path: Path, where: str, models: bool) -> list[str]:
    heart, base = load_heart_config(path)
    plan = HeartPlan.of(heart, base, where)
    if models:
        kinds.of("heart").check(plan, new=False)
    return [_dump(plan.record), f"# HEART config; config hash: {plan.hash}"]


def _evolve(path: Path, where: str, models: bool) -> list[str]:
    evolve = load_evolve_config(path)
    EvolvePlan.of(evolve, where)
    if models and evolve.refine.generator is not None:
        check_named_models([("refine.generator", evolve.refine.generator)], where)
    return [_dump(evolve.resolved()), "# evolve config"]


def _card(path: Path, where: str, models: bool) -> list[str]:
    try:
        card = load_card(where)
    except ConfigError as e:  # a file the card names (its prompt, its rubric): which card names it
        raise ConfigError(str(e) if str(e).startswith(where) else f"{where}: {e}") from None
    if models and card.model is not None:
        check_named_models([("model", card.model)], where)
    judged = card.judge_form()
    return [_dump(card.model_dump(mode="json")), f"# judge card; version: {card.version}; form {card.kind}: rates a "
            f"{judged.rates}, shown {', '.join(judged.shown)}"]  # fmt: skip


def _profiles(path: Path, where: str, models: bool) -> list[str]:
    profiles = load_profile_file(path)
    return [f"# profile file: {len(profiles)} valid profiles: {', '.join(p.id for p in profiles)}"]


def _run(path: Path, where: str, models: bool) -> list[str]:
    cfg = load_config(path)
    plan = Plan.of(cfg, where)
    check_plan(plan, models=models, reach=False)
    return [
        _dump(cfg.resolved()),
        f"# config hash: {cfg.config_hash()}",
        f"# run hash (with prompt, card and input versions; no output-neutral settings): {plan.hash}",
    ]


Check = Callable[[Path, str, bool], list[str]]
# each settings file: its settings (what tells it apart) and its check; the first is the one a file with no
# telling key is read as
FILES: dict[str, tuple[type[BaseModel], Check]] = {
    "run config": (RunConfig, _run),
    "HEART config": (HeartConfig, _heart),
    "evolve config": (EvolveConfig, _evolve),
    "judge card": (JudgeCard, _card),
    "profile file": (Profile, _profiles),
}


def check_config(path: Path, *, models: bool) -> list[str]:
    """Load and check the file as the settings file it is; the lines that show it resolved."""
    raw = userfiles.read(path, "config file")
    if raw is None:
        raise ConfigError(f"config file {path} is empty: write its settings in it")
    return FILES[settings_file(raw)][1](path, str(path), models)
