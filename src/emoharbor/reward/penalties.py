"""What a supporter reply must not do, whatever the user feels about it: each check is a penalty name."""

from __future__ import annotations

import re

from ..simulate.text_checks import repeats
from .settings import RewardSettings

WORD = re.compile(r"\S+")
# a line that opens with a speaker's label or a heading: "Supporter:", "**Response:**", "Seeker:"
LABEL = re.compile(
    r"^\s*(?:\*\*|#+\s*)?(?:supporter|assistant|therapist|counsel+or|response|reply|answer|seeker|help-seeker|user|"
    r"client|me|you)(?:\*\*)?\s*:", re.IGNORECASE | re.MULTILINE,
)  # fmt: skip
# the seeker's voice: the reply speaks as the one who is struggling, as a small model playing both sides does
SEEKER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:seeker|help-seeker|user|client)(?:\*\*)?\s*:", re.IGNORECASE | re.MULTILINE)
AI_VOICE = re.compile(r"\b(as an ai|an ai (?:language )?model|a language model|i am an ai|i'm an ai)\b", re.IGNORECASE)
JSON = re.compile(r"```|\{\s*\"[^\"]+\"\s*:|<\|[a-z_]+\|>", re.IGNORECASE)


def penalties(reply: str, context: list[str], settings: RewardSettings) -> list[str]:
    """The penalties ``reply`` hits (names of ``Penalties``), given the texts of the context's turns."""
    text = reply.strip()
    if not text:
        return ["empty"]
    out = []
    if SEEKER_LABEL.search(text) or AI_VOICE.search(text) or any(text == c.strip() for c in context[-1:]):
        out.append("broke_character")
    if LABEL.search(text):
        out.append("labels")
    if JSON.search(text):
        out.append("json_or_code")
    if repeats(text, context, ratio=settings.repeat_ratio):
        out.append("repeats_context")
    if len(WORD.findall(text)) > settings.max_words:
        out.append("too_long")
    return out
