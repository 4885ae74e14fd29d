"""Finding a registered plug-in by name, the one way the registries (user agents, judge kinds) do it: the
built-in modules register theirs when first imported, and ``module:name`` imports a user's own module, which
registers ``name`` as it loads."""

from __future__ import annotations

import importlib
from typing import TypeVar

from .errors import ConfigError

T = TypeVar("T")


def lookup(table: dict[str, T], name: str, package: str, built_in: tuple[str, ...], *, field: str, what: str) -> T:
    """The entry ``name`` of ``table``, after importing ``package``'s ``built_in`` modules, or ``module:name``'s
    module; an unknown name or a module that will not import is a one-line error naming ``field``."""
    for module in built_in:
        importlib.import_module(f"{package}.{module}")
    if name not in table and ":" in name:
        module, _, own = name.partition(":")
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ConfigError(f"{field} {name!r}: cannot import {module} ({e})") from None
        if own in table:
            table[name] = table[own]
    if name not in table:
        raise ConfigError(
            f"{field} {name!r}: no such {what} (registered: {', '.join(sorted(table))}; a module of your own: "
            "MODULE:NAME)"
        )
    return table[name]
