"""``emoharbor reward FILE``: the simulated user's reward for every reply in a file (the reward that
``evolve grpo`` trains on), written as JSON Lines with its parts, penalties and status."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from .. import userfiles
from ..models.spec import ModelSpec
from ..overrides import validated
from .core import model_spec
from .paths import OUT_FILE


def _settings(path: Path | None) -> Any:
    from ..reward.settings import RewardSettings

    raw = userfiles.read_settings(path, "reward settings") if path else {}
    return validated(RewardSettings, raw, {}, str(path))


@click.command("reward")
@click.argument("replies_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", type=OUT_FILE, required=True, help="JSONL file of rewards to write")
@click.option("--user", "user_model", default="local:qwen1.5b", show_default=True, help="The simulated user's model.")
@click.option("--base-url", help="OpenAI-compatible base URL for a --user that is not local: or scripted.")
@click.option("--api-key-env", help="Environment variable holding the API key for --base-url.")
@click.option("--settings", "settings_path", type=click.Path(path_type=Path, dir_okay=False),
              help="reward settings (YAML: the fields of an evolve config's grpo.reward)")  # fmt: skip
def reward(replies_file: Path, out: Path, user_model: str, base_url: str | None, api_key_env: str | None,
           settings_path: Path | None) -> None:  # fmt: skip
    """Reward supporter replies by the simulated user's reaction (intensity, trust, fit) minus penalties."""
    from ..reward.replies_file import read_replies
    from ..reward.score import tally

    s = _settings(settings_path)
    spec = model_spec(ModelSpec, "--user", user_model, base_url, api_key_env)
    items = read_replies(replies_file, s.initial_trust)
    scored = asyncio.run(_score(spec, s, [(c, r) for c, rs in items for r in rs]))
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(x.to_dict(), ensure_ascii=False) + "\n" for x in scored), encoding="utf-8")
    tmp.replace(out)
    t = tally(scored)
    mean = "no reply was scored" if t["mean_reward"] is None else f"mean reward {t['mean_reward']:.3f}"
    pens = ", ".join(f"{k} {v}" for k, v in t["penalties"].items()) or "none"
    click.echo(f"rewarded {t['replies']} replies of {len(items)} contexts: {t['ok']} scored, {t['unscored']} "
               f"unscored (the reaction did not parse), {t['error']} model errors; {mean}; penalties: {pens}; "
               f"wrote {out}")  # fmt: skip


async def _score(spec: ModelSpec, s: Any, pairs: list[Any]) -> list[Any]:
    from ..models.pool import ModelPool
    from ..reward.score import UserReward

    async with ModelPool() as pool:
        return await UserReward(await pool.get(spec, "user"), s).score_many(pairs)


COMMANDS = [reward]
