"""The EmoHarbor evaluation run (``emoharbor run``)."""

from .run import KIND, config_of, reassess, record_of, run_evaluation, run_hash, run_judges

__all__ = ["KIND", "config_of", "reassess", "record_of", "run_evaluation", "run_hash", "run_judges"]
