"""Output paths on the command line, checked when the command line is read: a report file that is a
folder, an export folder that is a file, or a path through a file is refused before any work starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .. import userfiles
from ..errors import ConfigError


class OutputPath(click.ParamType[Path]):
    name = "path"

    def __init__(self, *, folder: bool) -> None:
        self.folder = folder

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        try:
            (userfiles.output_folder if self.folder else userfiles.output_file)(path, "")
        except ConfigError as e:
            self.fail(str(e).strip(), param, ctx)
        return path


OUT_FILE = OutputPath(folder=False)
OUT_FOLDER = OutputPath(folder=True)


def write_text(path: Path, text: str) -> None:
    """Write an output file, making its folder first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
