"""``emoharbor seekers FILE...``: every reply-level scorer (the simulated user's reaction, reply judge cards)
against the ratings real help-seekers gave the supporter's replies during their talk, beside baselines that
need no model. Options named as ``emoharbor sensitivity``'s."""

from __future__ import annotations

from pathlib import Path

import click

from .options import model_options, progress_opt, set_option
from .scorers import judge_cards, run_scorers, scorer_options
from .specs import scorer_specs


@click.command("seekers")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--limit", type=int, help="The first N talks (with a rated turn) of each file.")
@click.option("--sample", type=int, help="N talks of each file at random (with --seed), instead of the first N.")
@click.option("--seed", default=0, show_default=True)
@click.option("--varied", is_flag=True, help="Only talks whose seeker gave two different ratings or more (every "
              "talk yields within-talk pairs); --limit and --sample choose among them.")  # fmt: skip
@click.option("--judge", "judges", multiple=True, help="A judge card of the form reply (repeatable; default: every "
              "built-in card of the form reply: third_party_reply); none: the simulated user alone.")  # fmt: skip
@model_options(
    user="The simulated user's model (its reaction and reward are scored); none: judges only.",
    old_user="--user-model",
    judge="--model",
)
@scorer_options("seekers")
@progress_opt
@set_option("reward.user_agent=rules")
def seekers(files: tuple[Path, ...], limit: int | None, sample: int | None, seed: int, varied: bool, user_model: str,
            judges: tuple[str, ...], judge_model: str | None, scoring: str | None, base_url: str | None,
            api_key_env: str | None, concurrency: int, run_dir: Path | None, fmt: str, no_progress: bool,
            sets: tuple[str, ...]) -> None:  # fmt: skip
    """Agreement with the seekers: ESConv files whose seekers rated the supporter's replies during the talk
    (failed_dev.json's annotation.feedback, MultiESC's valid_feedback.jsonl). Each rated point (the talk so
    far, the supporter's replies the seeker then rated, the rating) is scored by the simulated user (reward,
    reaction, fit, relief, trust) and by every judge card; per scorer: Spearman's rho with the ratings and
    the within-talk pairwise agreement, with bootstrap 95% intervals over talks, beside the reply's word
    count, its position in the talk and the seeker's words it echoes. Resumes in the same run folder; --set
    changes an option by name or a reward setting (reward.user_agent=rules)."""
    from ..seekers.run import SeekersOptions, SeekersPlan, reply_cards

    user, judge = scorer_specs(user_model, judge_model, base_url, api_key_env)
    cards = judge_cards(judges, reply_cards())
    opts = SeekersOptions(files=list(files), limit=limit, sample=sample, seed=seed, varied=varied, user=user,
                          judge=judge, judges=cards, scoring=scoring, concurrency=concurrency)  # fmt: skip
    run_scorers("seekers", opts, SeekersPlan.of, sets, "reward.user_agent=rules", run_dir, fmt=fmt,
                progress=not no_progress, seed=seed)  # fmt: skip


COMMANDS = [seekers]
