"""A case: a real context that ends on the seeker's turn and the reply that followed it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..reward.context import RewardContext


@dataclass(frozen=True)
class Case:
    id: str
    source: str  # esconv | heart | run
    context: RewardContext
    real: str  # the reply that followed
    problem: str  # the problem type ("" where unknown)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "context": self.context.to_dict(), "real": self.real,
                "problem": self.problem}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        return cls(d["id"], d["source"], RewardContext.from_dict(d["context"]), d["real"], d["problem"])
