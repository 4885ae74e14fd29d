"""The built-in form that chooses between two replies as the seeker: ``seeker_choice``. The seeker is sketched
from what the history says of them (their situation in their own words and the emotion they named: no more
is known, so nothing more is invented), shown the conversation and two next replies as Reply 1 and Reply 2,
and asked which would help them more. It answers the reply's number only (``PairForm.chooses``), so with
``scoring: expected`` its choice is also read as the probability of each digit (``models.expected``).
HEART's judging asks it (``heart.stages.judging.judge_pair``) in both orders."""

from __future__ import annotations

from ..prompts import load_prompt
from .cards import JudgeCard
from .judge_forms import Asked, Pair, PairForm, register_judge_form

SKETCH = "seeker_choice_sketch"  # the words of the sketch


def seeker_sketch(pair: Pair) -> str:
    """Who the seeker is, in the second person, from the history's emotion and situation ("" when it has none)."""
    said = load_prompt(SKETCH).entries()
    lines = [said["feel"].render(emotion=pair.emotion) if pair.emotion else "",
             said["happened"].render(situation=pair.situation) if pair.situation else ""]  # fmt: skip
    return "".join(f"{line}\n" for line in lines if line)


def choice_messages(card: JudgeCard, pair: Pair) -> Asked:
    p = card.prompt_file()
    text = p.render(seeker=seeker_sketch(pair), transcript=pair.transcript, reply_first=pair.first[1],
                    reply_second=pair.second[1])  # fmt: skip
    return [{"role": "user", "content": text.strip()}], f"{card.version}+{p.version}+{load_prompt(SKETCH).version}"


register_judge_form(PairForm(name="seeker_choice", shown=("the seeker's situation and emotion", "conversation so far",
                                                          "two replies"),
                             prompt="builtin:seeker_choice", messages=choice_messages, chooses=True))  # fmt: skip
