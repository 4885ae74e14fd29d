"""The episode's reward as a TRL reward function: the rollout (``rollout.EpisodeRollout``) plays each episode
and passes its record (``episode``, JSON); this returns its reward (None for an unscored or failed episode:
TRL gives it no advantage) and writes every episode, with its step, to a JSONL log (one per process, as the
single-reply rewards log). Penalty and guard rates per reply go to TRL's log as ``penalty/NAME``, with
``episode_turns`` and ``reward_unscored``.

``shuffle_rewards`` (a control): the rewards of a call's scored episodes are handed to TRL in a seeded random
order, so that what the policy is rewarded for has nothing to do with what it wrote; the log keeps each
episode's own reward and the one it was given (``trained_on``).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from ..reward.settings import Penalties
from .env import GUARDS
from .settings import EpisodeSettings


class EpisodeRewardFunc:
    __name__ = "episode"  # TRL's name for it in the logs (rewards/episode/mean)

    def __init__(self, settings: EpisodeSettings, *, log: Path | None = None, rank: int = 0, seed: int = 0) -> None:
        self.s, self.log, self.rank, self.seed = settings, log, rank, seed

    def given(self, rewards: list[float | None], step: int | None) -> list[float | None]:
        """The rewards TRL gets: the episodes' own, or (``shuffle_rewards``) the scored ones in a seeded order."""
        if not self.s.shuffle_rewards:
            return rewards
        moved = [r for r in rewards if r is not None]
        random.Random(f"{self.seed}:{self.rank}:{step}").shuffle(moved)
        taken = iter(moved)
        return [None if r is None else next(taken) for r in rewards]

    async def __call__(self, prompts: list[Any], completions: list[Any], episode: list[str] | None = None,
                       **kw: Any) -> list[float | None]:  # fmt: skip
        if episode is None:
            raise ValueError("the episode reward needs the rollout's 'episode' field (grpo.episodes.enabled)")
        records = [json.loads(e) for e in episode]
        state = kw.get("trainer_state")
        step = int(state.global_step) + 1 if state is not None else None  # the step these episodes train
        given = self.given([r["reward"] for r in records], step)
        self._record(records, given, step, kw.get("log_metric"))
        return given

    def _record(self, records: list[dict[str, Any]], given: list[float | None], step: int | None,
                log_metric: Any) -> None:  # fmt: skip
        replies = sum(r["turns"] for r in records)
        if log_metric is not None and records:
            hits = Counter(p for r in records for p in r["penalties"])
            for name in [*Penalties.model_fields, *GUARDS]:
                log_metric(f"penalty/{name}", hits.get(name, 0) / max(replies, 1))
            log_metric("episode_turns", replies / len(records))
            log_metric("reward_unscored", sum(r["status"] != "ok" for r in records) / len(records))
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a", encoding="utf-8") as f:
                for r, g in zip(records, given, strict=True):
                    f.write(json.dumps({"step": step, "rank": self.rank, **r, "trained_on": g}, ensure_ascii=False)
                            + "\n")  # fmt: skip
