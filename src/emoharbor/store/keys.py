"""A record's key in the run store: a tuple of its parts, written as a JSON array in the key column.

The parts are in the order the record's table names them (a conversation's: profile, supporter, repeat; an
assessment's: the conversation's parts, then the judge), so a reader takes the part it needs by position and
no part is ever cut out of a string. A JSON array holds any character, so names need not avoid a separator.
"""

from __future__ import annotations

import json

Key = tuple[str, ...]  # () for a call or event of no unit


def encode_key(key: Key) -> str:
    """A key as the store writes it ("" for the empty key)."""
    if not isinstance(key, tuple):  # a string would be written as its characters
        raise TypeError(f"a run store key is a tuple of its parts, not {key!r}")
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":")) if key else ""


def decode_key(text: str | None) -> Key:
    return tuple(str(p) for p in json.loads(text)) if text else ()
