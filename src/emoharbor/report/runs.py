"""What a report needs from one run folder, read once from its store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import kinds
from ..assess.leaderboard import leaderboard
from ..errors import EmoharborError
from ..evaluate import config_of
from ..profiles.loader import resolve_profiles
from ..profiles.schema import Profile
from ..simulate.conversation import Conversation
from ..store import records
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
    usage_by_role: dict[str, dict[str, float]] = field(default_factory=dict)
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


def _assessments(store: RunStore) -> dict[str, dict[str, Assessment]]:
    out: dict[str, dict[str, Assessment]] = {}
    for a in records.assessments(store):
        out.setdefault(a.conversation, {})[a.judge] = a
    return out


def load_run(folder: Path, *, seed: int = 0) -> RunView:
    """Read a run folder. The store is opened read-only in spirit: nothing is written to it."""
    store = RunStore.open_existing(folder)
    try:
        meta = store.meta()
        view = RunView(folder=folder, kind=meta.get("kind", "?"), meta=meta)
        view.usage_by_role = store.usage_by_role()
        view.events = store.event_counts()
        fill = kinds.hook(view.kind, "view")
        if fill is not None:
            fill(store, view, seed)
        return view
    finally:
        store.close()


def load_emoharbor(store: RunStore, view: RunView, seed: int) -> None:
    view.conversations = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    view.assessments = _assessments(store)
    for judge in view.judges or ["user"]:
        view.boards[judge] = leaderboard(store, judge, seed=seed)
    try:
        cfg = config_of(store)
        if cfg.user_agent == "chain":  # the user whose reactions a sensitivity run measures
            view.user_model = cfg.roles.user.model
            view.user_prompts = dict(store.config().get("prompt_versions") or {})
        view.profiles = {p.id: p for p in resolve_profiles(cfg.profiles)}
    except (EmoharborError, ValueError) as e:  # a profile file moved since the run: no breakdowns, said so
        view.notes.append(f"profiles could not be read again, so there are no breakdowns by profile: {e}")


def load_validate(store: RunStore, view: RunView, seed: int) -> None:
    from ..validate.analysis import score_rows, validation_table  # the report does not need validate otherwise

    records = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
    view.conversations = [Conversation.model_validate(d) for d in records.values()]
    view.assessments = _assessments(store)
    view.extras = {k: d["esconv"] for k, d in records.items()}
    view.profiles = {d["profile_id"]: Profile.model_validate(d["profile"]) for d in records.values()}
    view.validation = validation_table(store, seed=seed)
    view.validation_scores = score_rows(store)
    lived = [d["chain_prompts"] for d in records.values() if d.get("perceived") and d.get("chain_prompts")]
    if lived:  # replayed through the chain: the user whose reactions a sensitivity run measures
        view.user_model = (store.config().get("user") or {}).get("model")
        view.user_prompts = dict(lived[0])
