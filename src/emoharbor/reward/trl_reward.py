"""The simulated user's reward as a TRL reward function: ``GRPOTrainer(reward_funcs=[UserRewardFunc(...)])``.

TRL calls it with the prompts, the completions and the dataset's other columns; the dataset must have a
``context`` column (``RewardContext.to_json()``), which tells the user who it is and what was said. It is
async (TRL awaits it on its own event loop, where the model pool lives), returns one reward per completion
and ``None`` for a completion that got none (TRL then gives it no advantage), and writes every scored
reply, with its step, to a JSONL log. Penalty and unscored rates go to TRL's log as ``penalty/NAME`` and
``reward_unscored``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..models.base import ChatModel
from ..models.spec import ModelSpec
from .context import RewardContext
from .score import Scored, UserReward
from .settings import Penalties, RewardSettings


def completion_text(c: Any) -> str:
    """A completion as TRL hands it: text, or (conversational) a list of messages ending on the reply."""
    if isinstance(c, str):
        return c
    if isinstance(c, list) and c and isinstance(c[-1], dict):
        return str(c[-1].get("content") or "")
    return str(c)


class UserRewardFunc:
    __name__ = "simulated_user"  # TRL's name for it in the logs (rewards/simulated_user/mean)

    def __init__(self, user: ModelSpec | ChatModel, settings: RewardSettings | None = None, *, log: Path | None = None,
                 rank: int = 0, cache: bool = True) -> None:  # fmt: skip
        self.user = user
        self.s = settings or RewardSettings()
        self.log = log
        self.rank = rank
        self.cache = cache
        self.totals: Counter[str] = Counter()
        self._pool: Any = None
        self._reward: UserReward | None = None

    async def _scorer(self) -> UserReward:
        if self._reward is None:
            model = self.user
            if isinstance(model, ModelSpec):
                from ..models.pool import ModelPool

                self._pool = ModelPool(cache_path=True if self.cache else None)
                model = await self._pool.get(model, "user")
            self._reward = UserReward(model, self.s)
        return self._reward

    async def __call__(self, prompts: list[Any], completions: list[Any], context: list[str] | None = None,
                       **kw: Any) -> list[float | None]:  # fmt: skip
        if context is None:
            raise ValueError("the simulated-user reward needs a 'context' column in the training set")
        scorer = await self._scorer()
        items = [(RewardContext.from_dict(json.loads(c)), completion_text(r)) for c, r in zip(context, completions,
                                                                                             strict=True)]  # fmt: skip
        scored = await scorer.score_many(items)
        state = kw.get("trainer_state")
        step = int(state.global_step) + 1 if state is not None else None  # the step these completions train
        self._record(scored, step, kw.get("log_metric"))
        return [s.reward for s in scored]

    def _record(self, scored: list[Scored], step: int | None, log_metric: Any) -> None:
        self.totals.update(s.status for s in scored)
        self.totals["replies"] += len(scored)
        hits = Counter(p for s in scored for p in s.penalties)
        self.totals.update({f"penalty:{k}": v for k, v in hits.items()})
        if log_metric is not None and scored:
            for name in Penalties.model_fields:
                log_metric(f"penalty/{name}", hits.get(name, 0) / len(scored))
            log_metric("reward_unscored", sum(s.status != "ok" for s in scored) / len(scored))
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a", encoding="utf-8") as f:
                for s in scored:
                    f.write(json.dumps({"step": step, "rank": self.rank, **s.to_dict()}, ensure_ascii=False) + "\n")

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
            self._reward = None
