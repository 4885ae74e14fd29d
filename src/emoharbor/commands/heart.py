"""``emoharbor heart generate|judge|ratings|agreement|strategies``: the HEART comparison, stage by stage."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..config import ModelSpec
from ..heart import pipeline, render, reports
from ..heart.config import load_heart_config
from ..heart.running import GetModel
from ..models.base import ChatModel
from ..models.pool import ModelPool, check_model_spec
from ..store.run_store import RunStore, call_sink

T = TypeVar("T")
FORMATS = click.Choice(["md", "json", "csv"])


async def _with_pool(store: RunStore, fn: Callable[[GetModel], Awaitable[T]]) -> T:
    async with ModelPool(cache_path=True, sink=call_sink(store)) as pool:

        async def get(spec: ModelSpec, role: str) -> ChatModel:
            return await pool.get(spec, role)

        return await fn(get)


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)


def _show(
    data: dict[str, Any],
    fmt: str,
    report: str,
    table: str | None,
    md: Callable[[dict[str, Any]], str],
    out: Path | None,
) -> None:
    if fmt == "json":
        _emit(render.to_json(data), out)
    elif fmt == "csv":
        _emit(render.to_csv(data, report, table), out)
    else:
        _emit(md(data), out)


def _summary(title: str, summary: dict[str, Any], folder: Path) -> None:
    click.echo(f"{title}: {json.dumps(summary, sort_keys=True)}")
    click.echo(f"run folder: {folder}")


run_arg = click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False))
progress_opt = click.option("--no-progress", is_flag=True, help="no progress bar")
format_opt = click.option("--format", "fmt", type=FORMATS, default="md", show_default=True)
table_opt = click.option("--table", default=None, help="with --format csv: which table (default: the first)")
out_opt = click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), default=None, help="write to this file instead of stdout"
)


@click.group("heart")
def heart() -> None:
    """HEART: human and model replies to the same histories, compared pairwise by a judge ensemble."""


@heart.command("generate")
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--run",
    "run_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="run folder (default: runs/NAME-HASH)",
)
@progress_opt
def generate_cmd(config: Path, run_dir: Path | None, no_progress: bool) -> None:
    """Load the histories of CONFIG and write every competitor's candidate reply (resumable)."""
    cfg, base = load_heart_config(config)
    for spec in [*cfg.candidates, *cfg.judges]:
        check_model_spec(spec)
    folder = run_dir or Path("runs") / f"{cfg.name}-{cfg.config_hash()[:8]}"
    store = pipeline.open_run(folder, cfg, base)
    try:
        summary = asyncio.run(
            _with_pool(store, lambda get: pipeline.generate(store, cfg, base, get, progress=not no_progress))
        )
    finally:
        store.close()
    _summary("generate", summary, folder)


@heart.command("judge")
@run_arg
@progress_opt
def judge_cmd(run_dir: Path, no_progress: bool) -> None:
    """Judge every pair of candidates of RUN in both orders, by every judge (resumable)."""
    store, cfg, _ = pipeline.read_run(run_dir)
    try:
        summary = asyncio.run(_with_pool(store, lambda get: pipeline.judge(store, cfg, get, progress=not no_progress)))
    finally:
        store.close()
    _summary("judge", summary, run_dir)


@heart.command("ratings")
@run_arg
@format_opt
@table_opt
@out_opt
@click.option("--bootstrap", type=click.IntRange(0, 10000), default=None, help="resamples (default: the config's)")
def ratings_cmd(run_dir: Path, fmt: str, table: str | None, out: Path | None, bootstrap: int | None) -> None:
    """Bradley-Terry ratings, win rates against the human, order consistency."""
    store, cfg, _ = pipeline.read_run(run_dir)
    try:
        data = reports.ratings_report(store, cfg, bootstrap=bootstrap)
    finally:
        store.close()
    _show(data, fmt, "ratings", table, render.ratings_md, out)


@heart.command("agreement")
@run_arg
@click.option(
    "--human",
    "human_files",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="CSV or JSONL of human pairwise judgments to import first (repeatable); fields: history_id, "
    "competitor_a, competitor_b, rater, dimension, winner (a name or 'tie'), optional strength, rationale, first_shown",
)
@format_opt
@table_opt
@out_opt
def agreement_cmd(run_dir: Path, human_files: tuple[Path, ...], fmt: str, table: str | None, out: Path | None) -> None:
    """Judge-human and human-human agreement, kappa, alpha, judge biases, rationale focus."""
    store, cfg, base = pipeline.read_run(run_dir)
    try:
        for path in human_files:
            rep = reports.import_human_judgments(store, cfg, path)
            click.echo(f"imported {rep.imported} of {rep.rows} rows from {path}; skipped {dict(rep.skipped)}", err=True)
        data = reports.agreement_report(store, cfg, base)
    finally:
        store.close()
    _show(data, fmt, "agreement", table, render.agreement_md, out)


@heart.command("strategies")
@run_arg
@click.option(
    "--label/--no-label", default=True, show_default=True, help="label the replies not labelled yet before reporting"
)
@progress_opt
@format_opt
@table_opt
@out_opt
def strategies_cmd(
    run_dir: Path, label: bool, no_progress: bool, fmt: str, table: str | None, out: Path | None
) -> None:
    """Sentence-level support-strategy labels of every candidate reply, and each competitor's profile."""
    store, cfg, base = pipeline.read_run(run_dir)
    try:
        if label:
            summary = asyncio.run(
                _with_pool(store, lambda get: pipeline.label(store, cfg, base, get, progress=not no_progress))
            )
            click.echo(f"strategies: {json.dumps(summary, sort_keys=True)}", err=True)
        data = reports.strategies_report(store, cfg, base)
    finally:
        store.close()
    _show(data, fmt, "strategies", table, render.strategies_md, out)


COMMANDS = [heart]
