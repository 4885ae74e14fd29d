"""The settings of episodes (``grpo.episodes``): how long a talk runs, what its reward is (and, for the
``judge`` reward, which judge card on which model), and the guards against reward hacking (``guards``) with
their costs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..models.spec import ModelSpec, spec_input


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuardPenalties(_Strict):
    """What each guard costs per step it is hit, on top of the reward's own penalties (``reward.penalties``)."""

    flattery: float = Field(default=1.0, ge=0)  # sycophantic praise ("you are so strong", "what a great question")
    ends_early: float = Field(default=1.0, ge=0)  # says goodbye or asks to end before guard_turns replies


class EpisodeSettings(_Strict):
    enabled: bool = False  # true: the policy talks whole episodes with the user (false: one reply per context)
    max_turns: int = Field(default=4, ge=1, le=32)  # supporter replies in an episode at most
    # final: the change from the episode's start to its end (intensity drop, trust change, the last reply's fit),
    # weighted as grpo.reward weighs one reply's; sum: the per-reply rewards added up; judge: the rating of the
    # whole talk by the judge card `judge` (episodes.judged), -1..1. All minus every penalty and guard hit, per step.
    reward: Literal["final", "sum", "judge"] = "final"
    # reward: judge: the card that rates the talk when it ends (a built-in name or a YAML file; any form that
    # rates a conversation). Default: the simulated user rating the talk it lived through (User-as-a-Judge)
    judge: str = "user"
    # the judge card's model when the card names none; None: the user's (grpo.user, or the model given in its place)
    judge_model: ModelSpec | None = None
    guard_turns: int = Field(default=2, ge=0)  # a reply closing the talk is "ends_early" up to this many replies
    guards: GuardPenalties = Field(default_factory=GuardPenalties)
    # a control, not for training a model: each batch's episode rewards are shuffled across its episodes before
    # TRL reads them (the log keeps the true ones), so the policy gets a reward unrelated to what it wrote
    shuffle_rewards: bool = False

    @field_validator("judge_model", mode="before")
    @classmethod
    def _model(cls, v: object) -> object:
        return spec_input(v)
