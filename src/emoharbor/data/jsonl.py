"""Reading JSON Lines with errors that name the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import DataError


def read_jsonl(path: str | Path, what: str) -> Iterator[tuple[int, Any]]:
    """(line number, record) for every non-blank line; ``what`` names the file in the not-found error."""
    p = Path(path)
    for n, line in enumerate(userfiles.read_text(p, what, DataError).splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}: line {n}: not valid JSON ({e.msg})") from None
