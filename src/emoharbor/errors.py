"""Errors a user can act on. The CLI prints their message on one line and exits with status 2."""


class EmoharborError(Exception):
    """A problem with the user's input or environment, stated with what to do about it."""


class ConfigError(EmoharborError):
    pass


class DataError(EmoharborError):
    """Bad input data: the message names the file, record and field."""
