"""A case, the scorers' units of work on its replies, and the models they need.

- ``score`` units (key ``(..., reply, scorer)``, the reply ``real`` or a bad reply's maker): ``user``, the
  simulated user's reaction and reward (``reward.score.Scored``), or a reply card's assessment
  (``assess.reply_judge``);
- ``pair`` units (key ``(case, maker, judge, order)``): a card that compares two replies (``heart_pairwise``)
  on the real reply against another, shown first (``ab``) or second (``ba``), through HEART's own judging.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from ..assess.reply_judge import judge_reply
from ..assess.stage import Judge, judge_models
from ..heart.histories import SEEKER, SUPPORTER, History
from ..heart.histories import Turn as HeartTurn
from ..models.base import ChatModel, ModelCallError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..reward.score import UserReward
from ..reward.settings import RewardSettings
from ..simulate.agents import user_agent
from ..store.keys import Key
from ..store.units import Events, Work
from .case import Case
from .names import REAL, USER


@dataclass(frozen=True)
class Item:
    """One scorer on one reply (a pairwise judge: on the real reply against another, in one order)."""

    table: str  # score | pair
    key: Key  # its unit's key: (..., reply, scorer), and the order for a pair
    case: Case
    which: str  # the reply: ``real`` or a bad reply's maker (stored as ``reply_kind``, a pair's as ``bad_kind``)
    reply: str
    judge: Judge | None  # None: the simulated user
    order: str = ""


def case_seed(seed: int, case_id: str) -> int:
    return seed + zlib.crc32(case_id.encode())


def history_of(case: Case) -> History:
    turns = [HeartTurn(SEEKER if t.speaker == "user" else SUPPORTER, t.text) for t in case.context.turns]
    return History(case.id, "regular", case.source, turns, problem_type=case.problem)


def _user_work(reward: UserReward, case: Case, which: str, reply: str, seed: int) -> Work:
    async def work() -> tuple[dict[str, Any], Events]:
        s = await reward.score(case.context, reply, seed=seed)
        events: Events = [(f"user_{s.status}", s.error[:160])] if s.status != "ok" else []
        if s.status == "ok" and s.readout != reward.s.readout and s.penalties != ["empty"]:
            events.append(("readout_written", "no token log-probabilities: the written values stand"))
        return {**s.to_dict(), "case": case.id, "reply_kind": which, "scorer": USER}, events

    return work


def _card_work(judge: Judge, model: ChatModel, case: Case, which: str, reply: str, seed: int) -> Work:
    async def work() -> tuple[dict[str, Any], Events]:
        base = {"case": case.id, "reply_kind": which, "scorer": judge.name}
        try:
            rec = await judge_reply(judge.card, model, judge.name, case.context.turns, reply, seed=seed)
        except ModelCallError as e:
            return {**base, "status": "error", "error": str(e)}, [("model_error", str(e)[:200])]
        events: Events = [("unscored", f"{judge.name}: {rec['error'][:160]}")] if rec["status"] != "ok" else []
        return {**rec, **base}, events

    return work


def _pair_work(judge: Judge, model: ChatModel, case: Case, maker: str, other: str, order: str,
               seed: int) -> Work:  # fmt: skip
    from ..heart.stages.judging import Shown, judge_pair, neutral_ids

    async def work() -> tuple[dict[str, Any], Events]:
        i_real, i_other = neutral_ids(case.id, REAL, maker)
        real, shown = Shown(REAL, i_real, case.real), Shown(maker, i_other, other)
        first, second = (real, shown) if order == "ab" else (shown, real)
        rec, events = await judge_pair(model, judge.name, history_of(case), first, second, a=REAL, order=order,
                                       dimensions=[], retries=2, seed=seed, show_situation=False,
                                       card=judge.card)  # fmt: skip
        return {**rec, "case": case.id, "bad_kind": maker, "scorer": judge.name}, events

    return work


async def scorer_models(pool: ModelPool, todo: list[Item], user: ModelSpec | None, reward: RewardSettings,
                        judges: list[Judge]) -> tuple[UserReward | None, dict[str, ChatModel]]:  # fmt: skip
    """The simulated user's reward (when ``todo`` has its items; its model only when its agent calls one) and
    the model of each judge that has items left: nothing else is started."""
    scored = None
    if user is not None and any(i.judge is None for i in todo):
        needs = user_agent(reward.user_agent.agent).needs_model
        scored = UserReward(await pool.get(user, "user") if needs else None, reward)
    needed = {i.judge.name for i in todo if i.judge is not None}
    return scored, await judge_models(pool, [j for j in judges if j.name in needed])


def work_of(item: Item, reward: UserReward | None, models: dict[str, ChatModel], seed: int) -> Work:
    s = case_seed(seed, item.case.id)
    if item.judge is None:
        assert reward is not None
        return _user_work(reward, item.case, item.which, item.reply, s)
    m = models[item.judge.name]
    if item.table == "score":
        return _card_work(item.judge, m, item.case, item.which, item.reply, s)
    return _pair_work(item.judge, m, item.case, item.which, item.reply, item.order, s)
