"""`emoharbor report` (one self-contained HTML file over run folders) and `emoharbor validate` (the user-judge
against real help-seekers)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import click

from ..errors import EmoharborError
from ..validate.run import DEFAULT_JUDGES, ValidateOptions, ValidatePlan
from .evaluate import board
from .options import CARDS_HELP, concurrency_opt, format_opt, model_options, progress_opt, run_dir_opt, set_option
from .paths import OUT_FILE, write_text
from .scorers import run_scorers
from .specs import judge_spec, user_spec


def leaderboards(folders: list[Path], fmt: str, judge: str) -> str:
    got = [(f, *board(f, fmt, judge)) for f in folders]
    if len(got) == 1:
        return str(got[0][1])
    paired = None
    if fmt != "csv" and all(data.get("kind") == "sensitivity" for _, _, data in got):  # compared pairwise too
        paired = paired_sensitivity(folders, fmt)
    if fmt == "json":
        both = {str(f): data for f, _, data in got} | ({"paired": paired[1]} if paired else {})
        return json.dumps(both, indent=2, default=str)
    if fmt == "csv":  # one table: the run folder as the first column
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        for i, (f, text, _) in enumerate(got):
            for j, row in enumerate(csv.reader(io.StringIO(text))):
                if i == 0 or j > 0:  # the header once
                    w.writerow(["run" if j == 0 else str(f), *row])
        return out.getvalue()
    tail = [f"## Paired\n\n{paired[0]}"] if paired else []
    return "\n\n".join([*(f"## Run {f}\n\n{text}" for f, text, _ in got), *tail])


def paired_sensitivity(folders: list[Path], fmt: str) -> tuple[str, Any]:
    """Sensitivity runs on the same cases: every later one against the first (``sensitivity.compare``)."""
    from ..sensitivity.compare import compare_runs
    from ..store.run_store import RunStore

    stores = [RunStore.open_existing(f) for f in folders]
    try:
        return compare_runs(stores, fmt)
    finally:
        for s in stores:
            s.close()


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=OUT_FILE, help="HTML file to write (default: report.html in the first run folder).")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json", "csv"]), default="html", show_default=True,
              help="html: the whole report as one file; md/json/csv: the leaderboard only, "
              "printed (or to --out); sensitivity runs in md/json also compared pairwise.")  # fmt: skip
@click.option("--judge", default="user", show_default=True,
              help="Whose scores for md/json/csv: user, third_party:MODEL.")  # fmt: skip
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap intervals.")
def report(runs: tuple[Path, ...], out: Path | None, fmt: str, judge: str, seed: int) -> None:
    """One self-contained HTML report over one or more run folders (EmoHarbor, validate, HEART or sensitivity
    runs); prints the file's path. With --format md|json|csv, only the leaderboard (a sensitivity run's: its
    table)."""
    folders = list(runs)
    for f in folders:
        if not (f / "run.sqlite").is_file():
            raise EmoharborError(f"{f} is not a run folder (no run.sqlite in it)")
    if fmt != "html":
        text = leaderboards(folders, fmt, judge)
        if out is None:
            click.echo(text.rstrip("\r\n"))
        else:
            write_text(out, text + ("" if text.endswith("\n") else "\n"))
            click.echo(str(out))
        return
    from ..report.build import write_report

    path = write_report(folders, out or folders[0] / "report.html", seed=seed)
    click.echo(str(path))


@click.command("validate")
@click.option("--esconv", "esconv", multiple=True, required=True, type=click.Path(path_type=Path),
              help="An ESConv file (train/valid .jsonl or failed_dev.json); repeat for several.")  # fmt: skip
@click.option("--limit", type=int, help="The first N records of each file.")
@click.option("--sample", type=int, help="N records of each file at random (with --seed), instead of the first N.")
@click.option("--seed", default=0, show_default=True)
@click.option("--judge", "judges", multiple=True, help=f"{CARDS_HELP} Default: user, profile_aware and third_party. "
              "On a finished run folder, another card makes only that judge's calls.")  # fmt: skip
@model_options(user="The simulated user's model (it is also the user-judge).", judge="--model")
@click.option("--judge-sees", type=click.Choice(["replayed", "all"]), help="Override what the cards' judges see: the "
              "replayed turns, or the whole conversation (the cards' default).")  # fmt: skip
@click.option("--max-supporter-turns", default=4, show_default=True, type=click.IntRange(0, None),
              help="Replay each conversation up to this many supporter turns (0: all). "
              "ESConv dialogs have ~11 supporter turns; every one costs two model calls "
              "(only when a judge of the form user is asked for).")  # fmt: skip
@run_dir_opt("runs/validate-HASH")
@concurrency_opt
@format_opt
@progress_opt
@set_option("user.temperature=0")
def validate(esconv: tuple[Path, ...], limit: int | None, sample: int | None, seed: int, user_model: str,
             judges: tuple[str, ...], judge_model: str | None, scoring: str | None, judge_sees: str | None,
             base_url: str | None, api_key_env: str | None, max_supporter_turns: int, run_dir: Path | None,
             concurrency: int, fmt: str, no_progress: bool, sets: tuple[str, ...]) -> None:  # fmt: skip
    """How well judges agree with real help-seekers: replay real ESConv conversations through the simulated
    user, rate them by judge cards, and compare with the seekers' own survey (Spearman rho, AUROC failed vs
    not, bootstrap 95% intervals), beside baselines that need no model. Resumes in the same run folder.
    --set changes any of these options by name (limit, sample, seed, judges, max_supporter_turns,
    concurrency...) or a setting of the user's or the judges' model: user.max_tokens, judge.temperature."""
    user = user_spec(user_model, base_url, api_key_env)
    opts = ValidateOptions(esconv=list(esconv), limit=limit, sample=sample, seed=seed, user=user,
                           judge=judge_spec(judge_model, base_url, api_key_env) or user,
                           judges=list(judges) or list(DEFAULT_JUDGES), scoring=scoring, judge_sees=judge_sees,
                           max_supporter_turns=max_supporter_turns, concurrency=concurrency)  # fmt: skip
    run_scorers("validate", opts, ValidatePlan.of, sets, "user.temperature=0", run_dir, fmt=fmt,
                progress=not no_progress, seed=seed)  # fmt: skip


COMMANDS = [report, validate]
