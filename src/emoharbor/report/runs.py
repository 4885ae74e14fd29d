"""What a report needs from one run folder, read once from its store: the fields every kind's section may
share (the conversations and their assessments, the profiles, the cost and timings, the simulated user), and
``data``, what the kind's own section reads (a leaderboard per judge, a validation table, ...), filled by
the kind (``RunKind.view``)."""

from __future__ import annotations

from pathlib import Path

from .. import kinds
from ..run_view import RunView
from ..store.records import Assessment
from ..store.run_store import RunStore
from .timings import by_step


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
