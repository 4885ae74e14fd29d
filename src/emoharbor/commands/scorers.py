"""What the commands that score replies (``emoharbor sensitivity``, ``emoharbor seekers``) share: the options
of their models and run folder, the simulated user's and the judges' models from them, and the start of the
run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ConfigError
from ..models.spec import ModelSpec
from .core import model_spec

F = TypeVar("F", bound=Callable[..., Any])


def scorer_options(kind: str, user_option: str) -> Callable[[F], F]:
    """``--judge-model`` (its default: ``user_option``'s model), ``--scoring``, ``--base-url``, ``--api-key-env``,
    ``--concurrency``, ``--run-dir`` (default ``runs/KIND-HASH``) and ``--format``."""
    options = [
        click.option("--judge-model", help=f"The model of the judge cards that name none (default: {user_option})."),
        click.option("--scoring", type=click.Choice(["argmax", "expected"]), help="Override the cards' scoring."),
        click.option("--base-url", help="OpenAI-compatible base URL for models that are not local: or scripted."),
        click.option("--api-key-env", help="Environment variable holding the API key for --base-url."),
        click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256)),
        click.option("--run-dir", type=click.Path(path_type=Path), help=f"Run folder (default: runs/{kind}-HASH)."),
        click.option(
            "--format", "fmt", type=click.Choice(["text", "md", "json", "csv"]), default="text", show_default=True
        ),
    ]

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def scorer_models(user_option: str, user_model: str, judge_model: str | None, base_url: str | None,
                  api_key_env: str | None) -> tuple[ModelSpec | None, ModelSpec]:  # fmt: skip
    """The simulated user's model (None for ``none``: the judges alone) and the judges' (the user's unless
    ``--judge-model`` is given)."""
    user = None if user_model == "none" else model_spec(ModelSpec, user_option, user_model, base_url, api_key_env)
    judge = model_spec(ModelSpec, "--judge-model", judge_model, base_url, api_key_env) if judge_model else user
    if judge is None:
        raise ConfigError(f"{user_option} none: give --judge-model for the judges")
    return user, judge


def judge_cards(judges: tuple[str, ...], default: list[str]) -> list[str]:
    """The ``--judge`` cards: ``default`` where none is given, no card for ``none`` (the simulated user alone;
    each suite's options refuse a run left with no scorer)."""
    return [] if judges == ("none",) else list(judges) or default


def run_scorers(kind: str, plan: Any, resolved: dict[str, Any], run_dir: Path | None, *, fmt: str, progress: bool,
                seed: int) -> None:  # fmt: skip
    """Run ``plan`` of ``kind`` in ``run_dir`` (default: ``runs/KIND-HASH``, the hash of the ``resolved`` options)."""
    from .. import kinds
    from ..store.record import hash_config
    from .runs import run_kind

    folder = run_dir or Path("runs") / f"{kind}-{hash_config(resolved)[:8]}"
    run_kind(kinds.of(kind), plan, folder, fmt=fmt, progress=progress, seed=seed)
