"""Run configuration: a YAML file validated with pydantic, resolved and hashed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import userfiles
from .errors import ConfigError, validation_message
from .models.spec import ModelSpec
from .store.record import hash_config

MAX_REPEATS = 10_000


def plain_name(name: str) -> str:
    """A run's name, part of its default folder (runs/NAME-HASH): not empty, and no path in it."""
    if not name.strip() or "/" in name or "\\" in name or name.strip(".") == "":
        raise ValueError(
            f"name {name!r} is part of the default run folder (runs/NAME-HASH): give a plain name, without '/'"
        )
    return name


def _coerce_spec(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class SupporterSpec(ModelSpec):
    name: str = ""
    system_prompt: str | None = None  # text, or @path to a file; None: the built-in default

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if "|" in name:  # it is part of the keys of the run's records
            raise ValueError(f"a supporter name must not contain '|': {name!r}")
        return name


class RolesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    supporter: list[SupporterSpec] = Field(default_factory=lambda: [SupporterSpec()], min_length=1)
    user: ModelSpec = Field(default_factory=ModelSpec)
    judge: ModelSpec = Field(default_factory=ModelSpec)

    @field_validator("supporter", mode="before")
    @classmethod
    def _supporters(cls, value: Any) -> Any:
        items = value if isinstance(value, list) else [value]
        return [_coerce_spec(v) for v in items]

    @field_validator("user", "judge", mode="before")
    @classmethod
    def _single(cls, value: Any) -> Any:
        return _coerce_spec(value)

    @model_validator(mode="after")
    def _names(self) -> RolesConfig:
        for i, s in enumerate(self.supporter):
            if not s.name:
                s.name = s.model if len(self.supporter) == 1 else f"{s.model}#{i + 1}"
        names = [s.name for s in self.supporter]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"supporter names must be unique; repeated: {sorted(dup)}")
        return self


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "run"
    roles: RolesConfig = Field(default_factory=RolesConfig)
    profiles: list[str] = Field(default_factory=lambda: ["builtin:*"], min_length=1)
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    max_turns: int = Field(default=8, ge=1, le=100)
    seed: int = 0
    concurrency: int = Field(default=32, ge=1)
    user_agent: Literal["chain", "simple"] = "chain"
    intensity_step: int = Field(default=15, ge=1, le=50)  # the most intensity moves after one message
    trust_step: int = Field(default=20, ge=1, le=50)
    initial_trust: int = Field(default=40, ge=0, le=100)
    min_turns: int = Field(default=2, ge=0)  # supporter replies before the user may end
    # judge cards (built-in names or YAML paths): the user-judge and a third-party judge by default
    judges: list[str] = Field(default_factory=lambda: ["user", "third_party"])

    _name = field_validator("name")(plain_name)

    @field_validator("judges")
    @classmethod
    def _cards(cls, refs: list[str]) -> list[str]:
        # no file is read here (a stored config is read back without touching the user's files): the cards
        # are loaded and their kinds checked where the run is built (evaluate.run_judges, in preflight)
        if not refs:
            raise ValueError("no judge cards: the run's conversations would not be rated; give at least one card")
        return refs

    @model_validator(mode="after")
    def _turns(self) -> RunConfig:
        # checked only when min_turns is given: the default (2) stays as it was in runs with max_turns 1
        if "min_turns" in self.model_fields_set and self.min_turns > self.max_turns:
            raise ValueError(
                f"min_turns ({self.min_turns}) is above max_turns ({self.max_turns}): the user could never "
                "end the talk itself; lower min_turns"
            )
        return self

    def resolved(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def config_hash(self) -> str:
        return hash_config(self.resolved())


def load_config(path: str | Path) -> RunConfig:
    p = Path(path)
    raw = userfiles.read_settings(p, "config file", hint=": give the path to a YAML run config")
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(validation_message(str(p), e)) from None
