"""GRPO against the simulated user: ``trl.GRPOTrainer`` with LoRA on the policy and ``reward`` as its reward.

For each context (a profile's opening, a simulated talk's turn, an ESConv or HEART history cut at the
seeker) the policy writes ``num_generations`` replies; the simulated user's Appraiser and Feeler react to
each, and the reward (``reward.settings``) ranks them against each other. A reply whose reaction does not
parse gets no reward and no advantage (TRL's None); it is counted. The contexts are fixed when the stage
starts (``contexts.jsonl``, so a resumed stage trains on the same ones) and pass the evaluation guard:
``holdout`` and the profiles of ``grpo.eval_config``, the held-out evaluation the stage ends with
(``evolve eval``: the start model and the trained one, per judge and dimension).

With ``grpo.episodes.enabled`` the policy talks whole episodes with the user instead (``emoharbor.episodes``:
TRL's ``rollout_func`` plays them, the policy writing every supporter turn; the loss is on its tokens only),
each context's prompt opening ``num_generations`` episodes; the reward is the episode's (``episodes.reward``:
the change over the talk, the replies' rewards summed, or a judge card's rating of the talk).

The stage folder holds the adapter and card (as SFT's and DPO's), ``contexts.jsonl``, ``rewards.jsonl``
(every reward with its step, status, parts and penalties) or, with episodes, ``episodes.jsonl`` (every
episode with its step, reward, turns and the penalties per step, and the judge's rating with ``reward:
judge``), ``eval/``, ``report.md`` and ``report.html``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ..data.selection import spread
from ..episodes.reward_func import EpisodeRewardFunc
from ..episodes.rollout import EpisodeRollout
from ..errors import ConfigError, EmoharborError
from ..models.base import ChatModel
from ..models.hf import read_model_card, resolve_hf
from ..profiles.loader import resolve_profiles
from ..reward.context import RewardContext, esconv_contexts, heart_contexts, openings, run_contexts
from ..reward.trl_reward import UserRewardFunc
from ..simulate.agents import user_agent
from .card import TRAINED_PROFILES, refuse_trained_profiles, trained_profiles
from .config import EvolveConfig
from .grpo_report import EPISODES, REPORT, REPORT_HTML, REWARDS, reward_curve, reward_totals, write_reports
from .guard import EvalGuard, load_guard
from .plan import EvolvePlan
from .trainer import (
    Log,
    begin_stage,
    check_machine,
    checkpoints,
    fit,
    load_model,
    lora_config,
    main_log,
    processes,
    refuse_if_card,
    release_memory,
    save_stage,  # fmt: skip
    stage_settings,
    training_args,
)

CONTEXTS = "contexts.jsonl"


def build_contexts(plan: EvolvePlan, guard: EvalGuard, user: ChatModel | None = None) -> tuple[
        list[RewardContext], dict[str, Any]]:  # fmt: skip
    """The sampled contexts (openings written by the simulated user, the others as the plan's files say) and
    counts: per source, the contexts found, held out by the guard, and used."""
    cfg = plan.cfg
    c, g = cfg.grpo.contexts, cfg.grpo
    trust = g.reward.user_agent.initial_trust
    counts: dict[str, Counter[str]] = {}

    def keep(source: str, found: list[Any], record: Any) -> list[Any]:
        n = counts.setdefault(source, Counter())
        n["found"] += len(found)
        kept = [x for x in found if not guard.blocks_record(record(x))]
        n["held_out"] += len(found) - len(kept)
        return kept

    profiles = keep("profile", resolve_profiles(c.profiles) if c.profiles else [],
                    lambda p: {"profile_id": p.id, "evaluation_only": p.evaluation_only})  # fmt: skip
    ready = keep("run", [x for f in c.runs for x in run_contexts(Path(f))], RewardContext.guard_record)
    ready += keep("esconv", esconv_contexts(plan.esconv, initial_trust=trust), RewardContext.guard_record)
    ready += keep("heart", heart_contexts(plan.heart, initial_trust=trust), RewardContext.guard_record)
    items: list[Any] = [*profiles, *ready]
    chosen = spread(items, c.n, cfg.seed, lambda x: x.history if isinstance(x, RewardContext) else x.id,
                    lambda x: x.source if isinstance(x, RewardContext) else "profile")  # fmt: skip
    to_open = [x for x in chosen if not isinstance(x, RewardContext)]
    opened, failed = asyncio.run(_openings(cfg, to_open, user)) if to_open else ([], 0)
    by_id = {p.id: ctx for ctx in opened for p in [ctx.profile]}
    out = [x if isinstance(x, RewardContext) else by_id[x.id] for x in chosen
           if isinstance(x, RewardContext) or x.id in by_id]  # fmt: skip
    for ctx in out:
        counts.setdefault(ctx.source, Counter())["used"] += 1
    if failed:
        counts["profile"]["opening_unparsed"] = failed
    return out, {k: dict(v) for k, v in counts.items()}


async def _openings(cfg: EvolveConfig, profiles: list[Any], user: ChatModel | None) -> tuple[
        list[RewardContext], int]:  # fmt: skip
    from ..models.pool import ModelPool

    g = cfg.grpo
    async with ModelPool() as pool:
        model = user or (await pool.get(g.user, "user") if user_agent(g.reward.user_agent.agent).needs_model else None)
        return await openings(profiles, model, seed=cfg.seed, settings=g.reward.user_agent)


def _contexts(plan: EvolvePlan, out: Path, guard: EvalGuard, user: ChatModel | None) -> tuple[
        list[RewardContext], dict[str, Any]]:  # fmt: skip
    """The stage's contexts: made once by the main process (``contexts.jsonl``), read by every process."""
    path = out / CONTEXTS
    if processes().main and not path.is_file():
        made, counts = build_contexts(plan, guard, user)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"counts": counts}) + "\n" + "".join(c.to_json() + "\n" for c in made), "utf-8")
        tmp.replace(path)
    head, *rows = path.read_text(encoding="utf-8").splitlines()
    return [RewardContext.from_dict(json.loads(r)) for r in rows], json.loads(head)["counts"]


