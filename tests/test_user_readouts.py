"""The simulated user's probability-weighted readouts: the fit from the word's first token, the Feeler's
steps from its digits, recorded beside the written values and used by the reward."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from emoharbor.models.base import ChatResult, Message, TokenLogprob
from emoharbor.models.expected import expected_word
from emoharbor.profiles.loader import load_profile_file
from emoharbor.reward.context import RewardContext
from emoharbor.reward.score import UserReward
from emoharbor.reward.settings import RewardSettings
from emoharbor.simulate.chain_user import FIT, ChainSettings, ChainUser
from emoharbor.simulate.conversation import Turn

PROFILE = load_profile_file(Path(__file__).parent.parent / "examples" / "profile.yaml")[0]
APPRAISAL = {"understood": "u", "needs_met": [], "needs_missed": [], "about_me": True, "disliked": False,
             "fit": "good", "crisis_referral": False}  # fmt: skip
FEEL = {"thought": "a bit better", "better": 5, "trust": 4}
# the alternatives where the model wrote its fit ("good") and its two digits (5, then 4)
FIT_ALTS = {"good": 0.6, "po": 0.3, "mixed": 0.1}
BETTER_ALTS = {"5": 0.5, "7": 0.3, "4": 0.2}  # a mean of 5.4: +7 of 15, where 5 is +5
TRUST_ALTS = {"4": 0.8, "2": 0.2}


def tokenise(text: str, alts: dict[int, dict[str, float]]) -> tuple[TokenLogprob, ...]:
    """``text`` as tokens (runs of letters, digits, or one other character), with alternatives at the
    tokens starting at the given offsets."""
    out = []
    for m in re.finditer(r"[A-Za-z]+|\d|.", text, re.S):
        a = alts.get(m.start(), {})
        out.append(
            TokenLogprob(m.group(0), math.log(a.get(m.group(0), 1.0)), tuple((k, math.log(p)) for k, p in a.items()))
        )
    return tuple(out)


class ReadoutModel:
    """Answers the Appraiser and the Feeler, with log-probabilities (``logprobs``) or without; ``fence``
    wraps the answer in a code fence as some endpoints do."""

    name = "readouts"

    def __init__(self, *, logprobs: bool = True, fence: bool = False) -> None:
        self.logprobs, self.fence = logprobs, fence
        self.asked: list[int] = []

    async def chat(self, messages: list[Message], *, json_schema: dict[str, Any] | None = None,
                   max_tokens: int | None = None, seed: int | None = None, prompt_version: str = "",
                   top_logprobs: int = 0) -> ChatResult:  # fmt: skip
        self.asked.append(top_logprobs)
        props = (json_schema or {}).get("properties", {})
        data = APPRAISAL if "fit" in props else FEEL
        text = json.dumps(data)
        alts: dict[int, dict[str, float]] = {}
        if "fit" in props:
            alts[text.index('"fit": "') + len('"fit": "')] = FIT_ALTS
        else:
            alts[text.index('"better": ') + len('"better": ')] = BETTER_ALTS
            alts[text.index('"trust": ') + len('"trust": ')] = TRUST_ALTS
        shown = f"```json\n{text}\n```" if self.fence else text
        shift = len("```json\n") if self.fence else 0
        toks = tokenise(shown, {k + shift: v for k, v in alts.items()})
        return ChatResult(text=shown, logprobs=toks if self.logprobs and top_logprobs else None)


def perceive(model: ReadoutModel, **settings: Any) -> Any:
    user = ChainUser(model, PROFILE, ChainSettings(**settings))  # type: ignore[arg-type]
    turns = [Turn(speaker="user", text="I lost my job."), Turn(speaker="supporter", text="That sounds hard.")]
    return user, asyncio.run(user.perceive(turns, seed=1))


@pytest.mark.parametrize("fence", [False, True])
def test_the_readouts_are_the_models_probabilities_beside_the_written_values(fence: bool) -> None:
    user, step = perceive(ReadoutModel(fence=fence))
    a, f = step.inner["appraisal"], step.inner["feeling"]
    assert a["fit"] == "good" and a["fit_expected"] == pytest.approx(0.6 * 1 + 0.3 * -1 + 0.1 * 0)
    assert f["feel_better"] == 5  # the written 5: a little better, +5 of 15
    assert f["feel_better_expected"] == pytest.approx((0.5 * 5 + 0.3 * 7 + 0.2 * 4 - 4) / 3 * 15)
    assert f["trust_change_expected"] == pytest.approx((0.8 * 4 + 0.2 * 2 - 4) / 3 * 20)
    assert user.state.intensity == PROFILE.emotional_state.intensity - 5  # the written step moves the state
    assert not [e for e, _ in step.events if e == "readout_written"]


def test_the_state_can_follow_the_expected_step() -> None:
    user, _ = perceive(ReadoutModel(), readout="expected")
    assert user.state.intensity == PROFILE.emotional_state.intensity - 7  # not the written 5


def test_without_log_probabilities_the_written_values_stand_and_say_so() -> None:
    model = ReadoutModel(logprobs=False)
    _, step = perceive(model)
    assert step.inner["appraisal"]["fit_expected"] is None and step.inner["feeling"]["feel_better_expected"] is None
    assert ("readout_written", "no token log-probabilities: the written values stand") in step.events
    _, step = perceive(ReadoutModel(), top_logprobs=0)  # not asked: none read, none claimed
    assert step.inner["appraisal"]["fit_expected"] is None and not step.events


def test_the_reward_reads_the_expected_parts() -> None:
    ctx = RewardContext("c", "profile", PROFILE, [Turn(speaker="user", text="I lost my job.")], 70, 40)
    s = asyncio.run(UserReward(ReadoutModel(), RewardSettings()).score(ctx, "That sounds hard. What happened?"))
    assert s.status == "ok" and s.readout == "expected"
    ex = s.expected
    assert ex["fit"] == pytest.approx(0.3) and ex["relief"] == pytest.approx(7 / 15)
    assert ex["trust"] == pytest.approx((3.6 - 4) / 3)
    assert s.reward == pytest.approx(0.5 * ex["relief"] + 0.3 * ex["trust"] + 0.2 * ex["fit"])
    assert s.relief == pytest.approx(1 / 3) and s.fit == pytest.approx(1.0)  # the written parts are kept
    written = asyncio.run(UserReward(ReadoutModel(), RewardSettings(readout="written")).score(ctx, "Tell me more?"))
    assert written.readout == "written" and written.reward == pytest.approx(0.5 / 3 + 0.2)
    none = asyncio.run(UserReward(ReadoutModel(logprobs=False), RewardSettings()).score(ctx, "Tell me more?"))
    assert none.readout == "written" and none.reward == pytest.approx(written.reward)


def test_a_word_is_read_from_its_first_token_only_when_that_token_begins_one_word() -> None:
    text = '{"fit": "mixed"}'
    toks = (TokenLogprob('{"fit": "', 0.0), TokenLogprob("mi", math.log(0.5), (("mi", math.log(0.5)),
            ("g", math.log(0.3)), ("p", math.log(0.2)))), TokenLogprob('xed"}', 0.0))  # fmt: skip
    assert expected_word(text, toks, "fit", FIT) == pytest.approx(0.5 * 0 + 0.3 * 1 + 0.2 * -1)
    merged = (TokenLogprob('{"fit": "mi', 0.0), TokenLogprob('xed"}', 0.0))  # the word shares a token with the key
    assert expected_word(text, merged, "fit", FIT) is None
    assert expected_word(text, None, "fit", FIT) is None
