"""What one EmoHarbor run is to do, built once from its config (with ``--set`` applied) and passed on: the
resolved profiles, the judges (each card loaded once), the prompts' versions, the input files' hashes and the
run record made of them. Preflight checks it, the run executes it, the store keeps its record and its
profiles; the report, export and leaderboard read them back from the store, not from the user's files."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..assess.stage import Judge, judges_record, make_judges
from ..config import RunConfig
from ..errors import ConfigError, DataError
from ..profiles.loader import BANK_FOLDER, BANK_PACKAGE, resolve_profiles
from ..profiles.schema import Profile
from ..simulate.agents import user_agent
from ..simulate.supporter import supporter_prompt
from ..store.record import record_hash, run_record


def run_prompts(cfg: RunConfig) -> list[str]:
    """The prompt files a run's conversations read: the simulated user's, and the built-in supporter prompts
    its supporters name (the judges' prompts are in their cards)."""
    user = list(user_agent(cfg.user_agent.agent).prompts)
    sup = {s.system_prompt or "builtin:default" for s in cfg.roles.supporter}
    return [*user, *sorted(f"supporter_{p.removeprefix('builtin:')}" for p in sup if p.startswith("builtin:"))]


def run_inputs(cfg: RunConfig) -> list[Path]:
    """The files a run reads: profile files and folders (the built-in bank too), supporter prompt files."""
    paths = [Path(p) for p in cfg.profiles if not p.startswith("builtin:")]
    if any(p.startswith("builtin:") for p in cfg.profiles):
        paths.append(Path(str(resources.files(BANK_PACKAGE).joinpath(BANK_FOLDER))))
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
            try:
                supporter_prompt(s.system_prompt)
            except ConfigError as e:
                raise ConfigError(f"{where}: supporter {s.name}: system_prompt: {e}") from None
        try:
            profiles = resolve_profiles(cfg.profiles)
        except DataError as e:
            raise DataError(f"{where}: field 'profiles': {e}") from None
        try:
            judges = make_judges(cfg.judges, cfg.roles.judge, cfg.roles.user)
        except ConfigError as e:
            raise ConfigError(f"{where}: field 'judges': {e}") from None
        resolved = {**cfg.resolved(), "judge_cards": judges_record(judges)}
        return cls(cfg, where, profiles, judges, run_record(resolved, run_prompts(cfg), run_inputs(cfg)))
