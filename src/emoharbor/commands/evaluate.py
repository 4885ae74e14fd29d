"""`emoharbor run`, `emoharbor assess`, `emoharbor leaderboard`, `emoharbor demo`.

The library is imported inside the commands, not here: `emoharbor run --help` loads click and this file."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .options import CARDS_HELP, format_opt, model_options, progress_opt, run_dir_opt, set_option

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..store.run_store import RunStore


def board(folder: Path, fmt: str, judge: str = "user", scoring: str = "argmax", baseline: str | None = None) -> tuple[
        str, Any]:  # fmt: skip
    """A run's leaderboard (a validate run's: its validation table), from its kind's ``board``: rendered, and
    its data."""
    from .. import kinds

    store, kind = kinds.open_run(folder, "board")
    try:
        return kind.board(store, fmt, judge=judge, scoring=scoring, baseline=baseline)
    finally:
        store.close()


def print_conversation(store: RunStore) -> None:
    """The first conversation of a run, with the user's inner state after each supporter message."""
    from ..measurements import health_lines
    from ..simulate.conversation import Conversation
    from ..store.record import user_model

    first = next(store.items("conversation"), None)
    if first is None:
        return
    conv = Conversation.model_validate(first[1])
    click.echo(f"# A conversation: profile {conv.profile_id}, supporter {conv.supporter}")
    for t in conv.turns:
        click.echo(f"{'USER' if t.speaker == 'user' else 'SUPPORTER'}: {t.text}")
        state = (t.inner or {}).get("state")
        if state:
            click.echo(f"    [inner: intensity {state['intensity']}, trust {state['trust']}; {state['thought']}]")
        for name, detail in (t.inner or {}).get("events", []):
            click.echo(f"    [event {name}: {detail}]")
    click.echo(f"# ended: {conv.termination} after {conv.wall_s:.0f} s")
    counts = store.event_counts()
    if counts:
        click.echo("# events in the whole run: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    cfg = store.config()
    # what is measured of this simulated user, with these prompts and settings
    for line in health_lines(user_model(cfg), cfg.get("prompt_versions"), cfg.get("user_agent")):
        click.echo(f"# {line}")
    click.echo("")


def _run(cfg: RunConfig, where: str, run_dir: Path | None, quiet: bool, fmt: str, show_one: bool = False) -> None:
    from .. import kinds
    from ..evaluate.plan import Plan
    from .runs import run_kind

    plan = Plan.of(cfg, where)  # every file the config names read once, here
    run_kind(kinds.of("emoharbor"), plan, run_dir or Path("runs") / f"{plan.cfg.name}-{plan.hash[:8]}", fmt=fmt,
             progress=not quiet, show=print_conversation if show_one else None)  # fmt: skip


def _attributes(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    from ..report.breakdowns import attribute_names

    try:
        return attribute_names(value) if value else []
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def breakdown_of(run_dir: Path, judge: str, attributes: list[str], scoring: str) -> dict[str, Any]:
    """The breakdowns of a run folder by profile ``attributes``; a run without profiles or without that judge
    is an error that says so."""
    from .. import kinds
    from ..errors import EmoharborError
    from ..report.breakdowns import breakdown
    from ..report.runs import load_run

    view = load_run(run_dir)
    if not view.profiles:
        why = "; ".join(view.notes) or f"it holds {kinds.title(view.kind)}, without profiles"
        raise EmoharborError(f"{run_dir}: no breakdowns by profile attribute: {why}")
    if judge not in view.judges:
        raise EmoharborError(f"--judge {judge}: no such judge in {run_dir}; its judges: {', '.join(view.judges)}")
    return breakdown(view, judge, attributes, scoring=scoring)


@click.command("run")
@click.argument("config", type=click.Path(path_type=Path))
@run_dir_opt("runs/NAME-HASH")
@progress_opt
@format_opt
@set_option("max_turns=4")
def run(config: Path, run_dir: Path | None, no_progress: bool, fmt: str, sets: tuple[str, ...]) -> None:
    """Simulate profiles x supporters x repeats, rate every conversation, print the leaderboard.

    Started again with the same config and folder, it resumes where it stopped.
    """
    from ..config import load_config
    from ..overrides import parse_sets, with_sets

    _run(with_sets(load_config(config), parse_sets(sets), str(config)), str(config), run_dir, no_progress, fmt)


@click.command("demo")
@run_dir_opt("runs/demo-HASH")
@click.option("--quiet", is_flag=True)
def demo(run_dir: Path | None, quiet: bool) -> None:
    """A small real benchmark on the embedded model: a plain and a personalisation-aware supporter."""
    from ..config import load_config

    with resources.as_file(resources.files("emoharbor").joinpath("demo.yaml")) as path:
        cfg = load_config(path)
    _run(cfg, "the demo", run_dir, quiet, "text", show_one=True)


@click.command("assess")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--judge", "cards", multiple=True, required=True, help=CARDS_HELP)
@model_options(judge="the run's judge model")
@click.option("--quiet", is_flag=True)
def assess(run_dir: Path, cards: tuple[str, ...], judge_model: str | None, base_url: str | None,
           api_key_env: str | None, scoring: str | None, quiet: bool) -> None:  # fmt: skip
    """Rate a finished run's conversations with more judge cards: only the judges' calls are made (an
    EmoHarbor run's conversations, or a validate run's replays)."""
    from .. import kinds
    from ..preflight import check_named_models
    from .specs import judge_spec

    spec = judge_spec(judge_model, base_url, api_key_env)
    if spec is not None:
        check_named_models([("--judge-model", spec)])
    store, kind = kinds.open_run(run_dir, "rejudge")
    store.close()
    n = asyncio.run(kind.rejudge(run_dir, list(cards), spec, scoring=scoring, progress=not quiet))
    click.echo(f"made {n} assessments with {', '.join(cards)} in {run_dir}")


@click.command("leaderboard")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--judge", default="user", show_default=True, help="Whose scores: user, or CARD:MODEL.")
@click.option("--scoring", type=click.Choice(["argmax", "expected"]), default="argmax", show_default=True,
              help="The integers the judge wrote, or its probability-weighted scores "
              "(cards with scoring: expected).")  # fmt: skip
@click.option("--baseline", help="The supporter the others are compared with, pair by pair (default: the first).")
@click.option("--by", "by", multiple=True, metavar="ATTRIBUTE", callback=_attributes,
              help="Instead of the leaderboard, each supporter's personal-dimension mean by this profile attribute, "
              "with 95% intervals (repeatable; all: every one; a name that is not one lists them).")  # fmt: skip
@format_opt
def leaderboard_cmd(run_dir: Path, judge: str, scoring: str, baseline: str | None, by: list[str], fmt: str) -> None:
    """Print a run's leaderboard (a validate run's: its validation table), with each supporter minus the
    baseline supporter on the same profiles and repeats; with --by, its breakdowns by profile attribute."""
    from ..report.breakdowns import render_breakdown

    if by:
        click.echo(render_breakdown(breakdown_of(run_dir, judge, by, scoring), fmt).rstrip("\n"))
        return
    click.echo(board(run_dir, fmt, judge, scoring, baseline)[0])


COMMANDS = [run, demo, assess, leaderboard_cmd]
