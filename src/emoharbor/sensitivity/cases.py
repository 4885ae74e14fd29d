"""The cases of a sensitivity suite: a real context that ends on the seeker's turn and the real reply that
followed it, from ESConv records, HEART histories or an EmoHarbor run folder (``reward.context`` cuts them).

- ESConv: one cut per record whose seeker rated the supporter's empathy 4-5 (the real reply is support the
  seeker valued), at the first seeker turn from the third on that has something to answer (at least
  ``MIN_WORDS`` words) and is followed by a supporter message of at least ``MIN_WORDS`` words: the problem is
  on the table by then, an earlier supporter message exists to repeat, and an earlier seeker turn to answer
  instead of the last. Early cuts also keep the prompts short.
- HEART: each history that ends on the seeker and whose file has the human supporter's reply.
- A run folder: each simulated talk cut at its second user turn or later, the supporter's actual next turn
  as the reply (a model's reply, not a human's: such a suite measures whether a scorer prefers what the run's
  supporter said to rule-made bad replies).

Every case also keeps the other seeker and supporter texts of its source (``pool``), from which the
off-target reply and the wrong facts are drawn (``bad.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..data.esconv import EsconvDialog, load_esconv
from ..heart.config import HistorySource, Subset
from ..profiles.esconv_import import draft_profile
from ..reward.context import (
    FIRST_SEEKER_TURN,
    RewardContext,
    conversation_contexts,
    dialog_contexts,
    heart_dialog,
    load_heart_histories,
    run_talks,
    talk,
)
from ..scoring.case import Case
from ..simulate.conversation import Turn, words

MIN_WORDS = 8
MIN_EMPATHY = 4


@dataclass
class Pool:
    """Real texts of other talks: supporter replies (for off-target) and seeker turns (for wrong facts), each
    with the talk it came from and its problem type."""

    replies: list[tuple[str, str, str]] = field(default_factory=list)  # (dialog id, problem, text)
    seeker: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, dialog: str, problem: str, turns: list[Turn]) -> None:
        for t in turns:
            if words(t.text) >= MIN_WORDS:
                (self.seeker if t.speaker == "user" else self.replies).append((dialog, problem, t.text))


def esconv_cut(d: EsconvDialog, initial_trust: int) -> Case | None:
    """The record's case, or None when it has no cut that qualifies (see the module's doc)."""
    turns = talk(d)
    for ctx in dialog_contexts(d, "esconv", initial_trust, evaluation_only=True):
        at = sum(t.speaker == "user" for t in ctx.turns) - 1  # the cut seeker turn's place among the seeker's
        nxt = turns[len(ctx.turns)]
        if at >= FIRST_SEEKER_TURN and words(ctx.turns[-1].text) >= MIN_WORDS and words(nxt.text) >= MIN_WORDS:
            return Case(ctx.id, "esconv", ctx, nxt.text, d.problem_type)
    return None


def esconv_cases(path: Path, initial_trust: int, pool: Pool) -> list[Case]:
    dialogs = load_esconv(path)
    for d in dialogs:
        pool.add(d.id, d.problem_type, talk(d))
    good = [d for d in dialogs if (d.survey.get("empathy") or 0) >= MIN_EMPATHY]
    return [c for d in good if (c := esconv_cut(d, initial_trust)) is not None]


def heart_cases(path: Path, subset: Subset, initial_trust: int, pool: Pool) -> list[Case]:
    out = []
    for i, h in enumerate(load_heart_histories(HistorySource(path=str(path), subset=subset))):
        d = heart_dialog(h, i)
        conv = talk(d)
        pool.add(h.id, h.problem_type, conv)
        real = (h.human_reply or "").strip()
        replies = sum(t.speaker == "supporter" for t in conv)  # none: nothing to repeat (every case has one)
        if not conv or conv[-1].speaker != "user" or not real or not replies:
            continue
        profile = draft_profile(d, evaluation_only=True)
        ctx = RewardContext(f"heart:{h.id}", "heart", profile, conv, profile.emotional_state.intensity,
                            initial_trust, replies, h.id)  # fmt: skip
        out.append(Case(ctx.id, "heart", ctx, real, h.problem_type))
    return out


def run_cases(folder: Path, pool: Pool) -> list[Case]:
    """Each talk of an EmoHarbor run cut at its second user turn or later, with the supporter's next turn."""
    out = []
    for c, profile in run_talks(folder, "emoharbor"):
        problem = profile.situation.problem_type
        pool.add(c.id, problem, c.turns)
        for ctx in conversation_contexts(c, profile):
            n = len(ctx.turns)
            if ctx.turn >= 1 and n < len(c.turns) and c.turns[n].speaker == "supporter":
                out.append(Case(ctx.id, "run", ctx, c.turns[n].text, problem))
                break
    return out
