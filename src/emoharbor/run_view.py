"""What a report reads of one run folder (``RunView``): the fields every kind's section may share (the
conversations and their assessments, the profiles, the cost and timings, the simulated user), and ``data``,
what the kind's own section reads, filled by the kind (``RunKind.view``). ``report.runs.load_run`` makes one.
It sits below the kinds' registry, which names it in the parts a kind has."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .profiles.schema import Profile
from .simulate.conversation import Conversation
from .store.records import Assessment


@dataclass
class RunView:
    folder: Path
    kind: str
    meta: dict[str, str]
    conversations: list[Conversation] = field(default_factory=list)
    assessments: dict[str, dict[str, Assessment]] = field(default_factory=dict)  # conversation -> judge -> record
    profiles: dict[str, Profile] = field(default_factory=dict)
    usage_by_role: dict[str, dict[str, float]] = field(default_factory=dict)
    timings_by_step: dict[str, dict[str, float]] = field(default_factory=dict)  # the server's own (embedded model)
    events: dict[str, int] = field(default_factory=dict)
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)  # conversation -> the replay's ESConv facts
    notes: list[str] = field(default_factory=list)
    data: Any = None  # the kind's own: what its section reads (``RunKind.view`` fills it)
    user_model: str | None = None  # the simulated user's model, where its reactions were read (health)
    user_prompts: dict[str, str] = field(default_factory=dict)  # the versions of the prompts it read
    user_settings: dict[str, Any] | None = None  # its ``user_agent:`` block, as the run stored it

    @property
    def label(self) -> str:
        return self.folder.name or str(self.folder)

    @property
    def judges(self) -> list[str]:
        names = {j for per in self.assessments.values() for j in per}
        return sorted(names, key=lambda j: (j != "user", j))
