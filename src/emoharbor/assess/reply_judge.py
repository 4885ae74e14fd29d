"""Rating one supporter reply in its context with a card of a form that rates a reply (the built-in ``reply``:
the conversation so far and the reply, one score per rubric key; the sensitivity suite's third-party judge of
a reply). The record is an assessment's (``judge.assessment_record``): written scores, and with ``scoring:
expected`` the probability-weighted ones."""

from __future__ import annotations

from typing import Any

from ..models.base import ChatModel
from ..simulate.conversation import Turn
from .cards import JudgeCard
from .judge import answer_text, ask_card
from .judge_forms import Asked, ReplyForm, card_form, register_judge_form


def reply_messages(card: JudgeCard, turns: list[Turn], reply: str) -> Asked:
    p = card.prompt_file()
    transcript = "\n".join(f"{'Seeker' if t.speaker == 'user' else 'Supporter'}: {t.text}" for t in turns)
    text = p.render(rubric=card.rubric_file().prompt_text(), answer=answer_text(card), transcript=transcript,
                    reply=reply.strip())  # fmt: skip
    return [{"role": "user", "content": text}], f"{card.version}+{p.version}"


async def judge_reply(
    card: JudgeCard, model: ChatModel, judge: str, turns: list[Turn], reply: str, seed: int = 0
) -> dict[str, Any]:
    messages, version = card_form(card, ReplyForm).messages(card, turns, reply)
    return await ask_card(card, model, judge, messages, version, seed)


register_judge_form(ReplyForm(name="reply", shown=("conversation so far", "reply"), prompt="builtin:reply_judge",
                              messages=reply_messages))  # fmt: skip
