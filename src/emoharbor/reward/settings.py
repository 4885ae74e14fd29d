"""The reward's settings: the weights of the simulated user's reaction and the penalties.

reward = relief * w_relief + trust * w_trust + fit * w_fit - (the weight of every penalty the reply hits)

- ``relief``: how much better the user feels, the Feeler's ``feel_better`` over ``intensity_step``
  (-1..1; emotion intensity falls by ``feel_better``).
- ``trust``: the Feeler's ``trust_change`` over ``trust_step`` (-1..1).
- ``fit``: the Appraiser's verdict on whether the reply fits the person: good 1, mixed 0, poor -1.

With the default weights (0.5, 0.3, 0.2) a reaction is worth -1..1 and each penalty costs 1. A reaction
that does not parse (the Appraiser's or the Feeler's) gives no reward at all: the sample is dropped and
counted as unscored, never scored as 0.

With ``readout: expected`` (the default) relief, trust and fit are the user's probability-weighted readouts
(``ChainUser.perceive``): the mean of the scale's values weighted by the probability the model gave each,
so that two replies that get the same written step still get different rewards. A backend without
log-probabilities gives the written values, and each such reply says so (``readout: written``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    # the simulated user's bounds (as in an EmoHarbor run's user settings)
    intensity_step: int = Field(default=15, ge=1, le=50)
    trust_step: int = Field(default=20, ge=1, le=50)
    initial_trust: int = Field(default=40, ge=0, le=100)
    max_tokens: int = Field(default=200, ge=16)  # per Appraiser or Feeler call
    # expected: the reaction's parts read as the model's probabilities over the fit and the Feeler's scale
    # (written values where the backend gives no log-probabilities: each such reply says readout "written")
    readout: Literal["expected", "written"] = "expected"
    top_logprobs: int = Field(default=20, ge=2, le=20)
    concurrency: int = Field(default=8, ge=1)  # replies scored at once
    seed: int = 0
