"""The real seekers a simulated one is read against, from ESConv files (either format).

Consecutive messages of one speaker are one turn (as everywhere in emoharbor's reading of ESConv).

- A **cut** is a talk cut right after a supporter turn whose next turn is the seeker's third or later: the
  talk so far (ending on the supporter), the seeker's real next message, and a profile drafted from what the
  record says up to the cut (its situation, emotion, initial intensity, and the seeker's turns before the cut
  for the risk flag: never a later turn). The simulated user writes its own next message there.
- A **talk** is a whole real conversation's shape: its seeker's messages, its supporter turns and the
  seeker's own initial and final emotion intensity (the survey, 1-5). A simulated user with the profile
  drafted from the record talks with a supporter from the start; the two shapes are compared.

Bad input is one line naming the file, the record and the field (``data.esconv``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..data.esconv import EsconvDialog, load_esconv
from ..errors import DataError
from ..profiles.esconv_import import draft_profile
from ..profiles.schema import Profile
from ..reward.context import FIRST_SEEKER_TURN, talk
from ..simulate.conversation import Turn


@dataclass(frozen=True)
class Cut:
    talk: str  # the record's id, "<file stem>:<index>": the unit a bootstrap resamples
    at: int  # the number of turns before the cut (its position in the talk)
    turns: list[Turn]  # the talk so far, ending on a supporter turn
    real: str  # the seeker's real next message
    profile: Profile

    @property
    def key(self) -> tuple[str, str]:
        return self.talk, str(self.at)

    @property
    def earlier(self) -> list[str]:
        """The seeker's messages before the cut."""
        return [t.text for t in self.turns if t.speaker == "user"]

    @property
    def replies(self) -> int:
        return sum(t.speaker == "supporter" for t in self.turns)

    def to_dict(self) -> dict[str, Any]:
        return {"talk": self.talk, "at": self.at, "turns": [t.model_dump() for t in self.turns], "real": self.real,
                "profile": self.profile.model_dump(mode="json")}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cut:
        turns = [Turn.model_validate(t) for t in d["turns"]]
        return cls(str(d["talk"]), int(d["at"]), turns, str(d["real"]), Profile.model_validate(d["profile"]))


@dataclass(frozen=True)
class Talk:
    """A real talk's shape, and the profile its simulated counterpart starts from."""

    talk: str
    seeker: list[str]  # the seeker's messages, in order
    supporter_turns: int
    initial: int | None  # the seeker's own emotion intensity before and after the talk (1-5), None where missing
    final: int | None
    profile: Profile

    def to_dict(self) -> dict[str, Any]:
        return {"talk": self.talk, "seeker": self.seeker, "supporter_turns": self.supporter_turns,
                "initial": self.initial, "final": self.final,
                "profile": self.profile.model_dump(mode="json")}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Talk:
        return cls(str(d["talk"]), [str(x) for x in d["seeker"]], int(d["supporter_turns"]), d.get("initial"),
                   d.get("final"), Profile.model_validate(d["profile"]))  # fmt: skip


def talk_cuts(dialog: EsconvDialog) -> list[Cut]:
    """Every cut of one talk (see the module's doc), in the talk's order."""
    merged = dialog.merged_turns()
    turns = talk(dialog)
    out = []
    seen_seeker = 0
    for i, t in enumerate(turns):
        if t.speaker != "user":
            continue
        if seen_seeker >= FIRST_SEEKER_TURN and i > 0 and turns[i - 1].speaker == "supporter":
            profile = draft_profile(replace(dialog, turns=merged[:i]), evaluation_only=True)
            out.append(Cut(dialog.id, i, turns[:i], t.text, profile))
        seen_seeker += 1
    return out


def talk_shape(dialog: EsconvDialog) -> Talk:
    turns = talk(dialog)
    seeker = [t.text for t in turns if t.speaker == "user"]
    survey = dialog.survey
    return Talk(dialog.id, seeker, sum(t.speaker == "supporter" for t in turns),
                survey.get("initial_emotion_intensity"), survey.get("final_emotion_intensity"),
                draft_profile(dialog, evaluation_only=True))  # fmt: skip


def pick(cuts: list[Cut], per_talk: int, seed: int) -> list[Cut]:
    """``per_talk`` of a talk's cuts drawn with ``seed`` (all when it has fewer), in the talk's order."""
    if len(cuts) <= per_talk:
        return cuts
    rng = random.Random(f"{seed}:{cuts[0].talk}")
    return [cuts[i] for i in sorted(rng.sample(range(len(cuts)), per_talk))]


def file_talks(path: Path) -> list[EsconvDialog]:
    """The talks of a file that have at least one cut; one line naming the file when none has."""
    dialogs = [d for d in load_esconv(path) if talk_cuts(d)]
    if not dialogs:
        raise DataError(f"{path}: no talk has a supporter turn before the seeker's third turn or later: no cut to "
                        "compare at")  # fmt: skip
    return dialogs
