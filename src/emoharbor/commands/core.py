"""`emoharbor config check`, `emoharbor chat`, `emoharbor export`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click
from pydantic import ValidationError

from .. import kinds
from ..config import RunConfig, SupporterSpec
from ..errors import ConfigError, EmoharborError, validation_message
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..preflight import check_named_models
from ..profiles.loader import resolve_profiles
from ..profiles.schema import Profile
from ..simulate import agents
from ..simulate.conversation import Conversation
from ..simulate.loop import converse
from ..simulate.supporter import make_supporter
from ..store.export import export_run
from ..store.run_store import RunStore
from .options import user_model_option, user_option
from .paths import OUT_FOLDER
from .specs import model_spec, user_spec


@click.group("config")
def config_group() -> None:
    """Configs and other settings files."""


@config_group.command("check")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--models/--no-models", default=True, help="Also check that every model can be built.")
def config_check(path: Path, models: bool) -> None:
    """Check a settings file: a run config, a HEART or evolve config, a judge card or a profile file (told
    apart by their keys); print it resolved, with its hash. No model is reached."""
    from ..settings_files import check_config

    for line in check_config(path, models=models):
        click.echo(line)


@click.command("chat")
@click.option("--profile", "profile_ref", required=True, help="A profile file, or builtin:ID.")
@click.option("--supporter", default="local:qwen1.5b", show_default=True, help="The supporter model.")
@user_model_option("The simulated user's model.", "--user")
@click.option("--base-url", help="OpenAI-compatible base URL for models that are not local: or scripted.")
@click.option("--api-key-env", help="Environment variable holding the API key for --base-url.")
@click.option("--system-prompt", help="Supporter system prompt: text, @FILE or builtin:NAME.")
@click.option("--max-turns", default=4, show_default=True, type=click.IntRange(1, 50))
@click.option("--user-agent", default="chain", show_default=True,
              help="The simulated user: chain, simple, rules, or MODULE:NAME (docs/extending.md).")  # fmt: skip
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the whole conversation record as JSON.")
def chat(profile_ref: str, supporter: str, user_model: str, base_url: str | None, api_key_env: str | None,
         system_prompt: str | None, max_turns: int, user_agent: str, seed: int, as_json: bool) -> None:  # fmt: skip
    """Run one conversation between a simulated user and a supporter, and print it."""
    profiles = resolve_profiles([profile_ref])
    if len(profiles) != 1:
        raise EmoharborError(
            f"{profile_ref} holds {len(profiles)} profiles: pick one with builtin:ID or a one-profile file"
        )
    sup = model_spec(SupporterSpec, "--supporter", supporter, base_url, api_key_env, name=supporter,
                     system_prompt=system_prompt)  # fmt: skip
    user = user_spec(user_model, base_url, api_key_env)
    try:  # the settings first, then the models (cheap checks first)
        cfg = RunConfig.model_validate({"max_turns": max_turns, "user_agent": user_agent, "seed": seed})
    except ValidationError as e:
        raise ConfigError(validation_message(f"--user-agent {user_agent}", e)) from None
    check_named_models([("--supporter", sup), (user_option(), user)])
    conv = asyncio.run(_chat(profiles[0], sup, user, cfg))
    if conv.termination == "error" and not any(t.speaker == "supporter" for t in conv.turns):
        raise EmoharborError(f"the conversation could not start: {conv.error}")
    if as_json:
        click.echo(json.dumps(conv.model_dump(), indent=2, ensure_ascii=False))
        return
    click.echo(f"# {profiles[0].id} with {sup.name}")
    for t in conv.turns:
        who = "USER" if t.speaker == "user" else "SUPPORTER"
        click.echo(f"{who}: {t.text}")
        state = (t.inner or {}).get("state")
        if state:
            click.echo(f"    [inner: intensity {state['intensity']}, trust {state['trust']}: {state['thought']}]")
    click.echo(f"# ended: {conv.termination} after {conv.wall_s:.1f}s" + (f" ({conv.error})" if conv.error else ""))
    for ev, detail in conv.events:
        click.echo(f"# {ev}: {detail}")


async def _chat(profile: Profile, sup: SupporterSpec, user: ModelSpec, cfg: RunConfig) -> Conversation:
    async with ModelPool() as pool:
        s_model = await pool.get(sup, "supporter")
        u_model = await pool.get(user, "user") if agents.user_agent(cfg.user_agent.agent).needs_model else None
        conv = Conversation(id=f"{profile.id}|{sup.name}|0", profile_id=profile.id, supporter=sup.name, seed=cfg.seed)
        return await converse(
            conv,
            agents.make_user(u_model, profile, cfg.user_agent),
            make_supporter(s_model, sup),
            max_turns=cfg.max_turns,
            seed=cfg.seed,
        )


@click.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default="jsonl", show_default=True,
              help="jsonl/csv: the tidy results and every store table; parquet: the tidy results.")  # fmt: skip
@click.option("--out", type=OUT_FOLDER, help="Folder for the files (default: RUN_DIR/export).")
def export(run_dir: Path, fmt: str, out: Path | None) -> None:
    """Export a run: results.FMT, one tidy row per (unit, judge, dimension) with the score, the supporter and
    the profile's attributes (HEART: per history, pair, order, judge, dimension); with jsonl or csv also every
    result table, the calls, the events and the meta. A validate run also gets validate_scores."""
    from ..results import write_results

    store = RunStore.open_existing(run_dir)
    try:
        kind = store.meta()["kind"]
        if fmt == "parquet" and not kinds.has(kind, "tidy"):
            raise EmoharborError(f"{run_dir}: this kind of run has no table of results: use --format jsonl or csv")
        folder = out or run_dir / "export"
        folder.mkdir(parents=True, exist_ok=True)
        written = [p for p in [write_results(store, folder, fmt)] if p is not None]
        if fmt != "parquet":
            own = kinds.of(kind).export(store) if kinds.has(kind, "export") else {}
            written += export_run(store, folder, fmt, own)
        for path in written:
            click.echo(str(path))
    finally:
        store.close()


COMMANDS = [config_group, chat, export]
