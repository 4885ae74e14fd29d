"""The scorers a reply-scoring run is given, and their checks: one options class for every suite (a suite's
own options add its sources to it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..assess.judge_forms import Rates
from ..assess.stage import Judge, make_judges
from ..errors import ConfigError
from ..models.spec import ModelSpec
from ..reward.settings import RewardSettings
from ..simulate.agents import user_agent


@dataclass(kw_only=True)
class ScorerOptions:
    """The simulated user (its model: None, the judges alone) with its reward settings, the judge cards with
    the model of those that name none and a ``--scoring`` that overrides every card's, the seed of the
    scorers' calls and how many units run at once."""

    seed: int = 0
    user: ModelSpec | None = field(default_factory=ModelSpec)
    judge: ModelSpec = field(default_factory=ModelSpec)
    judges: list[str] = field(default_factory=list)
    scoring: str | None = None
    reward: RewardSettings = field(default_factory=RewardSettings)
    concurrency: int = 4

    RATES: ClassVar[tuple[Rates, ...]] = ("reply",)  # what the suite's cards may rate: reply, pair
    WANTED: ClassVar[str] = "the suite rates one reply: give a card of the form reply (third_party_reply)"

    def check_scorers(self) -> None:
        if self.user is None and not self.judges:
            raise ConfigError("no scorer: with --model none and --judge none nothing is left to score")

    def scorers_resolved(self) -> dict[str, Any]:
        """What the user's scores depend on (the judges are recorded per card, ``assess.stage.check_judges``)."""
        return {"user": self.user.model_dump(mode="json") if self.user else None,
                "reward": self.reward.model_dump(mode="json")}  # fmt: skip

    def reaction_prompts(self) -> tuple[str, ...]:
        """The prompts the simulated user's reactions read (none without a user): part of the run record."""
        return user_agent(self.reward.user_agent.agent).reaction_prompts if self.user else ()

    def make_judges(self) -> list[Judge]:
        return make_judges(self.judges, self.judge, rates=self.RATES, scoring=self.scoring, wanted=self.WANTED,
                           option="--judge")  # fmt: skip
