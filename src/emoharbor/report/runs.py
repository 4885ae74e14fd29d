"""What a report needs from one run folder, read once from its store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import kinds
from ..assess.leaderboard import RunResults, leaderboard
from ..evaluate import config_of, stored_profiles
from ..profiles.schema import Profile
from ..simulate.agents import user_agent
from ..simulate.conversation import Conversation
from ..store.records import Assessment
from ..store.run_store import RunStore


@dataclass
class RunView:
    folder: Path
    kind: str
    meta: dict[str, str]
    conversations: list[Conversation] = field(default_factory=list)
    assessments: dict[str, dict[str, Assessment]] = field(default_factory=dict)  # conversation -> judge -> record
    profiles: dict[str, Profile] = field(default_factory=dict)
    boards: dict[str, dict[str, Any]] = field(default_factory=dict)  # judge -> leaderboard
    usage_by_step: dict[str, dict[str, float]] = field(default_factory=dict)
    timings_by_step: dict[str, dict[str, float]] = field(default_factory=dict)  # the server's own (embedded model)
    events: dict[str, int] = field(default_factory=dict)
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)  # conversation -> the replay's ESConv facts
    notes: list[str] = field(default_factory=list)
    validation: dict[str, Any] | None = None
    validation_scores: list[dict[str, Any]] = field(default_factory=list)
    analysis: dict[str, Any] | None = None  # a kind's own table (a sensitivity run's)
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
        view.usage_by_step = store.usage_by_role()  # the health table's rows are roles
        view.timings_by_step = store.timings_by_step()
        view.events = store.event_counts()
        if kinds.has(view.kind, "view"):
            kinds.of(view.kind).view(store, view, seed)
        return view
    finally:
        store.close()


def load_emoharbor(store: RunStore, view: RunView, seed: int) -> None:
    results = RunResults.read(store)  # read once: the transcripts, the tables and every judge's leaderboard
    view.conversations = results.conversations
    view.assessments = by_conversation(results.assessments)
    for judge in view.judges or ["user"]:
        view.boards[judge] = leaderboard(results, judge, seed=seed)
    cfg = config_of(store)
    if user_agent(cfg.user_agent.agent).reactions:  # the user whose reactions a sensitivity run measures
        view.user_model = cfg.roles.user.model
        view.user_prompts = dict(store.config().get("prompt_versions") or {})
    view.profiles = stored_profiles(store)
    if not view.profiles:
        view.notes.append("this run was made before runs kept their profiles, so there are no breakdowns by profile")
