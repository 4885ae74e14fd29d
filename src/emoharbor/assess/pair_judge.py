"""The built-in form that compares two replies: ``heart_pairwise``, HEART's blinded judge. It is shown the
conversation so far and two next replies under neutral ids, and names a winner and a strength per dimension
(the dimensions are the run's, described in the system prompt ``heart_judge_system``; its card's prompt is
the user message). HEART's comparisons, the sensitivity suite's pairs and evolve's judge check ask it
(``heart.stages.judging.judge_pair``)."""

from __future__ import annotations

from ..models.base import Message
from ..prompts import load_prompt
from .cards import JudgeCard
from .judge_forms import Asked, Pair, PairForm, register_judge_form


def pair_messages(card: JudgeCard, pair: Pair) -> Asked:
    (id_first, reply_first), (id_second, reply_second) = pair.first, pair.second
    id_one, id_two = sorted([id_first, id_second])
    system = load_prompt("heart_judge_system")
    sys_text = system.render(dimensions=pair.dimensions)  # the same for every call: a cacheable prefix
    user_text = card.prompt_file().render(
        context=pair.context, transcript=pair.transcript, id_first=id_first, reply_first=reply_first,
        id_second=id_second, reply_second=reply_second, keys=", ".join(f'"{k}"' for k in pair.keys), id_one=id_one,
        id_two=id_two)  # fmt: skip
    messages: list[Message] = [{"role": "system", "content": sys_text.strip()},
                               {"role": "user", "content": user_text.strip()}]  # fmt: skip
    return messages, f"{system.version}+{card.version}"


register_judge_form(PairForm(name="heart_pairwise", shown=("conversation so far", "two replies"),
                             prompt="builtin:heart_judge_user", messages=pair_messages))  # fmt: skip
