"""Run configuration: a YAML file validated with pydantic, resolved and hashed."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import userfiles
from .errors import ConfigError

DEFAULT_MODEL = "local:qwen1.5b"
MAX_REPEATS = 10_000
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)


class ModelSpec(BaseModel):
    """One model as a role sees it.

    ``model`` is ``local:NAME`` (embedded llama.cpp; NAME a built-in or a path to a GGUF),
    ``hf:PATH[@ADAPTER]`` (a local Hugging Face model, ``train`` extra), ``scripted`` (tests), or the
    model name served at ``base_url`` / ``endpoints``.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    endpoints: list[str] = Field(default_factory=list)
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    temperature: float = Field(default=0.7, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=256, ge=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    json_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    concurrency: int = Field(default=8, ge=1, le=1024)
    # seconds per call; default 120, or 1800 for the embedded model, which queues calls one at a time on
    # the CPU (a timed-out call would be read again from the start)
    timeout_s: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    price: Price = Field(default_factory=Price)
    context_size: int = Field(default=4096, ge=512)
    port: int | None = Field(default=None, ge=1, le=65535)  # local: fixed port (first role); None: a free one
    replies: list[str] = Field(default_factory=list)  # for model: scripted

    @property
    def backend(self) -> str:
        if self.model.startswith("local:"):
            return "local"
        if self.model == "scripted":
            return "scripted"
        if self.model.startswith("hf:"):
            return "hf"
        return "openai"

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        return None if url is None else _http_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _key_name(cls, name: str | None) -> str | None:
        if name is not None and not ENV_NAME.fullmatch(name):  # the value is not repeated: it may be the key
            raise ValueError(
                "api_key_env is the name of the environment variable that holds the key (such as "
                "OPENAI_API_KEY), not the key itself: export the key in a variable and give its name"
            )
        return name

    @field_validator("endpoints")
    @classmethod
    def _endpoints(cls, urls: list[str]) -> list[str]:
        return [_http_url(u) for u in urls]

    @model_validator(mode="after")
    def _check_backend(self) -> ModelSpec:
        if self.backend == "openai" and not (self.base_url or self.endpoints) and self.api_key_env is None:
            raise ValueError(
                f"model {self.model!r} is not 'local:NAME' or 'scripted', so it needs "
                "base_url (or endpoints) and api_key_env naming the variable that holds the key"
            )
        if self.base_url and self.endpoints:
            raise ValueError("give base_url or endpoints, not both")
        if self.backend == "local" and self.json_mode == "json_schema":
            raise ValueError("the embedded model does not take json_schema: use json_object (a grammar) or prompt")
        return self

    @property
    def call_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return 1800.0 if self.backend == "local" else 120.0

    def endpoint_urls(self) -> list[str]:
        if self.endpoints:
            return list(self.endpoints)
        return [self.base_url or "https://api.openai.com/v1"]


def _http_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL: write it as http://HOST:PORT/v1")
    try:
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        raise ValueError(f"{url!r} has a port that is not a number from 1 to 65535") from None
    return url


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
        from .assess.cards import load_card  # the cards module imports this one

        if not refs:
            raise ValueError("no judge cards: the run's conversations would not be rated; give at least one card")
        for ref in refs:
            try:
                card = load_card(ref)
            except ConfigError as e:
                raise ValueError(str(e)) from None
            if card.kind == "heart_pairwise":
                raise ValueError(f"judge card {ref!r} is a HEART pairwise judge: it belongs in a HEART config")
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


def hash_config(resolved: dict[str, Any]) -> str:
    blob = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def validation_message(path: str, err: ValidationError) -> str:
    """A pydantic error as one line naming the file (or record) and the field."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{where}': {message}{more}"


def load_config(path: str | Path) -> RunConfig:
    p = Path(path)
    raw = userfiles.read_settings(p, "config file", hint=": give the path to a YAML run config")
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(validation_message(str(p), e)) from None
