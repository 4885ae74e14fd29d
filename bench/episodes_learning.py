"""Does multi-turn GRPO learn? The policy talks whole episodes with the rule-based user (`rules`, a verifiable
user: a reply is heard when it uses the seeker's own words, advice and dismissal cost), on the CPU; every
``--every`` steps its mean episode reward on held-out profiles (never trained on) is measured with a bootstrap
95% interval over the episodes, beside a control run that is the same in every way but that its rewards are
shuffled across the episodes of each batch (``grpo.episodes.shuffle_rewards``): the control's curve must not
rise. At the end: the table, whether each run rose by more than its interval (the last point's interval
above the first's), and the trained policy's replies on two held-out profiles before and after.

    python bench/episodes_learning.py --work runs/episodes-bench                # SmolLM2-135M (the smollm2 GGUF)
    python bench/episodes_learning.py --work /tmp/eb --policy tiny --steps 2 --every 1   # a smoke run
    python bench/episodes_learning.py --work runs/episodes-chain --user chain --arms reward   # the embedded user

``--user chain``: the same recipe with the simulated user of every command (the Appraiser, Feeler and
Expresser on the embedded model, ``grpo.user``'s default), for the training episodes and the held-out ones;
``--arms reward`` leaves out the control.

Resumable: each run is an `evolve grpo` stage in WORK/reward and WORK/shuffled (a killed one resumes from its
checkpoint, every ``--every`` steps), its held-out curve in heldout.jsonl beside it; a finished run is not
run again. It prints its expected run time before it starts (estimates for this 2-core machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tiny model of the tests

# seconds on the 2-core development machine: one GRPO step of 4 episodes of up to 3 turns, and one held-out
# episode (smollm2: from the run of docs/evolve.md, 17 s a step and 3 s an episode at 2 turns; tiny: a smoke run)
STEP_S = {"tiny": 2.0, "smollm2": 25.0}
EPISODE_S = {"tiny": 0.2, "smollm2": 4.0}
# one reaction of the user, on top (chain: the embedded model on 2 threads, measured: a step of 4 episodes of
# 2 turns took about 6 min, a held-out point of 10 episodes 8.5 min)
USER_S = {"rules": 0.0, "chain": 40.0}


def arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--policy", choices=["smollm2", "tiny"], default="smollm2")
    p.add_argument("--user", choices=["rules", "chain"], default="rules", help="the simulated user (the environment)")
    p.add_argument("--arms", default="reward,shuffled", help="the runs: reward, shuffled (the control), or both")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--every", type=int, default=10, help="held-out measurement every N steps")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--max-turns", type=int, default=3)
    p.add_argument("--tokens", type=int, default=48, help="tokens per supporter turn at most")
    p.add_argument("--train-contexts", type=int, default=40)
    p.add_argument("--heldout", default="builtin:p09*", help="held-out profiles (never trained on)")
    p.add_argument("--samples", type=int, default=4, help="held-out episodes per profile at each measurement")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def config(a: argparse.Namespace, base: str, holdout: Path, shuffle: bool) -> dict[str, Any]:
    train_args = {"max_steps": a.steps, "per_device_train_batch_size": 4, "num_generations": 4,
                  "max_completion_length": a.tokens, "learning_rate": a.lr, "temperature": 1.0,
                  "logging_steps": 1, "save_steps": a.every}  # fmt: skip
    return {"base_model": base, "device": "cpu", "seed": a.seed, "holdout": [str(holdout)],
            "lora": {"r": 8, "alpha": 16},
            "grpo": {"contexts": {"profiles": ["builtin:*"], "n": a.train_contexts}, "train_args": train_args,
                     "reward": {"user_agent": a.user},
                     "episodes": {"enabled": True, "max_turns": a.max_turns, "shuffle_rewards": shuffle}}}  # fmt: skip


def estimate(a: argparse.Namespace, heldout: int) -> float:
    points = a.steps // a.every + 2
    user = a.max_turns * USER_S[a.user]  # the user's reactions in one episode (a batch's run one after another)
    step = STEP_S[a.policy] + 4 * user
    episode = EPISODE_S[a.policy] + user
    return len(arms(a)) * (a.steps * step + points * heldout * a.samples * episode)


def arms(a: argparse.Namespace) -> list[tuple[str, bool]]:
    table = {"reward": False, "shuffled": True}
    names = [x.strip() for x in a.arms.split(",") if x.strip()]
    if not names or any(n not in table for n in names):
        raise SystemExit(f"--arms: a comma-separated list of {', '.join(table)}; got {a.arms!r}")
    return [(n, table[n]) for n in names]


def main() -> None:
    a = arguments()
    from emoharbor.episodes.heldout import UserLoop, held_out_callback, read_curve
    from emoharbor.evolve.config import load_evolve_config
    from emoharbor.evolve.grpo import EPISODES, run_grpo
    from emoharbor.models.folder import MODEL_CARD
    from emoharbor.profiles.loader import resolve_profiles
    from emoharbor.reward.context import openings
    from emoharbor.simulate.agents import user_agent
    from emoharbor.simulate.supporter import supporter_prompt

    a.work.mkdir(parents=True, exist_ok=True)
    base = "smollm2"
    if a.policy == "tiny":
        from evolve_helpers import tiny_model_dir

        if not (a.work / "tiny" / "config.json").is_file():
            tiny_model_dir(a.work / "tiny")
        base = str(a.work / "tiny")
    held = resolve_profiles([a.heldout])
    holdout = a.work / "holdout.yaml"
    holdout.write_text(yaml.safe_dump({"profiles": [p.id for p in held]}), encoding="utf-8")
    runs = arms(a)
    print(f"expected run time: about {estimate(a, len(held)) / 60:.0f} min ({a.policy} with the {a.user} user, "
          f"{a.steps} steps x {len(runs)} runs, {len(held)} held-out profiles x {a.samples} episodes every "
          f"{a.every} steps)", flush=True)  # fmt: skip
    curves: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for arm, shuffle in runs:
        out = a.work / arm
        curve = out / "heldout.jsonl"
        if not (out / MODEL_CARD).is_file():
            cfg = load_evolve_config(None, config(a, base, holdout, shuffle))
            agent = cfg.grpo.reward.user_agent
            user = UserLoop(cfg.grpo.user if user_agent(agent.agent).needs_model else None)
            try:
                # the held-out openings are the user's (written once: a resumed run reads the same from the cache)
                contexts, failed = user.run(openings(held, user.model, seed=cfg.seed, settings=agent))
                if failed:
                    print(f"{failed} held-out openings did not parse: those profiles are left out", flush=True)
                system = supporter_prompt(cfg.system_prompt).text.strip()
                out.mkdir(parents=True, exist_ok=True)
                callback = held_out_callback(curve, a.every, contexts, system, cfg.grpo.reward, cfg.grpo.episodes,
                                             user=user, samples=a.samples, max_new_tokens=a.tokens)  # fmt: skip
                started = time.monotonic()
                run_grpo(cfg, None, out, log=lambda line: print(line, flush=True), evaluate=False,
                         callbacks=[callback])  # fmt: skip
                print(f"{arm}: {time.monotonic() - started:.0f} s", flush=True)
            finally:
                user.close()
        curves[arm] = read_curve(curve)
        training_curve(arm, out / EPISODES, a.every)
    report(curves)


def training_curve(arm: str, log: Path, every: int) -> None:
    """The training episodes' mean reward per ``every`` steps (the reward each was given, before any shuffle)."""
    import json

    from emoharbor.stats.bootstrap import bootstrap_ci

    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()] if log.is_file() else []
    blocks: dict[int, list[float]] = {}
    for r in rows:
        if r["reward"] is not None:
            blocks.setdefault((r["step"] - 1) // every, []).append(r["reward"])
    print(f"\n{arm}: training episodes' mean reward per {every} steps ({len(rows)} episodes, "
          f"{sum(r['reward'] is None for r in rows)} unscored)")  # fmt: skip
    for b, rewards in sorted(blocks.items()):
        ci = bootstrap_ci(rewards, seed=0).fmt(3)
        print(f"  steps {b * every + 1:>3}-{(b + 1) * every:<3} {ci} (n {len(rewards)})")


def report(curves: dict[str, dict[int, list[dict[str, Any]]]]) -> None:
    from emoharbor.stats.bootstrap import bootstrap_ci

    def est(eps: list[dict[str, Any]]) -> Any:
        return bootstrap_ci([e["reward"] for e in eps if e["reward"] is not None], seed=0)

    steps = sorted(set().union(*(c.keys() for c in curves.values())))
    print("\nheld-out mean episode reward [95% bootstrap interval over episodes]")
    print(f"{'step':>6} | " + " | ".join(f"{arm:>24}" for arm in curves))
    for s in steps:
        cells = [est(c[s]).fmt(3) if s in c else "-" for c in curves.values()]
        print(f"{s:>6} | " + " | ".join(f"{x:>24}" for x in cells))
    for arm, c in curves.items():
        if len(c) < 2:
            continue
        first, last = est(c[min(c)]), est(c[max(c)])
        rose = first.hi is not None and last.lo is not None and last.lo > first.hi
        print(f"{arm}: step {min(c)} {first.fmt(3)} -> step {max(c)} {last.fmt(3)}: "
              + ("rose by more than its interval" if rose else "did not rise beyond its interval"))  # fmt: skip
    c = curves.get("reward", {})
    if len(c) >= 2:
        before, after = c[min(c)], c[max(c)]
        for ctx in list(dict.fromkeys(e["context"] for e in before))[:2]:
            print(f"\n{ctx}")
            for name, eps in (("before", before), ("after", after)):
                e = next(x for x in eps if x["context"] == ctx)
                print(f"  {name} (reward {e['reward']}, {e['ended']}):")
                for s in e["steps"]:
                    print(f"    supporter: {s['reply'][:160]!r}\n    user: {s['user'][:160]!r}")


if __name__ == "__main__":
    main()
