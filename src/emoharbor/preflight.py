"""The checks every kind of run makes before it writes anything, whatever the kind: a run folder holds a run
or can be one, every model can be built (its files, packages and key are there) and its endpoints accept
connections. A kind's own checks (its files, its size) are its plan's and its ``check``'s; its models' are
``check_run_models``. A command that finds a problem here has made no run folder and drawn no progress bar."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from . import userfiles
from .errors import ConfigError
from .models.pool import check_model_spec, check_reachable
from .models.spec import ModelSpec
from .store.run_store import DB_NAME, RunStore


def is_new_run(folder: Path) -> bool:
    """Whether ``folder`` (which must be able to be a folder) holds no run yet: then the models are checked
    before it is made. A folder that holds a run is resumed or reprinted; a finished one reaches no model."""
    userfiles.output_folder(folder, "run folder")
    if (folder / DB_NAME).is_dir():
        raise ConfigError(f"run folder {folder}: {folder / DB_NAME} is a folder, not a run database")
    if not (folder / DB_NAME).exists():
        return True
    RunStore.open_existing(folder).close()  # one that cannot be read is refused now
    return False


def _unique(specs: Iterable[ModelSpec]) -> list[ModelSpec]:
    seen: dict[str, ModelSpec] = {}
    for s in specs:
        seen.setdefault(s.identity, s)
    return list(seen.values())


def check_models(specs: Iterable[ModelSpec]) -> None:
    """Every model can be built; nothing is started or reached."""
    for spec in _unique(specs):
        check_model_spec(spec)


def check_named_models(models: Iterable[tuple[str, ModelSpec]], where: str = "") -> None:
    """``check_models`` for models named by the field that gives them (``roles.judge``): an error names the
    file (``where``) and that field; without ``where``, the field is a command-line option (``--user``). A
    model given in several fields is checked once."""
    first: dict[str, tuple[str, ModelSpec]] = {}
    for field, spec in models:
        first.setdefault(spec.identity, (field, spec))
    for field, spec in first.values():
        try:
            check_model_spec(spec)
        except ConfigError as e:
            raise ConfigError(f"{where}: field '{field}': {e}" if where else f"{field}: {e}") from None


def check_reach(specs: Iterable[ModelSpec]) -> None:
    """Every endpoint-served model has an endpoint that accepts connections."""
    groups = {tuple(sorted(s.endpoint_urls())) for s in _unique(specs) if s.backend == "openai"}

    async def reach_all() -> None:
        for urls in sorted(groups):
            await check_reachable(list(urls))

    if groups:
        asyncio.run(reach_all())


def check_run_models(named: Iterable[tuple[str, ModelSpec]], *, new: bool, where: str = "",
                     reached: Iterable[ModelSpec] | None = None) -> None:  # fmt: skip
    """The models' part of every kind's ``check`` (``kinds.RunKind.check``): each model the run names
    (``named``, by the field or option that gives it; ``where``: the config's file) is built, the run folder
    new or not; for a new run (``new``) the endpoints accept connections: those of ``reached`` (the models the
    command itself calls, where the run's later commands call the others) or of all of them."""
    named = list(named)
    check_named_models(named, where)
    if new:
        check_reach([spec for _, spec in named] if reached is None else reached)


def scorer_models(user: ModelSpec | None, judges: Iterable[tuple[str, ModelSpec]]) -> list[tuple[str, ModelSpec]]:
    """The models of a run of validate, sensitivity or seekers by the option that gives each: the simulated
    user's (None: no user) and each judge's (by its card's name)."""
    return [*([("--model", user)] if user else []), *((f"--judge {name}", spec) for name, spec in judges)]
