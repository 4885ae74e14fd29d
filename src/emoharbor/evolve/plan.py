"""What an evolve command is to do, built once from its config and passed on: the supporter prompt of the policy,
the episode judge (``grpo.episodes.reward: judge``) and the plan of the held-out evaluation
(``grpo.eval_config``: its profiles and judges), and GRPO's ESConv talks and HEART histories (its context
files, read once). Making it checks every file the config names (the data, pair and held-out files are there;
the context files load; the evaluation config and what it names can be read), before any stage loads a model
or contacts one; the GRPO stage reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..assess.stage import Judge
from ..config import load_config
from ..data.esconv import EsconvDialog, load_esconv
from ..errors import ConfigError, DataError, prefixed
from ..evaluate.plan import Plan, check_plan
from ..heart.histories import History
from ..prompts import Prompt
from ..reward.context import load_heart_histories
from ..simulate.supporter import supporter_prompt
from .config import EvolveConfig


@dataclass(frozen=True)
class EvolvePlan:
    cfg: EvolveConfig
    where: str  # the config's file (or the built-in settings), as errors name it
    system: Prompt  # the policy's system prompt (``system_prompt``)
    episode_judge: Judge | None  # with ``grpo.episodes.reward: judge``
    evaluation: Plan | None  # the held-out evaluation's (``grpo.eval_config``)
    esconv: list[EsconvDialog] = field(default_factory=list)  # ``grpo.contexts.esconv``'s talks
    heart: list[History] = field(default_factory=list)  # ``grpo.contexts.heart``'s histories

    @classmethod
    def of(cls, cfg: EvolveConfig, where: str) -> EvolvePlan:
        """Every file the config names checked, each read once; an error names ``where`` and the field."""
        c = cfg.grpo.contexts
        named = {"sft.data": cfg.sft.data, "refine.data": cfg.refine.data, "holdout": cfg.holdout,
                 "dpo.extra_pairs": cfg.dpo.extra_pairs, "sft.general_data": [cfg.sft.general_data or ""],
                 "refine.principles": [cfg.refine.principles or ""], "grpo.contexts.esconv": c.esconv,
                 "grpo.contexts.heart": [h if isinstance(h, str) else h.path for h in c.heart]}  # fmt: skip
        for name, paths in named.items():
            for p in filter(None, paths):
                if not Path(p).is_file():
                    raise ConfigError(f"{where}: field '{name}': {p} not found")
        with prefixed(f"{where}: field 'grpo.contexts'", DataError):
            esconv = [d for p in c.esconv for d in load_esconv(p)]
            heart = [h for src in c.heart for h in load_heart_histories(src)]
        with prefixed(f"{where}: field 'system_prompt'", ConfigError):
            system = supporter_prompt(cfg.system_prompt)
        judge = None
        if cfg.grpo.episodes.reward == "judge":  # its card (a file is read now) and its model
            with prefixed(where, ConfigError):
                judge = cfg.grpo.episode_judge()
        evaluation = None
        if cfg.grpo.eval_config:
            evaluation = Plan.of(load_config(cfg.grpo.eval_config), cfg.grpo.eval_config)
            check_plan(evaluation, models=False, reach=False)
        return cls(cfg, where, system, judge, evaluation, esconv, heart)
