"""The EmoHarbor evaluation run (``emoharbor run``)."""

from .plan import Plan
from .run import KIND, config_of, reassess, run_evaluation, stored_profiles

__all__ = ["KIND", "Plan", "config_of", "reassess", "run_evaluation", "stored_profiles"]