def rewards_file(out: Path, rank: int, log: str = REWARDS) -> Path:
    """Process ``rank``'s log of the rewards (``REWARDS``) or of the episodes (``EPISODES``)."""
    stem = log.removesuffix(".jsonl")
    return out / (log if rank == 0 else f"{stem}-rank{rank}.jsonl")


def trim_rewards(path: Path, step: int) -> None:
    """Drop the rewards of steps after ``step`` (a resumed stage redoes them)."""
    if not path.is_file():
        return
    kept = [ln for ln in path.read_text(encoding="utf-8").splitlines() if (json.loads(ln).get("step") or 0) <= step]
    path.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")


def run_grpo(plan: EvolvePlan | EvolveConfig, model_dir: Path | None, out: Path, *, log: Log,
             evaluate: bool = True, user: ChatModel | None = None, progress: bool = True,
             callbacks: Sequence[Any] = ()) -> dict[str, Any]:  # fmt: skip
    """Run ``plan`` (a config is planned here first: the library's callers): train the policy (``model_dir``,
    an adapter from sft/dpo/grpo, or ``cfg.base_model`` with a new LoRA adapter) into ``out`` against the
    simulated user, resuming from a checkpoint there; then the held-out evaluation of both (``evaluate``).
    ``user``: a ChatModel in place of ``grpo.user`` (a scripted user in tests; a model already open in a
    notebook). ``callbacks``: transformers callbacks added to the trainer (``episodes.heldout``: a held-out
    curve during training)."""
    refuse_if_card(out)
    cfg = plan.cfg if isinstance(plan, EvolvePlan) else plan
    check_machine(cfg)
    g = cfg.grpo
    plan = _planned(plan, model_dir, evaluate=evaluate)
    say = main_log(log)
    started = time.monotonic()
    parent = read_model_card(model_dir) if model_dir is not None else None
    src = resolve_hf(str(model_dir) if model_dir is not None else cfg.base_model)
    args = training_args("grpo", cfg, out, seed=cfg.seed)
    contexts, counts = _start_stage(plan, model_dir, out, args, user, say)
    system = plan.system.text.strip()
    from datasets import Dataset
    from trl.trainer.grpo_trainer import GRPOTrainer

    rows = [{"prompt": c.messages(system, g.contexts.max_turns), "context": c.to_json()} for c in contexts]
    model, tok = load_model(cfg, src, trainable=bool(src.adapter))
    log_name, unit = (EPISODES, "episodes") if g.episodes.enabled else (REWARDS, "replies")
    rollout, reward = _rewards(plan, out, contexts, system, user, log_name)
    lora = None if src.adapter else lora_config(model, cfg.lora)
    trainer = GRPOTrainer(model=model, reward_funcs=[cast(Any, reward)], args=args, rollout_func=cast(Any, rollout),
                          train_dataset=Dataset.from_list(rows), processing_class=tok, peft_config=lora)  # fmt: skip
    for c in callbacks:
        trainer.add_callback(c)
    try:
        report = fit(trainer, out, stage="grpo", log=log)
    finally:
        closing = rollout.aclose() if rollout is not None else cast(UserRewardFunc, reward).aclose()
        asyncio.run_coroutine_threadsafe(closing, trainer.async_loop).result()
    curve = reward_curve(out, log_name)  # every process's rewards, those from before a resume included
    summary = {"stage": "grpo", "round": int(parent.get("round", 0)) + 1 if parent else 0, "contexts": counts,
               "unit": unit, "rewards": reward_totals(curve, unit), "curve": curve, "train": report.to_dict(),
               "wall_s": time.monotonic() - started}  # fmt: skip
    base_model = parent["base_model"] if parent else cfg.base_model
    card = {"base_model": base_model, "base": parent.get("base") if parent else src.identity, **summary,
            "parent": str(model_dir) if model_dir else None, "config": cfg.resolved(),
            TRAINED_PROFILES: trained_profiles(parent or {}, [])}  # fmt: skip
    save_stage(trainer, out, card)
    say(f"grpo: saved the policy to {out} ({report.steps} steps, {report.wall_s:.0f}s)")
    del trainer, model
    release_memory()
    if processes().main:
        _evaluate_and_report(plan, model_dir, out, summary, evaluate=evaluate, say=say, progress=progress,
                             started=started)  # fmt: skip
    return summary


