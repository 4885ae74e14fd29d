"""The evaluation guard: profiles and histories marked as evaluation data never become training data.

What is marked: profiles with ``evaluation_only: true``; ids and texts listed in holdout files; and,
when a holdout is a run folder, every history and profile that run evaluated on. A dialogue is also
blocked when one of its seeker turns (30 characters or more, compared without case and punctuation)
is a seeker turn of a held-out history: HEART's histories are taken from ESConv, so an ESConv dialogue
can be an evaluation history under another id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import userfiles
from ..data.esconv import EsconvDialog
from ..errors import DataError

MIN_FINGERPRINT = 30
SEEKERS = {"seeker", "user", "usr"}


def fingerprint(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@dataclass
class EvalGuard:
    profile_ids: set[str] = field(default_factory=set)
    history_ids: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)  # fingerprints of held-out seeker turns

    def add_text(self, text: str) -> None:
        fp = fingerprint(text)
        if len(fp) >= MIN_FINGERPRINT:
            self.texts.add(fp)

    def blocks_text(self, text: str) -> bool:
        fp = fingerprint(text)
        return len(fp) >= MIN_FINGERPRINT and fp in self.texts

    def blocks_dialog(self, d: EsconvDialog) -> bool:
        if d.id in self.history_ids:
            return True
        return any(t.speaker == "seeker" and self.blocks_text(t.text) for t in d.turns)

    def blocks_record(self, rec: dict[str, Any]) -> str | None:
        """Why a run record (conversation, history, comparison) is evaluation data; None if it is not."""
        if rec.get("evaluation_only") is True:
            return "marked evaluation_only"
        if rec.get("profile_id") in self.profile_ids:
            return f"profile {rec['profile_id']} is held out"
        hid = rec.get("history_id", rec.get("id"))
        if hid in self.history_ids:
            return f"history {hid} is held out"
        for t in rec.get("turns") or []:
            if isinstance(t, dict) and t.get("speaker") in SEEKERS and self.blocks_text(str(t.get("text", ""))):
                return "a seeker turn matches a held-out history"
        return None

    def merged(self, other: EvalGuard) -> EvalGuard:
        return EvalGuard(self.profile_ids | other.profile_ids, self.history_ids | other.history_ids,
                         self.texts | other.texts)  # fmt: skip


def _add_run(guard: EvalGuard, folder: Path) -> None:
    from ..store.run_store import RunStore

    store = RunStore.open_existing(folder)
    try:
        for hid, h in store.items("history"):
            guard.history_ids.add(str(h.get("id", hid[0])))
            for t in h.get("turns") or []:
                if isinstance(t, dict) and t.get("speaker") in SEEKERS:
                    guard.add_text(str(t.get("text", "")))
        for _, c in store.items("conversation"):
            if c.get("profile_id"):
                guard.profile_ids.add(str(c["profile_id"]))
    finally:
        store.close()


def _add_file(guard: EvalGuard, path: Path) -> None:
    text = userfiles.read_text(path, "holdout file", DataError)
    if path.suffix.lower() == ".txt":
        guard.history_ids.update(x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#"))
        guard.profile_ids.update(x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#"))
        return
    raw = userfiles.parse(path, text, DataError)
    if isinstance(raw, list):
        raw = {"profiles": raw, "histories": raw}
    if not isinstance(raw, dict):
        raise DataError(f"{path}: a holdout file is a list of ids or a mapping with profiles/histories/texts")
    for key in ("profiles", "histories", "texts"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataError(f"{path}: field '{key}' must be a list of strings")
    guard.profile_ids.update(raw.get("profiles", []))
    guard.history_ids.update(raw.get("histories", []))
    for t in raw.get("texts", []):
        guard.add_text(t)


def load_guard(holdouts: list[str], profiles: list[str] | None = None) -> EvalGuard:
    """Holdouts are files (.txt ids, .yaml/.json lists or mappings) or run folders. ``profiles`` are
    profile specs whose ``evaluation_only`` profiles are held out."""
    guard = EvalGuard()
    for h in holdouts:
        p = Path(h).expanduser()
        if p.is_dir():
            _add_run(guard, p)
        elif p.is_file():
            _add_file(guard, p)
        else:
            raise DataError(f"holdout {p} not found (give a file of ids or a run folder)")
    if profiles:
        from ..profiles.loader import resolve_profiles

        guard.profile_ids.update(p.id for p in resolve_profiles(profiles) if p.evaluation_only)
    return guard
