"""Settings changed by dotted KEY=VALUE overrides (``--set`` on the command line, the same on every command that
has it: ``run``, ``validate``, the ``heart`` stages, ``evolve``).

KEY is a setting's name, dotted for a nested one (``roles.judge.temperature``) and with a number for an item of
a list (``judges.0.timeout_s``); VALUE is read as YAML (``4``, ``true``, ``[a, b]``, ``{model: x}``). An unknown
key or a bad value is a one-line error naming the ``--set``.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from .errors import ConfigError, validation_message

T = TypeVar("T")


def parse_sets(sets: Sequence[str], example: str = "concurrency=4") -> dict[str, Any]:
    """``KEY=VALUE`` strings as {KEY: the YAML value}; a later one of the same KEY wins."""
    out: dict[str, Any] = {}
    for s in sets:
        key, eq, value = s.partition("=")
        key = key.strip()
        if not eq or not key or "" in key.split("."):
            raise ConfigError(f"--set {s!r}: write KEY=VALUE, e.g. --set {example}")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(
                f"--set {key}: {value!r} is not a YAML value: quote text with colons or brackets"
            ) from None
    return out


def _model_in(annotation: Any) -> type | None:
    """The settings class (pydantic model or dataclass) an annotation holds (X, X | None, list[X]), or None."""
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _fields(cls: type) -> dict[str, Any]:
    if issubclass(cls, BaseModel):
        return {name: f.annotation for name, f in cls.model_fields.items()}
    return typing.get_type_hints(cls)


def _free(annotation: Any) -> bool:
    """Whether an annotation takes a mapping of any keys (headers, extra_body), itself or in a union."""
    if annotation is Any or typing.get_origin(annotation) in (dict, Mapping):
        return True
    return any(_free(arg) for arg in typing.get_args(annotation) if typing.get_origin(annotation) is not list)


def check_key(cls: type, key: str, where: str) -> None:
    """Refuse a KEY that names no setting of ``cls``, listing the settings where it went astray, or that goes
    inside a single setting."""
    current: type | None = cls
    parts = key.split(".")
    for i, part in enumerate(parts):
        if current is None or getattr(current, "open_settings", False):  # a free-form mapping, or settings
            return  # whose fields depend on a value (a user_agent: block, its agent's): validation checks them
        if part.isdigit():
            continue
        fields, at = _fields(current), ".".join(parts[: i + 1])
        if part not in fields:
            has = f"{'.'.join(parts[:i])} has" if i else "the settings are"
            raise ConfigError(f"--set {key}: field '{at}': no such setting ({has}: {', '.join(fields)})")
        current = _model_in(fields[part])
        if current is None and not _free(fields[part]) and i + 1 < len(parts):
            raise ConfigError(_single(key, at, where))


def _single(key: str, path: str, where: str) -> str:
    return (
        f"--set {key}: '{path}' is a single setting in {where}, not a group of settings: set it whole, --set {path}=..."
    )


def _index(node: Any, part: str, key: str, path: str, where: str) -> Any:
    """The index or key that ``part`` of ``key`` names inside ``node`` (at ``path``)."""
    if isinstance(node, list):
        if not part.isdigit() or int(part) >= len(node):
            raise ConfigError(
                f"--set {key}: '{path}' is a list of {len(node)} in {where}: give an item's number (0 to "
                f"{len(node) - 1}), or set the whole list: --set {path}=[...]"
            )
        return int(part)
    if isinstance(node, dict):
        return part
    raise ConfigError(_single(key, path, where))


def apply_sets(raw: Mapping[str, Any], overrides: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A copy of the settings ``raw`` with ``overrides`` ({dotted key: value}) put in; groups are made as needed."""
    data: dict[str, Any] = copy.deepcopy(dict(raw))
    for key, value in overrides.items():
        node: Any = data
        parts = key.split(".")
        for i, part in enumerate(parts):
            at = _index(node, part, key, ".".join(parts[:i]) or "(top level)", where)
            if i == len(parts) - 1:
                node[at] = value
            else:
                node = node.setdefault(at, {}) if isinstance(node, dict) else node[at]
    return data


def _message(err: ValidationError, overrides: Mapping[str, Any], where: str) -> str:
    """The first error that lies at, inside or (a value of the wrong type) above a ``--set``, named by it; else
    the first error, naming the file and the ``--set`` options given."""
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        for k in overrides:
            above = bool(loc) and k.startswith(f"{loc}.") and e["type"] != "value_error"
            if loc == k or loc.startswith(f"{k}.") or above:
                return f"--set {k}: field '{loc}': {e['msg'].removeprefix('Value error, ')}"
    given = ", ".join(f"--set {k}" for k in overrides)
    return validation_message(f"{where} with {given}" if given else where, err)


def validated(cls: type[T], raw: Mapping[str, Any], overrides: Mapping[str, Any], where: str) -> T:
    """``raw`` (the settings of ``where``, a file or a run) with ``overrides`` put in, validated as ``cls`` (a
    pydantic model or a dataclass); an unknown key or a bad value is a ConfigError naming its ``--set``."""
    for key in overrides:
        check_key(cls, key, where)
    data = apply_sets(raw, overrides, where)
    try:
        return TypeAdapter(cls).validate_python(data)
    except ValidationError as e:
        raise ConfigError(_message(e, overrides, where)) from None


def with_sets(settings: T, overrides: Mapping[str, Any], where: str) -> T:
    """``settings`` (already validated) with ``overrides`` put in, validated again; itself without overrides."""
    if not overrides:
        return settings
    cls: type[T] = type(settings)
    raw = TypeAdapter(cls).dump_python(settings, mode="json", exclude_unset=True)
    return validated(cls, raw, overrides, where)
