"""What a help-seeker's message does, read from its words: the features the realism suite counts in simulated
and real seekers' messages alike (``figures.py``). Plain rules, the same for both sides, so a feature's share
among real seekers is the scale a simulated one is read against.

- **gratitude**: thanks or appreciation ("thank you", "thanks", "I appreciate", "grateful");
- **question**: asks the supporter something (a question mark);
- **voice**: offers help or speaks as the supporter ("let me know if you need anything", "I'm here for you",
  "glad I could help": ``simulate.text_checks.character_slip``'s "voice");
- **narrates**: reports its inner state as a record would ("the supporter", "my trust", "intensity", "after
  your message", "I feel a little better and trust you more");
- **repeat**: (nearly) the same as one of its own earlier messages in the talk (``text_checks.repeats``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from ..simulate.text_checks import NARRATES, character_slip, repeats

WORD = re.compile(r"[A-Za-z0-9']+")
GRATITUDE = re.compile(r"\b(thank(?:s|ful| you| u)?|thx|ty|appreciate[sd]?|appreciation|grateful)\b", re.IGNORECASE)
# the inner state told as a record of it, not as a person says how they feel
INNER_RECORD = re.compile(
    r"\b(my (?:emotion(?:al)? )?intensity|(?:emotion(?:al)?|distress) intensity|out of (?:10|100)\b|"
    r"my (?:level of )?trust|trust (?:in )?(?:you|the supporter) (?:a (?:little|bit) )?(?:more|less)|"
    r"my (?:private |inner )(?:thought|state|feeling)s?|inner (?:state|thought)|"
    r"(?:after|since) (?:your|the|that|this) (?:last |latest )?message)\b",
    re.IGNORECASE,
)
FEATURES = ("gratitude", "question", "voice", "narrates", "repeat")


def words(text: str) -> int:
    return len(WORD.findall(text))


def narrates(text: str) -> bool:
    return bool(NARRATES.search(text) or INNER_RECORD.search(text))


def features(text: str, earlier: list[str]) -> dict[str, bool]:
    """Each of ``FEATURES`` for one message (``earlier``: the same seeker's messages before it in the talk)."""
    return {
        "gratitude": bool(GRATITUDE.search(text)),
        "question": "?" in text,
        "voice": character_slip(text) == "voice",
        "narrates": narrates(text),
        "repeat": repeats(text, earlier),
    }


def bigrams(text: str) -> list[tuple[str, str]]:
    toks = [w.lower() for w in WORD.findall(text)]
    return list(itertools.pairwise(toks))


def distinct_2(texts: Iterable[str]) -> float | None:
    """Distinct bigrams over all bigrams of ``texts`` (Li et al. 2016); None without a bigram."""
    grams = [g for t in texts for g in bigrams(t)]
    return len(set(grams)) / len(grams) if grams else None
