"""A reward from the simulated user's reaction to a supporter reply (see ``settings`` for the formula)."""

from .context import RewardContext
from .score import Scored, UserReward, tally
from .settings import Penalties, RewardSettings
from .trl_reward import UserRewardFunc

__all__ = ["Penalties", "RewardContext", "RewardSettings", "Scored", "UserReward", "UserRewardFunc", "tally"]
