"""``emoharbor heart generate|import-rated|score-replies|judge|ratings|agreement|strategies|strategy-check``: the HEART
by stage, and a check of the strategy labeller against ESConv's annotators. Every stage takes ``--set
KEY=VALUE`` (``commands.options``); on a run folder only the settings that change no stored output."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click

from .. import kinds, userfiles
from ..data.esconv import load_esconv
from ..data.selection import check_selection
from ..errors import ConfigError, DataError
from ..heart.analysis import render, reports
from ..heart.config import HeartConfig, load_heart_config
from ..heart.plan import HeartPlan
from ..heart.presets import GENERIC, PRESETS
from ..heart.rated import competitors_in
from ..heart.stages import pipeline, reply_scores, strategy_check
from ..heart.stages.strategies import label_patterns, load_strategy_file
from ..models.pool import GetModel, ModelPool
from ..models.spec import ModelSpec
from ..overrides import parse_sets, validated, with_sets
from ..preflight import check_models, check_reach, is_new_run
from ..store.record import SETTINGS
from ..store.run_store import RunStore, call_sink
from .options import model_options, progress_opt, set_option, stacked
from .paths import OUT_FILE, write_text
from .specs import judge_spec, model_spec

T = TypeVar("T")


def _pooled(store: RunStore, fn: Callable[[GetModel], Awaitable[T]]) -> T:
    """``fn`` run with the models of a pool whose calls ``store`` records."""

    async def run() -> T:
        async with ModelPool(cache_path=True, sink=call_sink(store)) as pool:
            return await fn(pool.get)

    return asyncio.run(run())


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        write_text(out, text)
        click.echo(f"wrote {out}", err=True)


def _table_with_csv(fmt: str, table: str | None) -> None:
    """Checked before a run is read: --table picks a table of --format csv and nothing else."""
    if table is not None and fmt != "csv":
        raise ConfigError(f"--table {table} picks one table of --format csv; give --format csv, or leave --table out")


def _show(data: dict[str, Any], fmt: str, report: str, table: str | None, md: Callable[[dict[str, Any]], str],
          out: Path | None) -> None:  # fmt: skip
    text = render.to_json(data) if fmt == "json" else render.to_csv(data, report, table) if fmt == "csv" else md(data)
    _emit(text, out)


def _summary(stage: str, summary: dict[str, Any], folder: Path) -> None:
    click.echo(f"{render.stage_text(stage, summary)}; run folder: {folder}")


EXAMPLE = "concurrency=4"
# what --set may change on a run folder (the rest is fixed when `heart generate` starts the run): the settings
# that change no output, and the reports' own
ON_A_RUN = sorted(SETTINGS | {"bootstrap", "bt_prior"})


@contextmanager
def _opened(run_dir: Path, sets: tuple[str, ...]) -> Iterator[tuple[RunStore, HeartPlan]]:
    """The run of ``run_dir`` and its plan, its config changed by ``--set`` for this command only: only ``ON_A_RUN``
    settings (at any depth: judges.0.timeout_s), which change no stored output (the cards stay the plan's); the
    store is closed after."""
    overrides = parse_sets(sets, EXAMPLE)
    for key in overrides:
        if not set(key.split(".")) & set(ON_A_RUN):
            raise ConfigError(
                f"--set {key}: a HEART run keeps the settings it was started with (heart generate CONFIG --set ... "
                f"changes them for a new run); on a run folder only these can change: {', '.join(ON_A_RUN)}"
            )
    store, plan = pipeline.stored_run(run_dir)
    try:
        yield store, replace(plan, cfg=with_sets(plan.cfg, overrides, f"{run_dir} (stored config)"))
    finally:
        store.close()


def _generate(cfg: HeartConfig, base: Path, where: str, run_dir: Path | None, progress: bool) -> tuple[
        dict[str, Any], Path]:  # fmt: skip
    """A new HEART run, or one to resume: its plan (every file read once), its kind's checks (the models
    reached for a new folder), its first stage."""
    plan = HeartPlan.of(cfg, base, where)
    folder = run_dir or Path("runs") / f"{cfg.name}-{plan.hash[:8]}"
    kinds.of(pipeline.KIND).check(plan, new=is_new_run(folder))
    return asyncio.run(pipeline.generate_run(folder, plan, progress=progress)), folder


run_arg = click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False))
set_opt = set_option(EXAMPLE)


def run_opt(default: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    return click.option(
        "--run", "run_dir", type=click.Path(path_type=Path, file_okay=False), help=f"run folder (default: {default})"
    )


out_opt = click.option("--out", type=OUT_FILE, default=None, help="write to this file instead of stdout")
report_opts = stacked(  # --format, --table and --out of a report
    click.option("--format", "fmt", type=click.Choice(["md", "json", "csv"]), default="md", show_default=True),
    click.option("--table", default=None, help="with --format csv: which table (default: the first)"),
    out_opt,
)


@click.group("heart")
def heart() -> None:
    """HEART: human and model replies to the same histories, compared pairwise by a judge ensemble."""


@heart.command("generate")
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@run_opt("runs/NAME-HASH")
@progress_opt
@set_opt
def generate_cmd(config: Path, run_dir: Path | None, no_progress: bool, sets: tuple[str, ...]) -> None:
    """Load the histories of CONFIG and write every competitor's candidate reply (resumable)."""
    cfg, base = load_heart_config(config)
    cfg = with_sets(cfg, parse_sets(sets, EXAMPLE), str(config))
    summary, folder = _generate(cfg, base, str(config), run_dir, not no_progress)
    for name, skipped in summary["items_skipped"].items():  # broken lines and the like: said, not only stored
        click.echo(
            f"history source {name}: skipped {sum(skipped.values())} ({render.counts_text(skipped)}; the notes are "
            "in `emoharbor heart ratings`, under Counts)",
            err=True,
        )
    _summary("import" if cfg.rated_source() else "generate", summary, folder)


