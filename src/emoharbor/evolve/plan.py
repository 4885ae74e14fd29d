"""What an evolve command is to do, built once from its config and passed on: the supporter prompt of the policy,
the episode judge (``grpo.episodes.reward: judge``) and the plan of the held-out evaluation
(``grpo.eval_config``: its profiles and judges). Making it checks every file the config names (the data, pair
and held-out files are there; GRPO's ESConv and HEART context files load; the evaluation config and what it
names can be read), before any stage loads a model or contacts one; the GRPO stage reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..assess.stage import Judge
from ..config import load_config
from ..data.esconv import load_esconv
from ..errors import ConfigError, DataError
from ..evaluate.plan import Plan, check_plan
from ..heart.config import HistorySource
from ..heart.stages.sources import load_heart_source
from ..prompts import Prompt
from ..simulate.supporter import supporter_prompt
from .config import EvolveConfig


@dataclass(frozen=True)
class EvolvePlan:
    cfg: EvolveConfig
    where: str  # the config's file (or the built-in settings), as errors name it
    system: Prompt  # the policy's system prompt (``system_prompt``)
    episode_judge: Judge | None  # with ``grpo.episodes.reward: judge``
    evaluation: Plan | None  # the held-out evaluation's (``grpo.eval_config``)

    @classmethod
    def of(cls, cfg: EvolveConfig, where: str) -> EvolvePlan:
        """Every file the config names checked, each read once; an error names ``where`` and the field."""
        c = cfg.grpo.contexts
        named = {"sft.data": cfg.sft.data, "refine.data": cfg.refine.data, "holdout": cfg.holdout,
                 "dpo.extra_pairs": cfg.dpo.extra_pairs, "sft.general_data": [cfg.sft.general_data or ""],
                 "refine.principles": [cfg.refine.principles or ""], "grpo.contexts.esconv": c.esconv,
                 "grpo.contexts.heart": c.heart}  # fmt: skip
        for name, paths in named.items():
            for p in filter(None, paths):
                if not Path(p).is_file():
                    raise ConfigError(f"{where}: field '{name}': {p} not found")
        try:
            for p in c.esconv:
                load_esconv(p)
            for p in c.heart:
                load_heart_source(HistorySource(path=p), Path(p))
        except DataError as e:
            raise DataError(f"{where}: field 'grpo.contexts': {e}") from None
        try:
            system = supporter_prompt(cfg.system_prompt)
        except ConfigError as e:
            raise ConfigError(f"{where}: field 'system_prompt': {e}") from None
        judge = None
        if cfg.grpo.episodes.reward == "judge":  # its card (a file is read now) and its model
            try:
                judge = cfg.grpo.episode_judge()
            except ConfigError as e:
                raise ConfigError(f"{where}: {e}") from None
        evaluation = None
        if cfg.grpo.eval_config:
            evaluation = Plan.of(load_config(cfg.grpo.eval_config), cfg.grpo.eval_config)
            check_plan(evaluation, models=False, reach=False)
        return cls(cfg, where, system, judge, evaluation)
