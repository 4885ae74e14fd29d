"""Every prompt is a text file in this folder. Its version is a hash of its text, so a changed
prompt changes the cache key and the run record by itself.

Placeholders are ``$name`` (``string.Template``); a missing value is an error, not a blank.
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


@cache
def load_prompt(name: str) -> Prompt:
    text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return Prompt(name, text)
