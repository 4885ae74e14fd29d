"""Writing profiles to a YAML file, atomically: a temporary file in the same folder, then a rename,
so a crash never leaves half a file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from ..errors import DataError
from .schema import Profile


def write_profiles(path: str | Path, profiles: Sequence[Profile]) -> Path:
    out = Path(path)
    if not out.parent.is_dir():
        raise DataError(f"cannot write {out}: folder {out.parent} does not exist")
    text = yaml.safe_dump([p.model_dump(mode="json") for p in profiles], sort_keys=False, allow_unicode=True, width=110)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return out
