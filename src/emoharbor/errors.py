"""Errors a user can act on. The CLI prints their message on one line and exits with status 2."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class EmoharborError(Exception):
    """A problem with the user's input or environment, stated with what to do about it."""


class ConfigError(EmoharborError):
    pass


class DataError(EmoharborError):
    """Bad input data: the message names the file, record and field."""


class WrongKind(EmoharborError):
    """A run folder that holds another kind of run than the one asked for. Its message names the kinds as the
    run stores them ("holds a 'heart' run"); ``titled(title)`` says it with the kinds' titles ("holds a HEART
    run"), which the caller that knows the kinds gives (the command line does)."""

    def __init__(self, folder: object, have: str, wanted: tuple[str, ...], then: str = "") -> None:
        self.folder, self.have, self.wanted, self.then = folder, have, wanted, then
        super().__init__(self.titled(lambda kind: f"a '{kind}' run"))

    def titled(self, title: Callable[[str], str]) -> str:
        wanted = " or ".join(title(k) for k in self.wanted)
        return f"{self.folder} holds {title(self.have)}, not {wanted}{self.then}"


@contextmanager
def prefixed(prefix: str, error: type[EmoharborError]) -> Iterator[None]:
    """An ``error`` raised inside raised again as ``error``, its message after ``prefix`` (the file and the field a
    plan was reading: "run.yaml: field 'profiles'")."""
    try:
        yield
    except error as e:
        raise error(f"{prefix}: {e}") from None


def validation_message(path: str, err: ValidationError) -> str:
    """A pydantic error as one line naming the file (or record) and the field."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{where}': {message}{more}"
