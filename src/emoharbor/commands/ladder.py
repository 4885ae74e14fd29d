"""``emoharbor ladder``: does a whole EmoHarbor run order supporters of known quality? Whole talks of the simulated
user with a ladder of supporters, best first, each rated by the judges; every scorer against the known order."""

from __future__ import annotations

from pathlib import Path

import click

from .options import model_options, progress_opt, set_option, user_option
from .scorers import judge_cards, run_scorers, scorer_options


def own_rungs(own: tuple[str, ...]) -> dict[str, str]:
    """``--rung NAME=PROMPT``, each, as {name: prompt}."""
    from ..errors import ConfigError

    mine = {}
    for item in own:
        name, sep, prompt = item.partition("=")
        if not sep or not name.strip() or not prompt.strip():
            raise ConfigError(f"--rung {item}: give NAME=PROMPT (builtin:NAME, @FILE or the text)")
        mine[name.strip()] = prompt.strip()
    return mine


@click.command("ladder")
@click.option("--profiles", "profiles", multiple=True, help="Profiles: builtin:*, builtin:ID (a glob), a file or "
              "a folder; repeatable (default: builtin:*).")  # fmt: skip
@click.option("--limit", type=int, help="The first N profiles.")
@click.option("--sample", type=int, help="N profiles at random (with --seed), instead of the first N.")
@click.option("--seed", default=0, show_default=True)
@click.option("--rungs", default="knows,default,generic,off_target,dismissive", show_default=True,
              help="The rungs, best first, comma-separated: built-in (knows: told the profile; default; "
              "generic: generic empathy; off_target: replies to another seeker; dismissive) or your own "
              "(--rung).")  # fmt: skip
@click.option("--rung", "own", multiple=True, metavar="NAME=PROMPT", help="A rung of your own: its system "
              "prompt on the supporter model (builtin:NAME, @FILE or the text); place NAME in --rungs. "
              "Repeatable.")  # fmt: skip
@click.option("--turns", default=4, show_default=True, help="Supporter turns at most in a talk.")
@click.option("--repeats", default=1, show_default=True, help="Talks per profile and rung.")
@model_options(user="The simulated user's model.", judge="--model")
@click.option("--user-agent", default="chain", show_default=True, help="The simulated user (chain, simple, rules, or "
              "module:NAME); its settings: --set user_agent.KEY=VALUE.")  # fmt: skip
@click.option("--supporter-model", help="The model of the rungs that have one (knows, default, your own; default: "
              "--model).")  # fmt: skip
@click.option("--judge", "judges", multiple=True, help="A judge card of the form user, third_party or "
              "profile_aware (repeatable; default: user, third_party and profile_aware); none: the user's inner "
              "state alone.")  # fmt: skip
@scorer_options("ladder")
@progress_opt
@set_option("judges=[{card: user, evidence: false}]")
def ladder(profiles: tuple[str, ...], limit: int | None, sample: int | None, seed: int, rungs: str,
           own: tuple[str, ...], turns: int, repeats: int, user_model: str, judge_model: str | None,
           scoring: str | None, base_url: str | None, api_key_env: str | None, user_agent: str,
           supporter_model: str | None, judges: tuple[str, ...], concurrency: int, run_dir: Path | None, fmt: str,
           no_progress: bool, sets: tuple[str, ...]) -> None:  # fmt: skip
    """Known-groups validity of a whole run: the simulated user talks with supporters whose order is known by
    construction (best first: told who the person is, the default prompt, generic empathy, replies to another
    seeker, dismissive; the scripted ones length-matched to the default's replies), the judges rate every talk,
    and each scorer (the user's rating and its dimensions, its lived intensity and trust, each judge, and
    baselines that need no model) is measured against the known order: the share of profiles ordering each
    pair, Kendall's tau, the closest pair it orders; 95% intervals resampling profiles. Resumes in the same run
    folder."""
    from ..assess.cards import CardEntry
    from ..errors import ConfigError
    from ..ladder.run import DEFAULT_JUDGES, LadderOptions, LadderPlan
    from .specs import agent_settings, scorer_specs, supporter_spec

    user, judge = scorer_specs(user_model, judge_model, base_url, api_key_env)
    if user is None:
        raise ConfigError(f"{user_option()} none: the ladder's talks need a simulated user")
    supporter = supporter_spec(supporter_model, base_url, api_key_env)
    mine, agent = own_rungs(own), agent_settings(user_agent)
    opts = LadderOptions(profiles=list(profiles) or ["builtin:*"], limit=limit, sample=sample, seed=seed,
                         rungs=[r.strip() for r in rungs.split(",") if r.strip()], own=mine, turns=turns,
                         repeats=repeats, user=user, user_agent=agent, supporter=supporter, judge=judge,
                         judges=list[CardEntry](judge_cards(judges, list(DEFAULT_JUDGES))), scoring=scoring,
                         concurrency=concurrency)  # fmt: skip
    run_scorers("ladder", opts, LadderPlan.of, sets, "judges=[{card: user, evidence: false}]", run_dir, fmt=fmt,
                progress=not no_progress, seed=seed)  # fmt: skip


COMMANDS = [ladder]
