"""Every prompt is a text file in this folder. Its version is a hash of its text, so a changed
prompt changes the cache key and the run record by itself.

Placeholders are ``$name`` (``string.Template``); a missing value is an error, not a blank.

A file of short texts (words a piece of code picks from) holds one ``key: text`` a line; blank lines and lines
starting with ``#`` are notes for the reader. ``Prompt.entries`` reads it, each entry a prompt of its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def version(self) -> str:
        return f"{self.name}@{hashlib.sha256(self.text.encode()).hexdigest()[:10]}"

    def render(self, **values: object) -> str:
        try:
            return Template(self.text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as e:
            raise KeyError(f"prompt {self.name} needs a value for ${e.args[0]}") from None

    def entries(self) -> dict[str, Prompt]:
        """The entries of a file of short texts, by key, in the file's order."""
        out: dict[str, Prompt] = {}
        for line in self.text.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, text = (part.strip() for part in line.partition(":"))
            if not sep or key in out:
                raise ValueError(f"prompt {self.name}: not one 'key: text' of its own: {line!r}")
            out[key] = Prompt(f"{self.name}:{key}", text)
        return out


@cache
def load_prompt(name: str) -> Prompt:
    text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return Prompt(name, text)
