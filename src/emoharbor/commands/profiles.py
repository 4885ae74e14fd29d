"""`emoharbor profiles ...`: list, show, validate and summarise help-seeker profiles; draft them from ESConv."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import yaml

from ..data.esconv import EsconvDialog, load_esconv
from ..errors import DataError, EmoharborError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..profiles.esconv_import import draft_profile, enrich_all
from ..profiles.loader import load_profile_file, load_profile_folder, profile_files, resolve_profiles
from ..profiles.schema import Profile
from ..profiles.stats import profile_stats, render_stats
from ..profiles.writer import write_profiles
from .paths import OUT_FILE
from .specs import model_spec

SOURCE_HELP = "profiles to use: builtin, builtin:ID-GLOB, a YAML/JSON file or a folder (repeatable)"


def _specs(sources: tuple[str, ...]) -> list[str]:
    return ["builtin:*" if s == "builtin" else s for s in (sources or ("builtin",))]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@click.group("profiles")
def profiles() -> None:
    """Help-seeker profiles: the built-in bank, your own files, drafts from ESConv."""


@profiles.command("list")
@click.option("--problem", help="only profiles whose problem type contains this text")
@click.option("--risk", type=click.Choice(["none", "low", "elevated", "high"]), help="only this risk level")
@click.option("--source", "sources", multiple=True, help=SOURCE_HELP)
def list_profiles(problem: str | None, risk: str | None, sources: tuple[str, ...]) -> None:
    """One line per profile: id, name, age, problem, emotion/intensity, hidden need, risk."""
    chosen = [
        p
        for p in resolve_profiles(_specs(sources))
        if (problem is None or problem.lower() in p.situation.problem_type.lower())
        and (risk is None or p.risk_level == risk)
    ]
    rows = [["id", "name", "age", "problem", "emotion/intensity", "hidden need", "risk"]]
    for p in chosen:
        e = p.emotional_state
        rows.append([p.id, _cut(p.name, 24), str(p.age), _cut(p.situation.problem_type, 26),
                     _cut(f"{e.emotion}/{e.intensity}", 24), p.needs.hidden_need_type, p.risk_level])  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    click.echo(f"{len(chosen)} profiles")


@profiles.command("show")
@click.argument("profile_id")
@click.option("--source", "sources", multiple=True, help=SOURCE_HELP)
def show(profile_id: str, sources: tuple[str, ...]) -> None:
    """Print one profile as YAML (PROFILE_ID, or builtin:PROFILE_ID as `chat --profile` and configs write it)."""
    profile_id = profile_id.removeprefix("builtin:")
    hits = [p for p in resolve_profiles(_specs(sources)) if p.id == profile_id]
    if not hits:
        raise EmoharborError(f"no profile with id '{profile_id}': see `emoharbor profiles list`")
    click.echo(
        yaml.safe_dump(hits[0].model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=110), nl=False
    )


def _load_path(path: Path) -> tuple[list[Profile], int]:
    if path.is_dir():
        return load_profile_folder(path), len(profile_files(path))
    if path.is_file():
        return load_profile_file(path), 1
    raise DataError(f"{path}: no such file or folder")


@profiles.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Check profile files or folders; print OK with counts, or the first error (exit status 2)."""
    seen: dict[str, Path] = {}
    files = 0
    for path in paths:
        loaded, n = _load_path(path)
        files += n
        for p in loaded:
            if p.id in seen:
                raise DataError(f"{path}: profile id '{p.id}' is also in {seen[p.id]}")
            seen[p.id] = path
    click.echo(f"OK: {len(seen)} profiles in {files} files")


@profiles.command("stats")
@click.argument("sources", nargs=-1)
def stats(sources: tuple[str, ...]) -> None:
    """How the profiles spread over each attribute (default: the built-in bank)."""
    click.echo(render_stats(profile_stats(resolve_profiles(_specs(sources)))))


async def _enrich(
    pairs: list[tuple[Profile, EsconvDialog]], spec: ModelSpec
) -> tuple[list[Profile], list[tuple[str, str]]]:
    async with ModelPool() as pool:
        model = await pool.get(spec, role="profile_enrich")
        return await enrich_all(pairs, model, concurrency=spec.concurrency)


@profiles.command("import-esconv")
@click.argument("esconv_file", type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=OUT_FILE, help="YAML file to write")
@click.option("--limit", type=click.IntRange(min=1), help="only the first N records")
@click.option("--enrich-model", help="a model that infers personality, style and needs from the seeker's turns")
@click.option("--base-url", help="OpenAI-compatible server for --enrich-model")
@click.option("--api-key-env", help="environment variable holding the API key for --enrich-model")
@click.option("--evaluation-only", is_flag=True, help="mark the profiles as kept out of training pairs")
def import_esconv(
    esconv_file: Path, out: Path, limit: int | None, enrich_model: str | None, base_url: str | None,
    api_key_env: str | None, evaluation_only: bool,
) -> None:  # fmt: skip
    """Draft profiles from an ESConv file (either format) and write them to a YAML file."""
    spec = model_spec(ModelSpec, "--enrich-model", enrich_model, base_url, api_key_env) if enrich_model else None
    dialogs = load_esconv(esconv_file)[:limit]
    drafts = [draft_profile(d, evaluation_only=evaluation_only) for d in dialogs]
    failures: list[tuple[str, str]] = []
    if spec is not None:
        drafts, failures = asyncio.run(_enrich(list(zip(drafts, dialogs, strict=True)), spec))
    write_profiles(out, drafts)
    enriched = len(drafts) - len(failures) if spec is not None else 0
    click.echo(f"imported {len(drafts)} profiles to {out}: enriched {enriched}, enrichment failures {len(failures)}")
    for pid, err in failures[:20]:
        click.echo(f"  not enriched (draft kept): {pid}: {err}", err=True)
    if len(failures) > 20:
        click.echo(f"  ... and {len(failures) - 20} more", err=True)


COMMANDS = [profiles]
