"""``emoharbor realism FILE...``: does the simulated user talk like a help-seeker? It writes the seeker's next
message where real ESConv seekers wrote theirs, and holds whole talks with a supporter; its messages beside
the real ones, figure by figure, with the goals a believable seeker meets."""

from __future__ import annotations

from pathlib import Path

import click

from .options import model_options, progress_opt, set_option
from .scorers import run_scorers, scorer_options


@click.command("realism")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--limit", type=int, help="The first N talks of each file.")
@click.option("--sample", type=int, help="N talks of each file at random (with --seed), instead of the first N.")
@click.option("--seed", default=0, show_default=True)
@click.option("--cuts", default=2, show_default=True, help="Cuts per talk (the seeker's third turn on), drawn with "
              "--seed: at each, the simulated user writes the next message; 0: none (whole talks only).")  # fmt: skip
@click.option("--whole", default=8, show_default=True, help="Talks also simulated whole, with the supporter (the "
              "first N chosen); 0: none.")  # fmt: skip
@click.option("--turns", default=6, show_default=True, help="Supporter turns at most in a whole talk.")
@model_options(user="The simulated user's model.", old_user="--user-model")
@click.option("--user-agent", default="chain", show_default=True, help="The simulated user (chain, simple, or "
              "module:NAME); its settings: --set user_agent.KEY=VALUE.")  # fmt: skip
@click.option("--supporter-model", help="The whole talks' supporter (default: --model).")
@click.option("--supporter-prompt", help="Its system prompt: builtin:default, builtin:personal, @FILE or the text.")
@scorer_options("realism")
@progress_opt
@set_option("user_agent.max_tokens=60")
def realism(files: tuple[Path, ...], limit: int | None, sample: int | None, seed: int, cuts: int, whole: int,
            turns: int, user_model: str, user_agent: str, supporter_model: str | None, supporter_prompt: str | None,
            base_url: str | None, api_key_env: str | None, concurrency: int, run_dir: Path | None, fmt: str,
            no_progress: bool, sets: tuple[str, ...]) -> None:  # fmt: skip
    """Realism against real seekers: ESConv files (either format). Next message: each talk cut after a supporter
    turn (from the seeker's third turn on), the simulated user, with a profile drafted from the talk up to the
    cut, writes the next message beside the real one. Whole talks: profiles drafted from the records talk with
    the supporter. Figures with bootstrap 95% intervals over talks: words per message, the shares that thank,
    ask, speak as the supporter, narrate the inner state or repeat, distinct-2, a discriminator's AUROC (with
    real-vs-real beside it), similarity to the real next message; seeker turns, relief per turn and endings of
    whole talks. Resumes in the same run folder."""
    from ..realism.run import RealismOptions, RealismPlan
    from .specs import agent_settings, supporter_spec, user_spec

    user = user_spec(user_model, base_url, api_key_env)
    supporter = supporter_spec(supporter_model, base_url, api_key_env)
    agent = agent_settings(user_agent)
    opts = RealismOptions(files=list(files), limit=limit, sample=sample, seed=seed, cuts=cuts, whole=whole,
                          turns=turns, user=user, user_agent=agent, supporter=supporter,
                          supporter_prompt=supporter_prompt, concurrency=concurrency)  # fmt: skip
    run_scorers("realism", opts, RealismPlan.of, sets, "user_agent.max_tokens=60", run_dir, fmt=fmt,
                progress=not no_progress, seed=seed)  # fmt: skip


COMMANDS = [realism]