SCALE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|to|,)\s*(-?\d+(?:\.\d+)?)\s*")


def _scale(text: str) -> list[float]:
    m = SCALE.fullmatch(text)
    if m is None:
        raise ConfigError(f"--scale {text}: give the lowest and highest rating as LOW-HIGH, e.g. --scale 1-5")
    return [float(m.group(1)), float(m.group(2))]


def rated_config(file: Path, preset: str, options: dict[str, Any], config_file: Path | None) -> dict[str, Any]:
    """The HEART config of an import: ``--config``'s settings (no histories), the file as the one source."""
    raw = userfiles.read_settings(config_file, "config file") if config_file else {}
    if "histories" in raw:
        raise ConfigError(f"{config_file}: field 'histories': the file of rated replies is the run's histories: "
                          "leave 'histories' out of --config")  # fmt: skip
    source: dict[str, Any] = {"path": str(file.resolve()), "format": "rated", "preset": preset,
                              **{k: v for k, v in options.items() if v is not None}}  # fmt: skip
    if preset == GENERIC:
        if "scale" not in source:
            raise ConfigError("--scale LOW-HIGH: a generic file of rated replies needs the scale of its ratings")
        source["competitors"] = competitors_in(file)
    # the default judge written out, so that --set judges.0.KEY=VALUE has a judge to change
    return {"name": "rated" if preset == GENERIC else preset, "judges": [{}], **raw, "histories": [source]}


@heart.command("import-rated")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--preset", type=click.Choice([GENERIC, *PRESETS]), default=GENERIC, show_default=True,
              help="the file's columns: generic (docs/heart.md), or a published set's")  # fmt: skip
@click.option("--scale", "scale_text", help="generic: the lowest and highest rating, LOW-HIGH (e.g. 1-5)")
@click.option("--dimension", help="what the ratings rate where the file does not say: overall (default) or a "
                                  "HEART dimension")  # fmt: skip
@click.option("--pairing", type=click.Choice(["same_rater", "across_raters"]),
              help="pairs from two replies rated by the same person (generic's default), or each reply's rating "
                   "by a person of its own (the welivita preset's)")  # fmt: skip
@click.option("--limit", type=click.IntRange(1), help="the first N histories of the file")
@click.option("--sample", type=click.IntRange(1), help="or N histories drawn at random with --seed")
@click.option("--seed", default=0, show_default=True, help="seed of --sample")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="a HEART config without histories: the judges and the other settings (default: one judge, "
                   "the embedded model)")  # fmt: skip
