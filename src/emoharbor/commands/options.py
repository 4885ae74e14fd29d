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


def model_options(*, user: str | None = None, old_user: str | None = None,
                  judge: str | None = None) -> Callable[[F], F]:  # fmt: skip
    """The options of the models a command scores with, named alike on every command that scores (``validate``,
    ``sensitivity``, ``seekers``, ``realism``, ``reward``, ``assess``, ``heart score-replies``): ``--model`` (the
    simulated user's) when ``user`` (its help) is given, an older spelling ``old_user`` (``--user-model``,
    ``--user``) still read but hidden; ``--judge-model`` (the cards' that name none) and ``--scoring`` when
    ``judge`` (what the judges' model is by default) is given; ``--base-url`` and ``--api-key-env`` always. They
    reach the command as ``user_model``, ``judge_model``, ``scoring``, ``base_url`` and ``api_key_env``; the
    model specs are made by ``core.user_spec``, ``core.judge_spec`` and ``core.scorer_specs``."""
    options = []
    if user is not None:
        if old_user is not None:  # before --model: an explicit value wins over --model's default
            options.append(click.option(old_user, "user_model", hidden=True))
        options.append(click.option("--model", "user_model", default="local:qwen1.5b", show_default=True, help=user))
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
