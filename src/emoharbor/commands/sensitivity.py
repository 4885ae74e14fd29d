"""``emoharbor sensitivity``: does each scorer (the simulated user, reply judges, the pairwise judge) put the
real reply above rule-made bad ones? Options named as ``emoharbor validate``'s."""

from __future__ import annotations

from pathlib import Path

import click

from .options import model_options, progress_opt, set_option
from .scorers import judge_cards, run_scorers, scorer_options
from .specs import scorer_specs

SOURCE = click.Path(path_type=Path)


@click.command("sensitivity")
@click.option("--esconv", multiple=True, type=SOURCE, help="An ESConv file (cases from records whose seeker rated "
              "empathy 4-5; the real supporter's next message is the good reply); repeatable.")  # fmt: skip
@click.option("--heart", multiple=True, type=SOURCE, help="A HEART history file (histories with the human "
              "supporter's reply); repeatable.")  # fmt: skip
@click.option("--heart-adversarial", "heart_adversarial", multiple=True, type=SOURCE,
              help="A HEART file of adversarial histories (resistant seekers); repeatable.")  # fmt: skip
@click.option("--from-run", "from_run", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              help="An EmoHarbor run folder (its supporter's next turn is the reply); repeatable.")  # fmt: skip
@click.option("--limit", type=int, help="The first N cases of each source.")
@click.option("--sample", type=int, help="N cases of each source at random (with --seed), instead of the first N.")
@click.option("--seed", default=0, show_default=True)
@click.option("--bad", "bad", multiple=True, metavar="MAKER",
              help="A bad reply, by its maker (repeatable; default: all): off_target, generic, generic_long, "
              "dismissive, dismissive_long, advice, ignores_last, wrong_facts, repeats, role_break.")  # fmt: skip
@click.option("--judge", "judges", multiple=True, help="A judge card of the form reply or heart_pairwise (repeatable; "
              "default: third_party_reply and heart_pairwise); none: the simulated user alone.")  # fmt: skip
@model_options(
    user="The simulated user's model (its reaction and reward are scored); none: judges only.", judge="--model"
)
@scorer_options("sensitivity")
@progress_opt
@set_option("reward.fit=0.5")
def sensitivity(esconv: tuple[Path, ...], heart: tuple[Path, ...], heart_adversarial: tuple[Path, ...],
                from_run: tuple[Path, ...], limit: int | None, sample: int | None, seed: int, bad: tuple[str, ...],
                user_model: str, judges: tuple[str, ...],
                judge_model: str | None, scoring: str | None, base_url: str | None, api_key_env: str | None,
                concurrency: int, run_dir: Path | None, fmt: str, no_progress: bool,
                sets: tuple[str, ...]) -> None:  # fmt: skip
    """Calibrate the scorers: for real contexts (ESConv, HEART, a run) the real next reply and controlled bad
    ones made by rules (off-target, generic, dismissive, advice, ignores the last message, wrong facts,
    repeats, role break; generic and dismissive also padded to the real reply's length). For each scorer
    and bad reply: how often the real reply scores above the bad one (ties half), with a bootstrap 95% interval,
    the tie rate and the distinct values given, beside the word count. Resumes in the same run folder;
    --set changes an option by name or a reward setting (reward.fit=0.5, reward.user_agent.intensity_step=10)."""
    from ..sensitivity.bad import MAKERS
    from ..sensitivity.run import DEFAULT_JUDGES, SensitivityOptions, SensitivityPlan

    user, judge = scorer_specs(user_model, judge_model, base_url, api_key_env)
    opts = SensitivityOptions(esconv=list(esconv), heart=list(heart), heart_adversarial=list(heart_adversarial),
                              from_run=list(from_run), limit=limit, sample=sample, seed=seed,
                              bad=list(bad) or list(MAKERS), user=user, judge=judge,
                              judges=judge_cards(judges, list(DEFAULT_JUDGES)), scoring=scoring,
                              concurrency=concurrency)  # fmt: skip
    run_scorers("sensitivity", opts, SensitivityPlan.of, sets, "reward.fit=0.5", run_dir, fmt=fmt,
                progress=not no_progress, seed=seed)  # fmt: skip


COMMANDS = [sensitivity]
