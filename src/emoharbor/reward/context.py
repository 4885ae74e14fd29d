"""The dialogue contexts a supporter reply is rewarded in: a profile, the conversation so far (ending on
the help-seeker's turn) and the simulated user's state at that point.

Where they come from:
- ``openings``: built-in (or any) profiles, each opening a talk as the simulated user writes it;
- ``run_contexts``: the first turns of simulated talks, from an EmoHarbor run folder: every user turn with
  the state the user was in when it wrote it;
- ``esconv_contexts``: real ESConv talks cut at a seeker turn, the seeker played from the record's draft
  profile (``profiles.esconv_import``);
- ``heart_contexts``: HEART histories (those ending on the seeker), likewise.

A real history says nothing of the seeker's state after its first turn, so its context starts the user at
the profile's intensity and the initial trust; a simulated talk gives the state it had.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..data.esconv import EsconvDialog, EsconvTurn
from ..errors import DataError
from ..models.base import ChatModel, Message
from ..profiles.esconv_import import draft_profile
from ..profiles.schema import Profile
from ..simulate.agents import ReactionSettings, make_user
from ..simulate.conversation import Conversation, Turn

if TYPE_CHECKING:
    from ..heart.config import HistorySource
    from ..heart.histories import History

T = TypeVar("T")
# the first seeker turn a suite cuts a real talk at, 0-based among the seeker's turns: its third or later (the
# problem is on the table by then, and an earlier supporter message exists to repeat); realism and sensitivity
FIRST_SEEKER_TURN = 2


@dataclass(frozen=True)
class RewardContext:
    id: str
    source: str  # profile | run | esconv | heart
    profile: Profile
    turns: list[Turn]  # ends on the user's (seeker's) turn
    intensity: int  # the user's state when it wrote its last turn
    trust: int
    turn: int = 0  # supporter replies before it
    history: str = ""  # the dialogue it was cut from (ESConv, HEART, a run's conversation)

    def guard_record(self) -> dict[str, Any]:
        """What the evaluation guard reads (``evolve.guard.EvalGuard.blocks_record``)."""
        return {"profile_id": self.profile.id, "evaluation_only": self.profile.evaluation_only,
                "history_id": self.history or self.id, "turns": [{"speaker": t.speaker, "text": t.text}
                                                                for t in self.turns]}  # fmt: skip

    def texts(self) -> list[str]:
        return [t.text for t in self.turns]

    def messages(self, system: str, max_turns: int | None = None) -> list[Message]:
        """The supporter's prompt: its system prompt, then the talk (the user's turns as ``user``)."""
        turns = self.turns[-max_turns:] if max_turns else self.turns
        while len(turns) > 1 and turns[0].speaker != "user":
            turns = turns[1:]
        msgs: list[Message] = [{"role": "system", "content": system}] if system else []
        return msgs + [{"role": "user" if t.speaker == "user" else "assistant", "content": t.text} for t in turns]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "profile": self.profile.model_dump(mode="json"),
                "turns": [{"speaker": t.speaker, "text": t.text} for t in self.turns], "intensity": self.intensity,
                "trust": self.trust, "turn": self.turn, "history": self.history}  # fmt: skip

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RewardContext:
        turns = [Turn(speaker=t["speaker"], text=t["text"]) for t in d["turns"]]
        profile = Profile.model_validate(d["profile"])
        replies = int(d.get("turn", sum(t.speaker == "supporter" for t in turns)))
        return cls(str(d["id"]), str(d.get("source", "file")), profile, turns, int(d["intensity"]), int(d["trust"]),
                   replies, str(d.get("history", "")))  # fmt: skip


def _check(ctx: RewardContext) -> RewardContext | None:
    return ctx if ctx.turns and ctx.turns[-1].speaker == "user" and ctx.turns[-1].text.strip() else None


async def openings(profiles: list[Profile], user: ChatModel | None, *, seed: int,
                   settings: ReactionSettings) -> tuple[list[RewardContext], int]:  # fmt: skip
    """Each profile's opening message, written by the simulated user of ``settings``; and how many openings
    the user did not write (empty, or not parsed for a user that answers in JSON: those profiles are left out;
    an opening made up from the profile is not the user's)."""
    out: list[RewardContext] = []
    failed = 0
    initial_trust = settings.initial_trust
    for p in profiles:
        step = await make_user(user, p, settings).open(seed)
        if any(k == "opening_from_profile" for k, _ in step.events):
            failed += 1
            continue
        out.append(RewardContext(f"open:{p.id}", "profile", p, [Turn(speaker="user", text=step.text)],
                                 p.emotional_state.intensity, initial_trust, 0, p.id))  # fmt: skip
    return out, failed


def conversation_contexts(c: Conversation, profile: Profile) -> list[RewardContext]:
    """Every user turn of a simulated talk, with the state the user wrote it in."""
    out = []
    replies = 0
    for i, t in enumerate(c.turns):
        if t.speaker == "supporter":
            replies += 1
            continue
        if replies >= len(c.states):
            break
        s = c.states[replies]
        ctx = _check(RewardContext(f"run:{c.id}#{i}", "run", profile, c.turns[: i + 1], s.intensity, s.trust, replies,
                                   c.id))  # fmt: skip
        if ctx:
            out.append(ctx)
    return out


def run_talks(folder: Path, *kinds: str) -> list[tuple[Conversation, Profile]]:
    """The talks of an EmoHarbor run folder, each with its user's profile as the run stored it. A run made before
    runs kept their profiles has none stored: its config's profiles are resolved from the user's files as they
    are now, and a note on stderr says so."""
    from ..profiles.loader import resolve_profiles
    from ..store.records import stored_profiles
    from ..store.run_store import RunStore

    store = RunStore.open_existing(folder, *kinds)
    try:
        profiles = stored_profiles(store)
        if not profiles:
            named = list(store.config().get("profiles") or [])
            note = f"from {', '.join(named)} as they are now, which may differ from what it used"
            sys.stderr.write(f"note: {folder} was made before runs kept their profiles; its profiles are read {note}\n")
            profiles = {p.id: p for p in resolve_profiles(named)}
        convs = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    finally:
        store.close()
    for c in convs:
        if c.profile_id not in profiles:
            raise DataError(f"{folder}: conversation {c.id}: its profile {c.profile_id} is not among the run's")
    return [(c, profiles[c.profile_id]) for c in convs]


def run_contexts(folder: Path) -> list[RewardContext]:
    return [ctx for c, p in run_talks(folder) for ctx in conversation_contexts(c, p)]


def talk(d: EsconvDialog) -> list[Turn]:
    """A record's turns as a talk with the simulated user (the seeker's as the user's)."""
    return [Turn(speaker="user" if t.speaker == "seeker" else "supporter", text=t.text) for t in d.merged_turns()]


def dialog_contexts(d: EsconvDialog, source: str, initial_trust: int, *,
                    evaluation_only: bool = False) -> list[RewardContext]:  # fmt: skip
    """The dialogue cut at each seeker turn that has a supporter turn after it."""
    profile = draft_profile(d, evaluation_only=evaluation_only)
    turns = talk(d)
    out = []
    for i, t in enumerate(turns):
        if t.speaker == "user" and i + 1 < len(turns) and turns[i + 1].speaker == "supporter":
            replies = sum(x.speaker == "supporter" for x in turns[:i])
            ctx = _check(RewardContext(f"{source}:{d.id}#{i}", source, profile, turns[: i + 1],
                                       profile.emotional_state.intensity, initial_trust, replies, d.id))  # fmt: skip
            if ctx:
                out.append(ctx)
    return out


def esconv_contexts(dialogs: list[EsconvDialog], *, initial_trust: int) -> list[RewardContext]:
    """ESConv talks (``load_esconv``), each cut at every seeker turn."""
    return [c for d in dialogs for c in dialog_contexts(d, "esconv", initial_trust)]


def load_heart_histories(src: str | HistorySource) -> list[History]:
    """The histories of a HEART file: a path (regular histories) or a ``HistorySource`` naming its subset and
    limits as HEART's own config does (``{path: dialogues_adversarial.json, subset: adversarial}``)."""
    from ..heart.config import HistorySource
    from ..heart.stages.sources import load_heart_source

    src = src if isinstance(src, HistorySource) else HistorySource(path=src)
    return load_heart_source(src, Path(src.path))[0]


def heart_dialog(h: History, index: int) -> EsconvDialog:
    """A HEART history read as an ESConv talk (its seeker's turns as the seeker's; no survey): what a profile is
    drafted from and a context is cut from."""
    from ..heart.histories import SEEKER

    turns = [EsconvTurn("seeker" if t.speaker == SEEKER else "supporter", t.text) for t in h.turns]
    return EsconvDialog(h.id, h.source, index, h.emotion_type, h.problem_type, h.situation, "", {}, turns)


def heart_contexts(histories: list[History], *, initial_trust: int) -> list[RewardContext]:
    """HEART histories (``load_heart_histories``) that end on the seeker, each one context (its last turn)."""
    from ..heart.histories import SEEKER

    out = []
    for i, h in enumerate(histories):
        if not h.turns or h.turns[-1].speaker != SEEKER:
            continue
        d = heart_dialog(h, i)
        profile, conv = draft_profile(d), talk(d)
        replies = sum(t.speaker == "supporter" for t in conv)
        ctx = _check(RewardContext(f"heart:{h.id}", "heart", profile, conv, profile.emotional_state.intensity,
                                   initial_trust, replies, h.id))  # fmt: skip
        if ctx:
            out.append(ctx)
    return out
