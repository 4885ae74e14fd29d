"""``emoharbor evolve sft|refine|dpo|run|control|grpo|pairs|eval``: self-evolution toward the user's implicit
preferences. Training needs the ``train`` extra; ``pairs`` does not."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError, EmoharborError
from ..overrides import parse_sets
from .options import progress_opt, set_option, stacked
from .paths import OUT_FILE, OUT_FOLDER

DIR = click.Path(path_type=Path, file_okay=False)
# --config and --set of the training stages (reaching the command as config_path and sets: see _config)
config_opts = stacked(
    click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
                 help="evolve config (YAML); default: the built-in settings"),
    set_option("sft.train_args.max_steps=20"),
)  # fmt: skip


def _log(text: str) -> None:
    click.echo(text, err=True)


def _config(path: Path | None, sets: tuple[str, ...]) -> Any:
    from ..evolve.config import load_evolve_config

    return load_evolve_config(path, parse_sets(sets, "dpo.train_args.beta=0.2"))


def _needs_train() -> None:
    try:
        for name in ("datasets", "peft", "torch", "transformers", "trl"):
            importlib.import_module(name)
    except ImportError as e:
        raise EmoharborError(
            f"training needs the train extra ({e.name} is missing): pip install 'emoharbor[train]'"
        ) from None


def _echo_main(text: str) -> None:
    """Standard output from the main process only (one copy under accelerate launch)."""
    from ..evolve.trainer import processes

    if processes().main:
        click.echo(text)


@click.group("evolve")
def evolve() -> None:
    """Self-evolution: SFT, then rounds of reflect, refine and DPO; pairs from evaluation runs."""


@evolve.command("sft")
@config_opts
@click.option("--out", type=OUT_FOLDER, required=True,
              help="folder for M0 (the adapter and its model card); a killed stage resumes there")  # fmt: skip
def sft(config_path: Path | None, sets: tuple[str, ...], out: Path) -> None:
    """Phase 1: LoRA fine-tuning on ESConv (and general data, if configured) -> M0."""
    _needs_train()
    from ..evolve.sft import run_sft

    summary = run_sft(_config(config_path, sets), out, log=_log)
    _echo_main(json.dumps({k: summary[k] for k in ("examples", "wall_s")}, default=str))


@evolve.command("refine")
@config_opts
@click.option("--model", "model_dir", type=DIR, required=True, help="the current model M(t), a folder from sft or dpo")
@click.option("--out", type=OUT_FOLDER, required=True, help="round folder: its refine/ run store and pairs.jsonl")
@progress_opt
def refine(config_path: Path | None, sets: tuple[str, ...], model_dir: Path, out: Path, no_progress: bool) -> None:
    """Phase 2, step 1: plain reply (rejected), reflection, refined reply (chosen); resumable."""
    _needs_train()
    from ..evolve.rounds import refine_with_model_dir
    from ..models.hf import read_model_card

    round_no = int(read_model_card(model_dir).get("round", 0)) + 1
    summary = refine_with_model_dir(_config(config_path, sets), model_dir, out / "refine", round_no, log=_log,
                                    progress=not no_progress)  # fmt: skip
    _echo_main(json.dumps(summary, default=str))
    _echo_main(f"pairs: {out / 'pairs.jsonl'}")


@evolve.command("dpo")
@config_opts
@click.option("--model", "model_dir", type=DIR, required=True, help="the current model M(t)")
@click.option("--pairs", "pair_files", type=click.Path(path_type=Path, dir_okay=False), multiple=True, required=True,
              help="pair file (JSONL prompt/chosen/rejected); repeatable")  # fmt: skip
@click.option("--out", type=OUT_FOLDER, required=True, help="folder for M(t+1); a killed stage resumes there")
def dpo(
    config_path: Path | None, sets: tuple[str, ...], model_dir: Path, pair_files: tuple[Path, ...], out: Path
) -> None:
    """Phase 2, step 2: direct preference optimisation of M(t) on pairs -> M(t+1)."""
    _needs_train()
    from ..evolve.dpo import run_dpo

    summary = run_dpo(_config(config_path, sets), model_dir, list(pair_files), out, log=_log)
    _echo_main(json.dumps({k: summary[k] for k in ("round", "pairs", "wall_s")}, default=str))


@evolve.command("run")
@config_opts
@click.option("--out", type=OUT_FOLDER, required=True, help="run folder: m0/, round1/, m1/, ... and summary.json")
@progress_opt
def run(config_path: Path | None, sets: tuple[str, ...], out: Path, no_progress: bool) -> None:
    """Everything: SFT, then the configured number of rounds; finished stages are skipped."""
    _needs_train()
    from ..evolve.rounds import run_all
    from ..evolve.trainer import check_machine

    cfg = _config(config_path, sets)
    check_machine(cfg)  # before any stage starts
    summary = run_all(cfg, out, log=_log, progress=not no_progress)
    _echo_main(f"done in {summary['wall_s']:.0f}s, peak RSS {summary['peak_rss_mb']:.0f} MB: {out / 'summary.json'}")


@evolve.command("control")
@config_opts
@click.option(
    "--out",
    type=OUT_FOLDER,
    required=True,
    help="the run folder of `evolve run` (its m0/ and rounds); the control goes to OUT/control",
)
def control(config_path: Path | None, sets: tuple[str, ...], out: Path) -> None:
    """The control: DPO from M0 on the rounds' pairs with chosen and rejected swapped at random, for the rounds'
    steps together; resumable, skipped once whole."""
    _needs_train()
    from ..evolve.control import run_control

    cfg = _config(config_path, sets)
    summary = run_control(cfg, out, log=_log)
    c = summary["control"]
    _echo_main(f"control: {c['swapped']} of {c['pairs']} pairs swapped, {summary['train']['steps']} steps: "
               f"{out / 'control'}")  # fmt: skip


@evolve.command("grpo")
@config_opts
@click.option("--model", "model_dir", type=DIR, default=None,
              help="the policy to start from (from sft, dpo or grpo); default: base_model, a new adapter")  # fmt: skip
@click.option("--out", type=OUT_FOLDER, required=True, help="folder for the policy; a killed stage resumes there")
@click.option("--no-eval", "no_eval", is_flag=True, help="skip the held-out evaluation the stage ends with")
@progress_opt
def grpo(config_path: Path | None, sets: tuple[str, ...], model_dir: Path | None, out: Path, no_eval: bool,
         no_progress: bool) -> None:  # fmt: skip
    """GRPO against the simulated user: its reaction to each reply is the reward; then before/after evaluation."""
    _needs_train()
    from ..evolve.grpo import run_grpo
    from ..evolve.grpo_report import REPORT
    from ..evolve.plan import EvolvePlan

    plan = EvolvePlan.of(_config(config_path, sets), str(config_path or "the built-in evolve settings"))  # its files
    summary = run_grpo(plan, model_dir, out, log=_log, evaluate=not no_eval, progress=not no_progress)
    t, unit = summary["rewards"], summary["unit"]
    _echo_main(f"grpo: {summary['train']['steps']} steps, {t.get(unit, 0)} {unit} rewarded ({t.get('ok', 0)} "
               f"scored, {t.get('unscored', 0)} unscored, {t.get('error', 0)} errors) in {summary['wall_s']:.0f}s; "
               f"report: {out / REPORT}")  # fmt: skip


@evolve.command("pairs")
@click.argument("runs", nargs=-1, required=True, type=DIR)
@click.option("--out", type=OUT_FILE, required=True, help="pair file to write")
@click.option("--holdout", multiple=True, help="file of held-out ids, or a run folder whose histories/profiles "
              "are evaluation data (repeatable)")  # fmt: skip
@click.option("--min-margin", type=float, default=0.5, show_default=True,
              help="EmoHarbor runs: least difference of the mean user scores of the two conversations")  # fmt: skip
def pairs(runs: tuple[Path, ...], out: Path, holdout: tuple[str, ...], min_margin: float) -> None:
    """Export preference pairs from EmoHarbor and HEART run folders (with provenance)."""
    from ..evolve.export import export_run
    from ..evolve.guard import load_guard
    from ..evolve.pairs import write_pairs

    guard = load_guard(list(holdout))
    everything = []
    total: Counter[str] = Counter()
    for folder in runs:
        got, counts = export_run(folder, guard, min_margin=min_margin)
        everything += got
        total.update(counts)
        _log(f"{folder}: {len(got)} pairs; {json.dumps(dict(sorted(counts.items())))}")
    write_pairs(out, everything)
    click.echo(f"wrote {len(everything)} pairs to {out}; {json.dumps(dict(sorted(total.items())))}")


def _named(models: tuple[str, ...]) -> list[tuple[str, Path | str]]:
    out: list[tuple[str, Path | str]] = []
    for m in models:
        name, eq, path = m.partition("=")
        out.append((name, Path(path)) if eq else (Path(m).name, Path(m)))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"model names must be unique, got {names}: write NAME=FOLDER")
    return out


@evolve.command("eval")
@click.option("--config", "run_config", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="an EmoHarbor run config: its profiles, user and judge are used for every model")  # fmt: skip
@click.argument("models", nargs=-1, required=True)
@click.option("--out", type=OUT_FOLDER, required=True, help="the folder of the one evaluation run (resumable)")
@click.option(
    "--contexts",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="the reply card: each model's reply to this many held-out ESConv contexts, scored by a judge of "
    "one reply (0: none)",
)
@click.option(
    "--esconv",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="ESConv file(s) the reply card's contexts come from (dialogues the models trained on are held "
    "out); repeatable",
)
@click.option(
    "--reply-judge",
    "reply_judge",
    default="third_party_reply",
    show_default=True,
    help="the reply card's judge: a card of the form reply, on the run's judge model unless it names its own",
)
@click.option("--bad", "bad", multiple=True, metavar="MAKER",
              help="the reply card's rule-made bad replies, scored beside the models on the same contexts, by maker "
              "(repeatable; default: generic_long, platitudes padded to the real reply's length; none: no row): "
              "the sensitivity suite's makers")  # fmt: skip
@click.option("--engine", type=click.Choice(["hf", "local"]), default="hf", show_default=True,
              help="how the models are served: hf (transformers, the trained weights exactly) or local (llama.cpp: "
              "the base's GGUF with the adapter as a GGUF LoRA file)")  # fmt: skip
@progress_opt
def eval_(run_config: Path, models: tuple[str, ...], out: Path, contexts: int, esconv: tuple[Path, ...],
          reply_judge: str, bad: tuple[str, ...], engine: str, no_progress: bool) -> None:  # fmt: skip
    """Evaluate M0, M1, ... (NAME=FOLDER or FOLDER) as the supporters of one run and print, per judge, each
    model's means and its paired difference from the first (interval, P(difference > 0), Holm's p); with
    --contexts N, the reply card of each model beside it."""
    from ..config import load_config
    from ..evaluate.plan import Plan, check_plan
    from ..evolve.evaluate import DEFAULT_BAD, ReplyCardOptions, evaluate_models

    if contexts and not esconv:
        raise ConfigError("--contexts needs --esconv FILE: the ESConv file(s) the held-out contexts come from")
    plan = Plan.of(load_config(run_config), str(run_config))  # its files, cards too
    check_plan(plan, models=False, reach=False)
    makers = [] if bad == ("none",) else list(bad or DEFAULT_BAD)
    replies = ReplyCardOptions(contexts, [str(p) for p in esconv], reply_judge, makers)
    click.echo(evaluate_models(plan, _named(models), out, log=_log, progress=not no_progress, replies=replies,
                               engine=engine))  # fmt: skip


COMMANDS = [evolve]