def _planned(plan: EvolvePlan | EvolveConfig, model_dir: Path | None, *, evaluate: bool) -> EvolvePlan:
    """``plan`` (a config is planned here); with ``evaluate``, the held-out evaluation the stage ends with is set and
    none of its profiles is one the start model was trained on (its card's ``TRAINED_PROFILES``)."""
    cfg = plan.cfg if isinstance(plan, EvolvePlan) else plan
    if evaluate and not cfg.grpo.eval_config:
        raise ConfigError("grpo.eval_config is not set: give the EmoHarbor run config (held-out profiles, the user "
                          "judge and a third-party judge) that the stage ends with, or pass --no-eval")  # fmt: skip
    plan = plan if isinstance(plan, EvolvePlan) else EvolvePlan.of(cfg, "the evolve config")
    if evaluate and plan.evaluation is not None and model_dir is not None:
        refuse_trained_profiles([p.id for p in plan.evaluation.profiles], [model_dir])
    return plan


def _start_stage(plan: EvolvePlan, model_dir: Path | None, out: Path, args: Any, user: ChatModel | None,
                 say: Log) -> tuple[list[RewardContext], dict[str, Any]]:  # fmt: skip
    """Begin the stage folder (the main process first) and read its contexts (the evaluation's profiles held out):
    none is an error."""
    cfg = plan.cfg
    g = cfg.grpo
    guard = load_guard(cfg.holdout)
    guard.profile_ids |= {p.id for p in plan.evaluation.profiles} if plan.evaluation else set()  # held out
    inputs = {"parent": str(Path(model_dir).resolve()) if model_dir else None, "contexts": g.contexts.model_dump(),
              "user": g.user.model_dump(mode="json"), "reward": g.reward.model_dump(mode="json")}  # fmt: skip
    with args.main_process_first(desc="the stage folder and its contexts"):
        begin_stage(out, stage_settings(cfg, "grpo", **inputs), "grpo")
        contexts, counts = _contexts(plan, out, guard, user)
    used = ", ".join(f"{k} {v.get('used', 0)}" for k, v in counts.items())
    say(f"grpo: {len(contexts)} contexts ({used}); {args.num_generations} replies each")
    if not contexts:
        raise EmoharborError("grpo: no contexts to train on (every source empty, or all held out)")
    return contexts, counts


def _rewards(plan: EvolvePlan, out: Path, contexts: list[RewardContext], system: str, user: ChatModel | None,
             log_name: str) -> tuple[EpisodeRollout | None, EpisodeRewardFunc | UserRewardFunc]:  # fmt: skip
    """The episodes' rollout (None without episodes) and the reward function, which logs to this process's
    file, cut back to the last checkpoint (a resumed stage redoes the steps after it)."""
    g = plan.cfg.grpo
    me = processes()
    done = checkpoints(out)
    logged = rewards_file(out, me.rank, log_name)
    trim_rewards(logged, done[-1][0] if done else 0)
    if not g.episodes.enabled:
        return None, UserRewardFunc(user or g.user, g.reward, log=logged, rank=me.rank)
    judge = plan.episode_judge
    judge_model = user if judge is not None and judge.model == g.user else None  # the user's, given in its place
    rollout = EpisodeRollout(contexts, system, g.contexts.max_turns, user or g.user, g.reward, g.episodes,
                             seed=g.reward.seed, judge=judge, judge_model=judge_model)  # fmt: skip
    return rollout, EpisodeRewardFunc(g.episodes, log=logged, rank=me.rank, seed=plan.cfg.seed)


def _evaluate_and_report(plan: EvolvePlan, model_dir: Path | None, out: Path, summary: dict[str, Any], *,
                         evaluate: bool, say: Log, progress: bool, started: float) -> None:  # fmt: skip
    """The held-out evaluation of the start model and the trained one (``evaluate``), then the reports."""
    table = ""
    if evaluate and plan.evaluation is not None:
        from .evaluate import evaluate_models

        start = model_dir if model_dir is not None else plan.cfg.base_model
        table = evaluate_models(plan.evaluation, [("before", start), ("after", out)], out / "eval", log=say,
                                progress=progress)  # fmt: skip
        summary["eval"] = table
    summary["wall_s_with_eval"] = time.monotonic() - started
    write_reports(out, summary, table)
    say(f"grpo: report at {out / REPORT} and {out / REPORT_HTML}")