@run_opt("runs/NAME-HASH")
@progress_opt
@set_opt
def import_rated_cmd(file: Path, preset: str, scale_text: str | None, dimension: str | None, pairing: str | None,
                     limit: int | None, sample: int | None, seed: int, config_file: Path | None,
                     run_dir: Path | None, no_progress: bool, sets: tuple[str, ...]) -> None:  # fmt: skip
    """Import FILE, replies rated by people, as a HEART run: its replies are the candidates (no model writes
    any) and the pairs its ratings imply are the human judgments; then `heart judge`, `agreement` and
    `ratings` as on any run (resumable)."""
    check_selection(limit, sample, "histories")
    options = {"scale": _scale(scale_text) if scale_text else None, "dimension": dimension, "pairing": pairing,
               "first": limit, "sample": sample, "seed": seed}  # fmt: skip
    where = str(config_file) if config_file else "heart import-rated"
    cfg = validated(HeartConfig, rated_config(file, preset, options, config_file), parse_sets(sets, EXAMPLE), where)
    src = cfg.rated_source()
    if src is None:
        raise ConfigError(f"--set: the run's one history source must stay the file {file}")
    base = config_file.resolve().parent if config_file else Path.cwd()
    summary, folder = _generate(cfg, base, where, run_dir, not no_progress)  # the file's errors name it, its row
    _summary("import", summary, folder)


CARD_HELP = "a judge card of one reply: third_party_reply, or a YAML card of the form reply (repeatable)"


@heart.command("score-replies")
@run_arg
@click.option("--judge", "cards", multiple=True, required=True, help=CARD_HELP)
@model_options(judge="the run's first judge's")
@progress_opt
def score_replies_cmd(run_dir: Path, cards: tuple[str, ...], judge_model: str | None, base_url: str | None,
                      api_key_env: str | None, scoring: str | None, no_progress: bool) -> None:  # fmt: skip
    """Rate every usable reply of RUN on its own with cards of one reply (resumable); `heart agreement` sets
    their scores beside the people's ratings and pairs."""
    spec = judge_spec(judge_model, base_url, api_key_env)
    if spec is not None:
        check_models([spec])
    n = asyncio.run(reply_scores.score_replies(run_dir, list(cards), spec, scoring=scoring, progress=not no_progress))
    click.echo(f"scored {n} replies with {', '.join(cards)}; run folder: {run_dir}")


@heart.command("judge")
@run_arg
@progress_opt
@set_opt
def judge_cmd(run_dir: Path, no_progress: bool, sets: tuple[str, ...]) -> None:
    """Judge every pair of candidates of RUN in both orders, by every judge (resumable)."""
    with _opened(run_dir, sets) as (store, plan):
        summary = _pooled(store, lambda get: pipeline.judge(store, plan, get, progress=not no_progress))
    _summary("judge", summary, run_dir)


@heart.command("ratings")
@run_arg
@report_opts
@click.option("--bootstrap", type=click.IntRange(0, 10000), default=None, help="resamples (default: the config's)")
@set_opt
def ratings_cmd(
    run_dir: Path, fmt: str, table: str | None, out: Path | None, bootstrap: int | None, sets: tuple[str, ...]
) -> None:
    """Bradley-Terry ratings, win rates against the human, order consistency."""
    _table_with_csv(fmt, table)
    with _opened(run_dir, sets) as (store, plan):
        data = reports.ratings_report(store, plan.cfg, bootstrap=bootstrap)
    _show(data, fmt, "ratings", table, render.ratings_md, out)


@heart.command("agreement")
@run_arg
@click.option("--human", "human_files", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="CSV or JSONL of human pairwise judgments to import first (repeatable); fields: history_id, "
              "competitor_a, competitor_b, rater, dimension, winner (a name or 'tie'), optional strength, rationale, "
              "first_shown")  # fmt: skip
