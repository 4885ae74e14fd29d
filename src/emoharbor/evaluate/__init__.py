"""The EmoHarbor evaluation run (``emoharbor run``)."""

from ..store.records import stored_profiles
from .plan import Plan
from .run import KIND, config_of, reassess, run_evaluation

__all__ = ["KIND", "Plan", "config_of", "reassess", "run_evaluation", "stored_profiles"]
