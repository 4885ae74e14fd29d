"""Errors a user can act on. The CLI prints their message on one line and exits with status 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class EmoharborError(Exception):
    """A problem with the user's input or environment, stated with what to do about it."""


class ConfigError(EmoharborError):
    pass


class DataError(EmoharborError):
    """Bad input data: the message names the file, record and field."""


def validation_message(path: str, err: ValidationError) -> str:
    """A pydantic error as one line naming the file (or record) and the field."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{where}': {message}{more}"
