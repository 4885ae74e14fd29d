"""The options shared by several commands: ``--set KEY=VALUE`` (see ``emoharbor.overrides`` for what it takes),
``--quiet``, ``--format``, ``--run-dir``, ``--concurrency``, and the options of the models a command scores with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def stacked(*options: Callable[[F], F]) -> Callable[[F], F]:
    """The ``options`` as one decorator, listed in --help in the order given."""

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def set_option(example: str) -> Callable[[F], F]:
    """The ``--set`` option (its values reach the command as ``sets``); ``example``: ``concurrency=4``."""
    return click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help=f"change one setting, e.g. --set {example}; KEY dotted for a nested setting, VALUE as YAML (repeatable)",
    )


# ``--quiet``: the command's work shows no progress bar (it reaches the command as ``no_progress``)
progress_opt = click.option("--quiet", "no_progress", is_flag=True, help="No progress bar.")
format_opt = click.option(
    "--format", "fmt", type=click.Choice(["text", "md", "json", "csv"]), default="text", show_default=True
)
concurrency_opt = click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256))


CARDS_HELP = ("A judge card: a built-in name (user, user_overall, profile_aware, third_party, third_party_overall) or "
              "a YAML file; repeat for several.")  # fmt: skip


def run_dir_opt(default: str) -> Callable[[F], F]:
    return click.option("--run-dir", type=click.Path(path_type=Path), help=f"Run folder (default: {default}).")


OLDER, TYPED = "user_model:older", "user_model:typed"  # what ctx.meta keeps of it


def _older_spelling(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[OLDER] = (param.opts[0], value)


def _user_model(ctx: click.Context, param: click.Parameter, value: str) -> str:
    older = ctx.meta.get(OLDER)  # --model is read after an older spelling typed unless it was typed itself
    if older is not None and ctx.get_parameter_source("user_model") is click.core.ParameterSource.DEFAULT:
        ctx.meta[TYPED], value = older
    return value


def user_model_option(help: str, old: str | None = None) -> Callable[[F], F]:
    """``--model``, the simulated user's model on every command that has one, reaching the command as
    ``user_model``; ``old``, an older spelling (``--user-model``, ``--user``), still read but hidden (an
    explicit --model wins). An error names the one typed: ``user_option``."""
    model = click.option("--model", "user_model", default="local:qwen1.5b", show_default=True, help=help,
                         callback=_user_model)  # fmt: skip
    if old is None:
        return model
    return stacked(click.option(old, "older_user_model", hidden=True, expose_value=False, callback=_older_spelling),
                   model)  # fmt: skip


def user_option() -> str:
    """The option the simulated user's model was given by on this command line: --model, or the older spelling
    typed (errors name it)."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(TYPED, "--model")) if ctx is not None else "--model"


def model_options(*, user: str | None = None, old_user: str | None = None,
                  judge: str | None = None) -> Callable[[F], F]:  # fmt: skip
    """The options of the models a command scores with, named alike on every command that scores (``validate``,
    ``sensitivity``, ``seekers``, ``realism``, ``reward``, ``assess``, ``heart score-replies``): ``--model`` (the
    simulated user's, ``user_model_option``) when ``user`` (its help) is given, with an older spelling
    ``old_user``; ``--judge-model`` (the cards' that name none) and ``--scoring`` when ``judge`` (what the
    judges' model is by default) is given; ``--base-url`` and ``--api-key-env`` always. They reach the command
    as ``user_model``, ``judge_model``, ``scoring``, ``base_url`` and ``api_key_env``; the model specs are made
    by ``specs.user_spec``, ``specs.judge_spec`` and ``specs.scorer_specs``."""
    options = []
    if user is not None:
        options.append(user_model_option(user, old_user))
    if judge is not None:
        options += [
            click.option("--judge-model", help=f"The model of the judge cards that name none (default: {judge})."),
            click.option("--scoring", type=click.Choice(["argmax", "expected"]), help="Override the cards' scoring: "
                         "the integer written, or also the probability-weighted score."),
        ]  # fmt: skip
    options += [
        click.option("--base-url", help="OpenAI-compatible base URL for the models that are not local: or scripted."),
        click.option("--api-key-env", help="Environment variable holding the API key for --base-url."),
    ]
    return stacked(*options)
