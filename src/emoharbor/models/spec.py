"""A model as a role of a run sees it (``ModelSpec``), and its validation: the one place that says what a
model spec may hold. Building and checking a model from it is ``models.pool``'s."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

DEFAULT_MODEL = "local:qwen1.5b"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def spec_input(value: Any) -> Any:
    """A model given by its name alone (``judge: local:qwen1.5b``) as the spec it stands for (``{model: NAME}``):
    the one coercion every config field that holds a model spec runs before validation."""
    return {"model": value} if isinstance(value, str) else value


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
    # seconds per call; default 120, or 1800 for the embedded model, whose calls wait for a free slot of its
    # server on the CPU (a timed-out call would be read again from the start)
    timeout_s: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    price: Price = Field(default_factory=Price)
    context_size: int = Field(default=4096, ge=512)
    port: int | None = Field(default=None, ge=1, le=65535)  # local: fixed port (its first server); None: a free one
    replies: list[str] = Field(default_factory=list)  # for model: scripted
    # local: a smaller model of the same vocabulary drafting tokens that the model verifies (llama.cpp's speculative
    # decoding), local:qwen0.5b for local:qwen1.5b; None: none. A speed setting: the answers are the model's own
    draft: str | None = None
    draft_max: int | None = Field(default=None, ge=1, le=64)  # tokens drafted at most per step; None: llama.cpp's

    @model_serializer(mode="wrap")
    def _without_unset_draft(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``draft`` and ``draft_max`` are left out while unset: the specs of runs made before they existed
        dump (and hash) as they did."""
        out = handler(self)
        if isinstance(out, dict):
            for key in ("draft", "draft_max"):
                if key in out and out[key] is None:
                    del out[key]
        return out

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
            if not os.environ.get("OPENAI_API_KEY"):  # as the openai SDK: the key and base URL of the environment
                raise ValueError(
                    f"model {self.model!r} is not 'local:NAME' or 'scripted', so it needs base_url (or endpoints) "
                    "and api_key_env naming the variable that holds the key, or OPENAI_API_KEY (and "
                    "OPENAI_BASE_URL) set in the environment"
                )
            self.api_key_env = "OPENAI_API_KEY"
            if os.environ.get("OPENAI_BASE_URL"):
                self.base_url = _http_url(os.environ["OPENAI_BASE_URL"])
        if self.base_url and self.endpoints:
            raise ValueError("give base_url or endpoints, not both")
        if self.backend == "local" and self.json_mode == "json_schema":
            raise ValueError("the embedded model does not take json_schema: use json_object (a grammar) or prompt")
        if self.draft is not None and self.backend != "local":
            raise ValueError(f"draft is for the embedded model (model: local:NAME), not {self.model!r}: remove it")
        if self.draft is not None and not self.draft.startswith("local:"):
            raise ValueError(f"draft {self.draft!r} is not an embedded model: give local:qwen0.5b, local:smollm2 or "
                             "local:PATH to a .gguf file")  # fmt: skip
        if self.draft_max is not None and self.draft is None:
            raise ValueError("draft_max is set but draft is not: give the draft model (draft: local:qwen0.5b)")
        return self

    @property
    def identity(self) -> str:
        """Which model the spec builds, as a key: every setting but a role's own name and prompt (two supporters
        on one model are one model to build, check and reach)."""
        return json.dumps(self.model_dump(mode="json", exclude={"name", "system_prompt"}), sort_keys=True)

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
