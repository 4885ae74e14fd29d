"""What one EmoHarbor run is to do, built once from its config (with ``--set`` applied) and passed on: the
resolved profiles, the judges (each card loaded once), the prompts' versions, the input files' hashes and the
run record made of them. Preflight checks it, the run executes it, the store keeps its record and its
profiles; the report, export and leaderboard read them back from the store, not from the user's files."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..assess.stage import Judge, judges_record, make_judges
from ..config import RunConfig
from ..errors import ConfigError, DataError, prefixed
from ..models.spec import ModelSpec
from ..preflight import check_run_models
from ..profiles.loader import profile_inputs, resolve_profiles
from ..profiles.schema import PERSONA, Profile
from ..simulate.agents import user_agent
from ..simulate.supporter import supporter_prompt
from ..store.record import record_hash, run_record

MAX_CONVERSATIONS = 1_000_000  # profiles x supporters x repeats in one run


def run_prompts(cfg: RunConfig) -> list[str]:
    """The prompt files a run's conversations read: the persona card (the user's prompts and the judges shown the
    profile read it), the simulated user's, and the built-in supporter prompts its supporters name (the judges'
    prompts are in their cards)."""
    user = [p for p in user_agent(cfg.user_agent.agent).prompts if p != PERSONA]
    sup = {s.system_prompt or "builtin:default" for s in cfg.roles.supporter}
    return [PERSONA, *user, *sorted(f"supporter_{p.removeprefix('builtin:')}" for p in sup if p.startswith("builtin:"))]


def run_inputs(cfg: RunConfig) -> list[Path]:
    """The files a run reads: profile files and folders (the built-in bank too), supporter prompt files."""
    paths = profile_inputs(cfg.profiles)
    files = [s.system_prompt for s in cfg.roles.supporter if s.system_prompt and s.system_prompt.startswith("@")]
    paths += [Path(f[1:]) for f in files]
    return paths


@dataclass(frozen=True)
class Plan:
    cfg: RunConfig
    where: str  # the config's file (or "the demo"), as errors name it
    profiles: list[Profile]
    judges: list[Judge]
    record: dict[str, Any]  # the run record: the resolved config with the judges' cards, prompt versions, input hashes

    @property
    def hash(self) -> str:
        return record_hash(self.record)

    @classmethod
    def of(cls, cfg: RunConfig, where: str = "the config") -> Plan:
        """Read every file the config names (supporter prompts, profiles, judge cards), each once; an error
        names ``where`` and the field."""
        for s in cfg.roles.supporter:
            with prefixed(f"{where}: supporter {s.name}: system_prompt", ConfigError):
                supporter_prompt(s.system_prompt)
        with prefixed(f"{where}: field 'profiles'", DataError):
            profiles = resolve_profiles(cfg.profiles)
        with prefixed(f"{where}: field 'judges'", ConfigError):
            judges = make_judges(cfg.judges, cfg.roles.judge, cfg.roles.user)
        return cls(cfg, where, profiles, judges, _record(cfg, judges))

    def with_config(self, cfg: RunConfig) -> Plan:
        """This plan for ``cfg``, which has its profiles and judges (another supporter, another name): their
        files are not read again; the supporters' prompts must have been checked (they are this plan's)."""
        return replace(self, cfg=cfg, record=_record(cfg, self.judges))


def _record(cfg: RunConfig, judges: list[Judge]) -> dict[str, Any]:
    resolved = {**cfg.resolved(), "judge_cards": judges_record(judges)}
    return run_record(resolved, run_prompts(cfg), run_inputs(cfg))


def check_plan(plan: Plan, *, models: bool = True, reach: bool = True) -> None:
    """An EmoHarbor run's plan (its files were read when it was made): the run is not too large, and
    (``models``) its models are built and, for a new run (``reach``), reached (``preflight.check_run_models``)."""
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
        check_run_models(named, new=reach, where=where)
