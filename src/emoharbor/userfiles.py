"""Reading the files a user gives (configs, profiles, data): a missing file, a folder, text that is not
UTF-8 or YAML/JSON that does not parse each get an error that names the file (and the line), never a
traceback. Places a user names for output (a run folder, a report file) are checked the same way before
anything is written there."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, EmoharborError

_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is 10x faster
_MERGE = "tag:yaml.org,2002:merge"


class _RepeatedKey(Exception):
    """A key given twice in one mapping: YAML and JSON would keep the last silently."""

    def __init__(self, key: Any, line: int | None) -> None:
        super().__init__(key)
        self.key, self.line = key, line


class _Loader(_BASE_LOADER):  # type: ignore[misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:  # keys brought in by '<<' may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the constructor says so below
                continue
            if repeated:
                raise _RepeatedKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key, None)
        out[key] = value
    return out


def parse(name: str | Path, text: str, error: type[EmoharborError] = ConfigError) -> Any:
    """The text of file ``name``: JSON when the name ends in .json, else YAML. A key given twice in one
    mapping is an error, not "the last one wins"."""
    is_json = Path(name).suffix.lower() == ".json"
    try:
        return json.loads(text, object_pairs_hook=_no_repeats) if is_json else yaml.load(text, Loader=_Loader)
    except _RepeatedKey as e:
        where = f" at line {e.line}" if e.line is not None else ""
        raise error(f"{name}: key {e.key!r} is given twice{where}: keep one") from None
    except json.JSONDecodeError as e:
        raise error(f"{name}: not valid JSON at line {e.lineno}: {e.msg}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)  # the first line of a YAML error is only its context
        where = f" at line {mark.line + 1}" if mark is not None else ""
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise error(f"{name}: not valid YAML{where}: {what}") from None


def read_text(path: Path, what: str, error: type[EmoharborError] = ConfigError, hint: str = "") -> str:
    """The file's text; ``what`` names it in the error when it is missing ("config file", ...)."""
    if path.is_dir():
        raise error(f"{what} {path} is a folder: give the path of a file")
    if not path.is_file():
        raise error(f"{what} {path} not found{hint}")
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel's CSV) is dropped
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text: save it as UTF-8") from None


def read(path: Path, what: str, error: type[EmoharborError] = ConfigError, hint: str = "") -> Any:
    """The parsed file (see ``parse``)."""
    return parse(path, read_text(path, what, error, hint), error)


def read_settings(path: Path, what: str, error: type[EmoharborError] = ConfigError, hint: str = "") -> dict[str, Any]:
    """A settings file (a config): a mapping. An empty file is refused, not read as "all defaults"."""
    raw = read(path, what, error, hint)
    if raw is None:
        raise error(f"{what} {path} is empty: write its settings in it")
    if not isinstance(raw, dict):
        raise error(f"{path}: the top level must be a mapping of settings")
    return raw


def _check_writable_below(path: Path, what: str) -> None:
    """The nearest folder that exists on the way to ``path`` is a folder, and writable."""
    above = path.absolute()
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise ConfigError(f"{what} {path}: {above} is a file, not a folder")
    if not os.access(above, os.W_OK):
        raise ConfigError(f"{what} {path}: the folder {above} is not writable")


def output_folder(path: Path, what: str) -> None:
    """Refuse, before anything is written, a folder that cannot be one: an existing file, or a path that
    goes through a file."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path} is a file: give the path of a folder")
    _check_writable_below(path, what)


def output_file(path: Path, what: str) -> None:
    """Refuse, before anything is written, a file that cannot be one: an existing folder, or a path that goes
    through a file."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder: give the path of a file")
    _check_writable_below(path.parent, what)