@report_opts
@set_opt
def agreement_cmd(
    run_dir: Path, human_files: tuple[Path, ...], fmt: str, table: str | None, out: Path | None, sets: tuple[str, ...]
) -> None:
    """Judge-human and human-human agreement, kappa, alpha, judge biases, rationale focus."""
    _table_with_csv(fmt, table)
    with _opened(run_dir, sets) as (store, plan):
        for path in human_files:
            rep = reports.import_human_judgments(store, plan.cfg, path)
            skipped = render.counts_text(rep.skipped)
            if rep.rows and not rep.imported:
                raise DataError(f"{path}: none of its {rep.rows} rows could be imported (skipped: {skipped})")
            click.echo(f"imported {rep.imported} of {rep.rows} rows from {path}; skipped {skipped}", err=True)
        data = reports.agreement_report(store, plan.cfg, plan.base)
    _show(data, fmt, "agreement", table, render.agreement_md, out)


@heart.command("strategies")
@run_arg
@click.option(
    "--label/--no-label", default=True, show_default=True, help="label the replies not labelled yet before reporting"
)
@progress_opt
@report_opts
@set_opt
def strategies_cmd(
    run_dir: Path, label: bool, no_progress: bool, fmt: str, table: str | None, out: Path | None, sets: tuple[str, ...]
) -> None:
    """Sentence-level support-strategy labels of every candidate reply, and each competitor's profile."""
    _table_with_csv(fmt, table)
    with _opened(run_dir, sets) as (store, plan):
        if label:
            summary = _pooled(store, lambda get: pipeline.label(store, plan, get, progress=not no_progress))
            click.echo(render.stage_text("strategies", summary), err=True)
        data = reports.strategies_report(store, plan.cfg, plan.base)
        data["label_patterns"] = label_patterns([d for _, d in store.items("strategy")], data["strategies"])
    _show(data, fmt, "strategies", table, _strategies_md, out)


def _strategies_md(data: dict[str, Any]) -> str:
    return render.strategies_md(data) + strategy_check.patterns_md(data["label_patterns"])


@heart.command("strategy-check")
@click.argument("esconv_file", metavar="ESCONV", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", required=True, help="the labeller: local:NAME, scripted, or a model served at --base-url")
@click.option("--base-url", help="OpenAI-compatible base URL of --model")
@click.option("--api-key-env", help="environment variable holding the API key for --base-url")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--strategy-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="strategies and their esconv: table (default: the built-in one)")  # fmt: skip
@click.option("--limit", type=click.IntRange(1), default=None,
              help="a seeded sample of N messages (a larger N adds to a smaller)")  # fmt: skip
@click.option("--seed", default=0, show_default=True, help="seed of the sample, the model calls and the bootstrap")
@run_opt("runs/strategy-check-HASH")
@progress_opt
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@out_opt
@set_option("labeller.max_tokens=512")
def strategy_check_cmd(esconv_file: Path, model: str, base_url: str | None, api_key_env: str | None, temperature: float,
                       strategy_file: Path | None, limit: int | None, seed: int, run_dir: Path | None,
                       no_progress: bool, fmt: str, out: Path | None, sets: tuple[str, ...]) -> None:  # fmt: skip
    """Label ESConv's annotated supporter messages with the HEART labeller and compare it with the
    annotators: accuracy, kappa, the majority-class baseline, confusion (resumable). --set changes a
    setting of the check: labeller (the model, e.g. labeller.max_tokens), max_sentences, retries,
    concurrency, bootstrap."""
    spec = model_spec(ModelSpec, "--model", model, base_url, api_key_env, temperature=temperature)
    settings = with_sets(strategy_check.CheckSettings(labeller=spec, seed=seed), parse_sets(sets), "strategy-check")
    spec = settings.labeller
    check_models([spec])
    table = load_strategy_file(strategy_file)
    items, counts = strategy_check.esconv_items(load_esconv(esconv_file), table)
    config = strategy_check.check_config(esconv_file, table, settings)
    folder = run_dir or strategy_check.default_folder(config)
    if is_new_run(folder):
        check_reach([spec])
    store = strategy_check.open_check(folder, config)
    try:
        chosen = strategy_check.select(items, limit, seed)
        summary = _pooled(
            store, lambda get: strategy_check.label_items(store, chosen, table, settings, get, progress=not no_progress)
        )
        click.echo(f"{render.stage_text('strategy-check', summary)}; run folder: {folder}", err=True)
        data = strategy_check.check_report(store, esconv_file, chosen, counts, table, settings)
    finally:
        store.close()
    _emit(render.to_json(data) if fmt == "json" else strategy_check.check_md(data), out)


COMMANDS = [heart]
