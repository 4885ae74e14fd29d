"""Loading profiles from YAML/JSON files, folders and the built-in bank, with errors that name the
file, the profile and the field."""

from __future__ import annotations

import fnmatch
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from .. import userfiles
from ..errors import DataError, validation_message
from .schema import Profile

BANK_PACKAGE = "emoharbor.profiles"
BANK_FOLDER = "bank"
PROFILE_SUFFIXES = (".yaml", ".yml", ".json")


def parse_profiles(path: Path, text: str) -> list[Profile]:
    raw = userfiles.parse(path, text, DataError)
    if raw is None or raw == []:
        raise DataError(f"{path}: no profiles in it: write one profile, or a list of them")
    records = raw if isinstance(raw, list) else [raw]
    out: list[Profile] = []
    for i, rec in enumerate(records):
        label = f"record {i + 1}"
        if not isinstance(rec, dict):
            raise DataError(f"{path}: {label} is not a mapping of profile fields")
        if rec.get("id"):
            label = f"profile '{rec['id']}'"
        try:
            out.append(Profile.model_validate(rec))
        except ValidationError as e:
            raise DataError(validation_message(f"{path}: {label}", e)) from None
    return out


def load_profile_file(path: str | Path) -> list[Profile]:
    p = Path(path)
    return parse_profiles(p, userfiles.read_text(p, "profile file", DataError))


def profile_files(folder: Path) -> list[Path]:
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in PROFILE_SUFFIXES)
    if not files:
        raise DataError(f"{folder}: no .yaml, .yml or .json profile files in this folder")
    return files


def _from_folder(folder: Path) -> list[tuple[Profile, str]]:
    return [(p, str(f)) for f in profile_files(folder) for p in load_profile_file(f)]


def load_profile_folder(folder: Path) -> list[Profile]:
    return _unique(_from_folder(folder), str(folder))


@cache
def builtin_profiles() -> tuple[Profile, ...]:
    bank = resources.files(BANK_PACKAGE).joinpath(BANK_FOLDER)
    out: list[tuple[Profile, str]] = []
    for entry in sorted(bank.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(PROFILE_SUFFIXES):
            name = f"builtin/{entry.name}"
            out.extend((p, name) for p in parse_profiles(Path(name), entry.read_text(encoding="utf-8")))
    return tuple(_unique(out, "the built-in bank"))


def _unique(profiles: list[tuple[Profile, str]], where: str) -> list[Profile]:
    """The profiles, each with the file it came from; an id that two of them share is an error naming both."""
    seen: dict[str, str] = {}
    for p, origin in profiles:
        if p.id in seen:
            other = seen[p.id]
            where_both = f"{origin} and {other}" if origin != other else f"{origin} (twice)"
            raise DataError(f"{where}: profile id '{p.id}' appears more than once: in {where_both}")
        seen[p.id] = origin
    return [p for p, _ in profiles]


def resolve_profiles(specs: list[str]) -> list[Profile]:
    """``builtin:*``, ``builtin:ID`` or a glob of ids, a YAML/JSON file, or a folder of them."""
    out: list[tuple[Profile, str]] = []
    for spec in specs:
        if spec.startswith("builtin:"):
            pattern = spec.removeprefix("builtin:") or "*"
            hits = [p for p in builtin_profiles() if fnmatch.fnmatchcase(p.id, pattern)]
            if not hits:
                raise DataError(f"no built-in profile matches '{pattern}': see `emoharbor profiles list`")
            out.extend((p, spec) for p in hits)
        else:
            path = Path(spec)
            if path.is_dir():
                out.extend(_from_folder(path))
            else:
                out.extend((p, spec) for p in load_profile_file(path))
    return _unique(out, "the run's profiles")


def profile_inputs(specs: list[str]) -> list[Path]:
    """The files a run reading the profiles ``specs`` depends on (their hashes go in its record): each file or
    folder named, and the built-in bank's folder where ``builtin:`` is named."""
    paths = [Path(p) for p in specs if not p.startswith("builtin:")]
    if any(p.startswith("builtin:") for p in specs):
        paths.append(Path(str(resources.files(BANK_PACKAGE).joinpath(BANK_FOLDER))))
    return paths
