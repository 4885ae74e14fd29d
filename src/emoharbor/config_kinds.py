"""Every kind of settings file emoharbor reads (run configs, HEART configs, evolve configs, judge cards,
profile files), recognised from its keys, loaded and checked: ``emoharbor config check``."""

from __future__ import annotations

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

KINDS: dict[str, type[BaseModel]] = {  # the first is the one a file with no telling key is read as
    "run config": RunConfig,
    "HEART config": HeartConfig,
    "evolve config": EvolveConfig,
    "judge card": JudgeCard,
    "profile file": Profile,
}


def config_kind(raw: Any) -> str:
    """The kind whose own settings (those no other kind has) the file uses most."""
    if isinstance(raw, list):
        return "profile file"
    if not isinstance(raw, dict):
        return "run config"

    def own(kind: str) -> set[str]:
        others = [set(m.model_fields) for k, m in KINDS.items() if k != kind]
        return set(KINDS[kind].model_fields).difference(*others)

    hits = {kind: len(own(kind) & set(raw)) for kind in KINDS}
    return max(hits, key=lambda kind: hits[kind])


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip()


def check_config(path: Path, *, models: bool) -> list[str]:
    """Load and check the file as the kind it is; the lines that show it resolved."""
    raw = userfiles.read(path, "config file")
    if raw is None:
        raise ConfigError(f"config file {path} is empty: write its settings in it")
    kind = config_kind(raw)
    where = str(path)
    if kind == "HEART config":
        heart, base = load_heart_config(path)
        heart_plan = HeartPlan.of(heart, base, where)
        if models:
            kinds.of("heart").check(heart_plan, new=False)
        return [_dump(heart_plan.record), f"# {kind}; config hash: {heart_plan.hash}"]
    if kind == "evolve config":
        evolve = load_evolve_config(path)
        EvolvePlan.of(evolve, where)
        if models and evolve.refine.generator is not None:
            check_named_models([("refine.generator", evolve.refine.generator)], where)
        return [_dump(evolve.resolved()), f"# {kind}"]
    if kind == "judge card":
        try:
            card = load_card(where)
        except ConfigError as e:  # a file the card names (its prompt, its rubric): which card names it
            raise ConfigError(str(e) if str(e).startswith(where) else f"{where}: {e}") from None
        if models and card.model is not None:
            check_named_models([("model", card.model)], where)
        judged = card.judge_kind()
        return [_dump(card.model_dump(mode="json")), f"# {kind}; version: {card.version}; kind {card.kind}: rates a "
                f"{judged.rates}, shown {', '.join(judged.shown)}"]  # fmt: skip
    if kind == "profile file":
        profiles = load_profile_file(path)
        return [f"# {kind}: {len(profiles)} valid profiles: {', '.join(p.id for p in profiles)}"]
    cfg = load_config(path)
    plan = Plan.of(cfg, where)
    check_plan(plan, models=models, reach=False)
    return [
        _dump(cfg.resolved()),
        f"# config hash: {cfg.config_hash()}",
        f"# run hash (with prompt, card and input versions; no output-neutral settings): {plan.hash}",
    ]
