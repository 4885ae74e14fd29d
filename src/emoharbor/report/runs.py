"""What a report needs from one run folder, read once from its store: the fields every kind's section may
share (the conversations and their assessments, the profiles, the cost and timings, the simulated user), and
``data``, what the kind's own section reads (a leaderboard per judge, a validation table, ...), filled by
the kind (``RunKind.view``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import kinds
from ..profiles.schema import Profile
from ..simulate.conversation import Conversation
from ..store.records import Assessment
from ..store.run_store import RunStore
from .timings import by_step


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

    @property
    def label(self) -> str:
        return self.folder.name or str(self.folder)

    @property
    def judges(self) -> list[str]:
        names = {j for per in self.assessments.values() for j in per}
        return sorted(names, key=lambda j: (j != "user", j))


def by_conversation(assessments: list[Assessment]) -> dict[str, dict[str, Assessment]]:
    out: dict[str, dict[str, Assessment]] = {}
    for a in assessments:
        out.setdefault(a.conversation, {})[a.judge] = a
    return out


def load_run(folder: Path, *, seed: int = 0) -> RunView:
    """Read a run folder. The store is opened read-only in spirit: nothing is written to it."""
    store = RunStore.open_existing(folder)
    try:
        meta = store.meta()
        view = RunView(folder=folder, kind=meta.get("kind", "?"), meta=meta)
        view.usage_by_role = store.usage_by_role()
        view.timings_by_step = by_step(store.calls())
        view.events = store.event_counts()
        if kinds.has(view.kind, "view"):
            kinds.of(view.kind).view(store, view, seed)
        return view
    finally:
        store.close()
