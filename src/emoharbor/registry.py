"""Finding a registered plug-in by name, the one way the registries (user agents, judge forms, run kinds) do
it: the built-in modules register theirs when first imported, and ``module:name`` imports a user's own module,
which registers ``name`` as it loads."""

from __future__ import annotations

import importlib
import sys
from typing import Any, TypeVar

from .errors import ConfigError

T = TypeVar("T")
ORIGIN: dict[tuple[int, str], str] = {}  # (the table, a name) -> the module that registered it


def caller(depth: int = 2) -> str:
    """The module of the code ``depth`` frames up: who called the function that calls this."""
    return str(sys._getframe(depth).f_globals.get("__name__", "?"))


def add(table: dict[str, Any], name: str, entry: Any, *, module: str, what: str) -> None:
    """Put ``entry`` in ``table`` under ``name``, registered by ``module``; a name another module registered
    already is refused, naming both (the same module again, as a reload does, replaces its own entry). A table's
    entry put there otherwise (the built-in run kinds, as a ``module:Class`` string and then as the instance) was
    registered by the module of its class."""
    old = ORIGIN.get((id(table), name))
    if old is None and name in table:
        held = table[name]
        old = held.partition(":")[0] if isinstance(held, str) else type(held).__module__
    if old is not None and old != module:
        raise ConfigError(f"{what} {name!r} is registered twice: by {old} and by {module}; give one of them "
                          "another name")  # fmt: skip
    table[name] = entry
    ORIGIN[(id(table), name)] = module


def lookup(table: dict[str, T], name: str, package: str, built_in: tuple[str, ...], *, field: str, what: str) -> T:
    """The entry ``name`` of ``table``, after importing ``package``'s ``built_in`` modules, or ``module:name``'s
    module; an unknown name or a module that will not import is a one-line error naming ``field``."""
    for module in built_in:
        importlib.import_module(f"{package}.{module}")
    if name not in table and ":" in name:
        import_owner(name, field)
        own = name.partition(":")[2]
        if own in table:
            table[name] = table[own]
    if name not in table:
        raise ConfigError(
            f"{field} {name!r}: no such {what} (registered: {', '.join(sorted(table))}; a module of your own: "
            "MODULE:NAME)"
        )
    return table[name]


def import_owner(name: str, field: str) -> None:
    """Import the module of ``module:name`` (a user's own, which registers ``name`` as it loads); one that will
    not import is a one-line error naming ``field``."""
    module = name.partition(":")[0]
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"{field} {name!r}: cannot import {module} ({e})") from None
