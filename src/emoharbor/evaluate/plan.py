"""What one EmoHarbor run is to do, built once from its config and passed to preflight and to the run."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import RunConfig


@dataclass(frozen=True)
class Plan:
    cfg: RunConfig
    where: str  # the config's file (or "the demo"), as errors name it
