"""The judge check of a refined pair: a pairwise judge (a HEART pairwise card on any ChatModel) sees the
context and both replies under neutral ids, in both orders; the pair is kept only if it prefers the chosen
(refined) reply both times. A judge that cannot be read, or that flips with the order, keeps nothing."""

from __future__ import annotations

from ..assess.cards import JudgeCard
from ..heart.dimensions import OVERALL
from ..heart.histories import SEEKER, SUPPORTER, History, Turn
from ..heart.stages.judging import Shown, judge_pair, neutral_ids
from ..models.base import ChatModel, ModelCallError
from .data import ChatExample

Events = list[tuple[str, str]]
CHOSEN, REJECTED = "chosen", "rejected"


def context_history(ex: ChatExample) -> History:
    turns = [Turn(SEEKER if m["role"] == "user" else SUPPORTER, m["content"]) for m in ex.messages
             if m["role"] in ("user", "assistant")]  # fmt: skip
    return History(ex.id, "evolve", "refine", turns)


async def judge_verdict(model: ChatModel, card: JudgeCard, ex: ChatExample, chosen: str, rejected: str, *,
                        retries: int, seed: int) -> tuple[str, Events]:  # fmt: skip
    """ "" when the judge prefers ``chosen`` in both orders; else why the pair is dropped: ``judge_unscored``
    (an order it did not answer in the schema), ``judge_flipped`` (its winner changed with the order) or
    ``judge_prefers_rejected``. A model call that fails for good raises (the unit is redone)."""
    history = context_history(ex)
    id_c, id_r = neutral_ids(ex.id, CHOSEN, REJECTED)
    c, r = Shown(CHOSEN, id_c, chosen), Shown(REJECTED, id_r, rejected)
    winners: list[str] = []
    events: Events = []
    for order, (first, second) in (("ab", (c, r)), ("ba", (r, c))):
        rec, evs = await judge_pair(model, card.name, history, first, second, a=CHOSEN, order=order, dimensions=[],
                                    retries=retries, seed=seed, show_situation=False, card=card)  # fmt: skip
        events += evs
        if rec["status"] != "ok":
            if rec["status"] == "error":
                raise ModelCallError(rec["error"])  # the unit ends in error and is redone by the next run
            return "judge_unscored", events
        winners.append(rec["verdicts"][OVERALL]["winner"])
    if winners == [CHOSEN, CHOSEN]:
        return "", events
    return ("judge_flipped" if len(set(winners)) > 1 else "judge_prefers_rejected"), events
