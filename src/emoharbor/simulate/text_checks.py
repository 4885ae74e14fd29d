"""Checks on what a small model wrote as the simulated user: repetition and broken character."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

LABEL = re.compile(r"^\s*(?:\*\*)?(?:user|seeker|help-seeker|me|client|you)(?:\*\*)?\s*:\s*", re.IGNORECASE)
# an assistant's phrases, or the seeker speaking of "the supporter" in the third person (narrating, not chatting)
ASSISTANT_TELLS = re.compile(
    r"\b(as an ai|language model|how can i (?:help|assist) you|i'?m here to help|i am here to help|"
    r"i'?m an assistant|as your (?:supporter|assistant|therapist)|feel free to reach out to me|"
    r"let me know if (?:there'?s|there is) anything|anything else you need|the supporter(?:'s)?)\b",
    re.IGNORECASE,
)
WORD = re.compile(r"[a-z0-9']+")
REPEAT_RATIO = 0.8


def clean_message(text: str) -> str:
    """Strip a speaker label and wrapping quotes that small models add."""
    t = LABEL.sub("", text.strip())
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t


def _norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def repeats(message: str, earlier: list[str], ratio: float = REPEAT_RATIO) -> bool:
    """Whether ``message`` is (nearly) the same as one of the ``earlier`` messages."""
    m = _norm(message)
    if not m:
        return False
    return any(SequenceMatcher(None, m, _norm(e)).ratio() >= ratio for e in earlier if _norm(e))


def breaks_character(message: str) -> bool:
    """Whether the simulated help-seeker talks like an assistant."""
    return bool(ASSISTANT_TELLS.search(message))
