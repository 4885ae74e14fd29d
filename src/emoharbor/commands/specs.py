"""The models given on the command line as specs: ``model_spec`` for any option, ``user_spec`` (``--model``, the
simulated user's), ``judge_spec`` (``--judge-model``), ``scorer_specs`` (both, for a command that scores),
``supporter_spec`` (``--supporter-model``) and ``agent_settings`` (``--user-agent``); an error names the option
typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ..errors import ConfigError, validation_message
from ..models.spec import ModelSpec
from .options import user_option

if TYPE_CHECKING:
    from ..simulate.agents import UserSettings

Spec = TypeVar("Spec", bound=ModelSpec)


def model_spec(
    cls: type[Spec], option: str, model: str, base_url: str | None, api_key_env: str | None, **more: Any
) -> Spec:
    """A model (``cls``: ModelSpec or SupporterSpec) given on the command line; ``option`` (``--judge-model``)
    names it in an error."""
    spec: dict[str, object] = {"model": model, **more}
    if base_url:
        spec["base_url"] = base_url
    if api_key_env:
        spec["api_key_env"] = api_key_env
    try:
        return cls.model_validate(spec)
    except ValidationError as e:
        raise ConfigError(validation_message(f"{option} {model}", e)) from None


def user_spec(user_model: str, base_url: str | None, api_key_env: str | None) -> ModelSpec:
    return model_spec(ModelSpec, user_option(), user_model, base_url, api_key_env)


def judge_spec(judge_model: str | None, base_url: str | None, api_key_env: str | None) -> ModelSpec | None:
    """``--judge-model`` as a spec; None where it was not given (the command's default applies)."""
    return model_spec(ModelSpec, "--judge-model", judge_model, base_url, api_key_env) if judge_model else None


def supporter_spec(supporter_model: str | None, base_url: str | None, api_key_env: str | None) -> ModelSpec | None:
    """``--supporter-model`` as a spec; None where it was not given (the command's default applies)."""
    if not supporter_model:
        return None
    return model_spec(ModelSpec, "--supporter-model", supporter_model, base_url, api_key_env)


def agent_settings(user_agent: str) -> UserSettings:
    """``--user-agent`` (an agent's name; its settings come by ``--set user_agent.KEY=VALUE``) as its settings."""
    from ..simulate.agents import user_settings

    try:
        return user_settings(user_agent)
    except ValueError as e:
        raise ConfigError(f"--user-agent {user_agent}: {e}") from None


def scorer_specs(user_model: str, judge_model: str | None, base_url: str | None,
                 api_key_env: str | None) -> tuple[ModelSpec | None, ModelSpec]:  # fmt: skip
    """The simulated user's model (None for ``none``: the judges alone) and the judges' (the user's unless
    ``--judge-model`` is given)."""
    user = None if user_model == "none" else user_spec(user_model, base_url, api_key_env)
    judge = judge_spec(judge_model, base_url, api_key_env) or user
    if judge is None:
        raise ConfigError(f"{user_option()} none: give --judge-model for the judges")
    return user, judge
