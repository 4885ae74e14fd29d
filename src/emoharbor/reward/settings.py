"""The reward's settings: the weights of the simulated user's reaction and the penalties.

reward = relief * w_relief + trust * w_trust + fit * w_fit - (the weight of every penalty the reply hits)

- ``relief``: how much better the user feels, the Feeler's ``feel_better`` over ``user_agent.intensity_step``
  (-1..1; emotion intensity falls by ``feel_better``).
- ``trust``: the Feeler's ``trust_change`` over ``user_agent.trust_step`` (-1..1).
- ``fit``: the Appraiser's verdict on whether the reply fits the person: good 1, mixed 0, poor -1.

With the default weights (0.5, 0.3, 0.2) a reaction is worth -1..1 and each penalty costs 1. A reaction
that does not parse (the Appraiser's or the Feeler's) gives no reward at all: the sample is dropped and
counted as unscored, never scored as 0.

With ``readout: expected`` (the default) relief, trust and fit are the user's probability-weighted readouts
(``ChainUser.perceive``): the mean of the scale's values weighted by the probability the model gave each,
so that two replies that get the same written step still get different rewards. A backend without
log-probabilities gives the written values, and each such reply says so (``readout: written``).

The simulated user is the ``user_agent:`` block of every command (``simulate/agents.py``): an agent with
reactions (``chain``, ``rules``), its bounds and budgets. The old spelling (``intensity_step``, ``trust_step``,
``initial_trust``, ``max_tokens``, ``top_logprobs`` beside the weights) is read into it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..simulate.agents import ReactionBlock, default_user

OLD_USER_KEYS = ("intensity_step", "trust_step", "initial_trust", "max_tokens", "top_logprobs")  # in user_agent


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Penalties(_Strict):
    broke_character: float = Field(default=1.0, ge=0)  # written as the seeker, or as an AI disclaiming itself
    labels: float = Field(default=1.0, ge=0)  # speaker labels or headings ("Supporter:", "Response:")
    json_or_code: float = Field(default=1.0, ge=0)  # a JSON object, a code block or chat tokens, not a message
    repeats_context: float = Field(default=1.0, ge=0)  # (nearly) a turn of the conversation again
    too_long: float = Field(default=1.0, ge=0)  # more than max_words words
    empty: float = Field(default=1.0, ge=0)  # nothing to say (the user is not asked)


class RewardSettings(_Strict):
    relief: float = 0.5
    trust: float = 0.3
    fit: float = 0.2
    penalties: Penalties = Field(default_factory=Penalties)
    max_words: int = Field(default=120, ge=1)
    repeat_ratio: float = Field(default=0.8, gt=0, le=1)  # similarity at which a reply repeats a context turn
    # the simulated user who reacts (an agent with reactions), as in every command's user_agent: block
    user_agent: ReactionBlock = Field(default_factory=default_user)
    # expected: the reaction's parts read as the model's probabilities over the fit and the Feeler's scale
    # (written values where the backend gives no log-probabilities: each such reply says readout "written")
    readout: Literal["expected", "written"] = "expected"
    concurrency: int = Field(default=8, ge=1)  # replies scored at once
    seed: int = 0

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        """The user's settings at the top level (the old spelling), read into ``user_agent``."""
        if not isinstance(data, dict) or not any(k in data for k in OLD_USER_KEYS):
            return data
        data = dict(data)
        block = data.get("user_agent") or {}
        block = {"agent": block} if isinstance(block, str) else dict(block)
        for key in OLD_USER_KEYS:
            if key in data:
                if key in block:
                    raise ValueError(f"{key} is given twice, at the top level (the old spelling) and in user_agent")
                block[key] = data.pop(key)
        data["user_agent"] = block
        return data
