"""More judge cards on a HEART run, each rating every usable candidate reply on its own: cards of a form that
rates one reply (``third_party_reply``), given to ``emoharbor heart score-replies RUN --judge CARD``. On a run imported
from replies rated by people (``heart import-rated``), ``heart agreement`` sets their scores beside the
people's ratings (``analysis.people``).

Store table ``reply_score`` (key: history, competitor, judge): the card's assessment of the reply
(``assess.judge.assessment_record``: written scores, and with ``scoring: expected`` the probability-weighted
ones), one unit each, resumable like every stage. The judges are recorded in the run's meta (``judges``), so a
changed card under a used name is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...assess.reply_judge import judge_reply
from ...assess.stage import Judge, check_judges, judge_models, make_judges
from ...models.base import ModelCallError
from ...models.pool import ModelPool
from ...models.spec import ModelSpec
from ...simulate.conversation import Turn
from ...store.keys import Key
from ...store.run_store import call_sink
from ...store.units import Events, Work, run_stage
from ..histories import SEEKER, History
from .pipeline import candidates, histories, read_run

KIND = "reply_score"


HEART_CARDS = (
    "a HEART run is rated further by cards that rate one reply (third_party_reply); pairwise judges "
    "are its config's judges"
)


def turns_of(h: History) -> list[Turn]:
    return [Turn(speaker="user" if t.speaker == SEEKER else "supporter", text=t.text) for t in h.turns]


async def score_replies(run_dir: Path, cards: list[str], judge: ModelSpec | None, *, scoring: str | None = None,
                        progress: bool = True) -> int:  # fmt: skip
    """Rate every usable candidate reply of the run with ``cards`` (on ``judge``, default the run's first judge's
    model); returns how many scores were made now."""
    store, config, _ = read_run(run_dir)
    try:
        first = config.judges[0]
        default = judge or ModelSpec.model_validate(first.model_dump(exclude={"name", "card"}))
        judges = make_judges(cards, default, rates=("reply",), scoring=scoring, wanted=HEART_CARDS)
        check_judges(store, judges)
        hs = histories(store)
        replies = [c for c in candidates(store).values() if c["status"] == "ok" and c["history_id"] in hs]
        before = len(store.keys(KIND))
        async with ModelPool(cache_path=True, sink=call_sink(store)) as pool:
            models = await judge_models(pool, judges)

            def work_of(j: Judge, h: History, cand: dict[str, Any]) -> Work:
                async def work() -> tuple[dict[str, Any], Events]:
                    base = {"history_id": h.id, "subset": h.subset, "competitor": cand["competitor"], "judge": j.name}
                    try:
                        rec = await judge_reply(j.card, models[j.name], j.name, turns_of(h), cand["text"],
                                                seed=config.seed)  # fmt: skip
                    except ModelCallError as e:
                        return {**base, "status": "error", "error": str(e)[:500]}, [("model_error", str(e)[:200])]
                    events: Events = [("unscored", f"{j.name}: {rec['error'][:160]}")] if rec["status"] != "ok" else []
                    if rec.get("expected_error") and rec["status"] == "ok":
                        events.append(("expected_unscored", f"{j.name}: {rec['expected_error'][:160]}"))
                    return {**rec, **base}, events

                return work

            units: list[tuple[Key, Work]] = [
                ((c["history_id"], c["competitor"], j.name), work_of(j, hs[c["history_id"]], c))
                for j in judges
                for c in replies
            ]
            # one card on one history's replies in a row: they share the history's prompt prefix
            await run_stage(store, KIND, units, workers=config.concurrency, progress=progress,
                            label="reply scores", group=lambda k: (k[0], k[2]))  # fmt: skip
        return len(store.keys(KIND)) - before
    finally:
        store.close()
