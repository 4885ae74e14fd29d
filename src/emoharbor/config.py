"""Run configuration: a YAML file validated with pydantic, resolved and hashed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import userfiles
from .errors import ConfigError, EmoharborError, validation_message
from .models.spec import ModelSpec, spec_input
from .simulate.agents import UserBlock, default_user, user_agent
from .store.record import hash_config

OLD_USER_KEYS = ("intensity_step", "trust_step", "initial_trust", "min_turns")  # now in ``user_agent:``

MAX_REPEATS = 10_000


def plain_name(name: str) -> str:
    """A run's name, part of its default folder (runs/NAME-HASH): not empty, and no path in it."""
    if not name.strip() or "/" in name or "\\" in name or name.strip(".") == "":
        raise ValueError(
            f"name {name!r} is part of the default run folder (runs/NAME-HASH): give a plain name, without '/'"
        )
    return name


class SupporterSpec(ModelSpec):
    name: str = ""
    system_prompt: str | None = None  # text, or @path to a file; None: the built-in default

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if "|" in name:  # joined into a conversation's id ("profile|supporter|repeat"), which records match by
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
        return [spec_input(v) for v in items]

    @field_validator("user", "judge", mode="before")
    @classmethod
    def _single(cls, value: Any) -> Any:
        return spec_input(value)

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
    # the simulated user: its agent and the agent's own settings (roles.user is its model)
    user_agent: UserBlock = Field(default_factory=default_user)
    # judge cards (built-in names, YAML paths, or {card: REF, FIELD: VALUE} for a card with fields changed): the
    # user-judge and a third-party judge by default
    judges: list[str | dict[str, Any]] = Field(
        default_factory=lambda: list[str | dict[str, Any]](["user", "third_party"])
    )

    _name = field_validator("name")(plain_name)

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        """The old spelling, top-level ``intensity_step``, ``trust_step``, ``initial_trust`` and ``min_turns``
        (and ``user_agent: NAME``), read into the ``user_agent:`` block; an agent without such a setting
        never read it, and it is dropped (stored configs of ``simple`` runs carry all four)."""
        if not isinstance(data, dict) or not any(k in data for k in OLD_USER_KEYS):
            return data
        data = dict(data)
        block = data.get("user_agent") or {}
        block = {"agent": block} if isinstance(block, str) else dict(block)
        try:
            own = user_agent(str(block.get("agent", "chain"))).settings.model_fields
        except EmoharborError:
            return data  # the block's validator names the unknown agent
        for key in OLD_USER_KEYS:
            if key in data:
                value = data.pop(key)
                if key in block:
                    raise ValueError(f"{key} is given twice, at the top level (the old spelling) and in user_agent")
                if key in own:
                    block[key] = value
        data["user_agent"] = block
        return data

    @field_validator("judges")
    @classmethod
    def _cards(cls, refs: list[str | dict[str, Any]]) -> list[str | dict[str, Any]]:
        # no file is read here (a stored config is read back without touching the user's files): the cards
        # are loaded and their forms checked where the run is planned (evaluate.plan.Plan.of, make_judges)
        if not refs:
            raise ValueError("no judge cards: the run's conversations would not be rated; give at least one card")
        return refs

    @model_validator(mode="after")
    def _turns(self) -> RunConfig:
        # checked only when min_turns is given: the default (2) stays as it was in runs with max_turns 1
        min_turns = getattr(self.user_agent, "min_turns", None)
        if "min_turns" in self.user_agent.model_fields_set and min_turns is not None and min_turns > self.max_turns:
            raise ValueError(
                f"user_agent.min_turns ({min_turns}) is above max_turns ({self.max_turns}): the user could never "
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
