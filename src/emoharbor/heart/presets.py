"""Files of replies rated by people, and the columns each kind of file has (``heart.rated`` reads them).

``generic``: one rating per row, in the columns ``GENERIC`` lists (docs/heart.md, "Replies rated by people").
A preset names the columns of a published set: each row of its file is one history with one reply per
competitor, each reply with its rating and its rater (``Preset.columns``: the column of each field, ``{c}``
standing for the competitor). Only the table is here, so that a HEART config can name a preset's competitors
without reading a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Pairing = Literal["same_rater", "across_raters"]
GENERIC = "generic"
# the generic format's columns (fields of a JSON line): required, then optional
GENERIC_REQUIRED = ("history", "reply", "competitor", "score")
GENERIC_OPTIONAL = ("history_id", "situation", "emotion", "rater", "dimension")


@dataclass(frozen=True)
class Preset:
    name: str
    competitors: tuple[str, ...]  # the reply sources, in the order pairs are oriented
    scale: tuple[float, float]  # the lowest and highest rating
    pairing: Pairing  # how ratings become pairs (docs/heart.md)
    shared: dict[str, str]  # field -> column, the same for every reply of a row
    per_reply: dict[str, str]  # field -> column with {c} for the competitor
    cite: str

    def columns(self) -> list[str]:
        return [*self.shared.values(), *(v.format(c=c) for c in self.competitors for v in self.per_reply.values())]


# Welivita & Pu, "Is ChatGPT More Empathetic than Humans?": EmpatheticDialogues prompts, each with the
# original crowd worker's reply and two of ChatGPT's, each rated 1 (bad) / 2 (okay) / 3 (good) by a crowd
# worker of its own (a different pool of raters for each kind of reply)
WELIVITA = Preset(
    name="welivita",
    competitors=("human", "chatgpt", "chatgpt_empathy"),
    scale=(1.0, 3.0),
    pairing="across_raters",
    shared={"history_id": "dialog_id", "history": "speaker_uttr", "situation": "situation", "emotion": "emotion"},
    per_reply={"reply": "response_{c}", "score": "rating_{c}", "rater": "annotator_{c}"},
    cite='Welivita & Pu, "Is ChatGPT More Empathetic than Humans?"',
)
PRESETS = {p.name: p for p in (WELIVITA,)}
