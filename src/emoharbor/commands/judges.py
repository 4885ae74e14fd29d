"""`emoharbor judges RUN...`: judges side by side, across runs, before choosing one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import EmoharborError
from ..report.judges_table import header, judges_table, notes, table_cells
from ..tables import text_table


@click.command("judges")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True)
def judges(runs: tuple[Path, ...], fmt: str) -> None:
    """One row per judge card (and scoring) across the runs given: agreement with the real seekers and the
    margin over the best no-model baseline (validate runs), HEART order consistency and length bias (HEART
    runs), how often it prefers the real reply to rule-made bad ones (sensitivity runs; the simulated user's
    reward as the judge "user"), its agreement with the seekers' own ratings of single replies (seekers runs),
    the unscored share, and tokens and seconds per judgment."""
    rows = judges_table(list(runs))
    if not rows:
        raise EmoharborError(f"no judgments in {', '.join(map(str, runs))}: no judge has finished a unit yet: run the "
                             "command that started a run again to resume it; `emoharbor assess RUN --judge CARD` "
                             "rates a finished one")  # fmt: skip
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(text_table(header(), table_cells(rows), md=fmt == "md"))
    click.echo("\n" + notes())


COMMANDS = [judges]
