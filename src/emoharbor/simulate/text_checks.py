"""Checks on what a small model wrote as the simulated user: repetition and broken character (an
assistant's voice, or the supporter's)."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

LABEL = re.compile(r"^\s*(?:\*\*)?(?:user|seeker|help-seeker|me|client|you)(?:\*\*)?\s*:\s*", re.IGNORECASE)
# an assistant's phrases
ASSISTANT_TELLS = re.compile(
    r"\b(as an ai|language model|how can i (?:help|assist) you|i'?m here to help|i am here to help|"
    r"i'?m an assistant|as your (?:supporter|assistant|therapist)|feel free to reach out to me|"
    r"let me know if (?:there'?s|there is) anything|anything else you need)\b",
    re.IGNORECASE,
)
# the seeker speaking of "the supporter" in the third person: narrating its inner record, not chatting
NARRATES = re.compile(r"\bthe supporter(?:'s)?\b", re.IGNORECASE)
# the supporter's lines: the help-seeker slipping into the other role (offering help, signing off as the one
# who helped). Narrow on purpose, for a seeker says much the same about itself: "I'm glad I talked to you",
# "is there anything else I can do?" (about its problem), "I hope it helps", "I hope this helps me".
SUPPORTER_TELLS = re.compile(
    r"\b(let me know if (?:you have any (?:more |other |further )?questions|you need anything|i can help)|"
    r"if you have any (?:more |other |further )questions|"
    r"glad (?:to hear )?(?:that )?you(?:'re| are)? (?:feel|felt|feeling) (?:a (?:bit|little) )?better|"
    r"(?:glad|happy) (?:i|we) (?:could|was able to|were able to) help|"
    r"glad (?:i|we) (?:could be|was|were) (?:helpful|of help)|"
    r"(?:glad|happy) to (?:help you|be of help)|"
    r"hope (?:this|that|my (?:advice|answer|reply|message)) (?:helps|helped)(?! me| us| my| our)|"
    r"hope (?:this|that) (?:was|is) helpful|"
    r"anything else i can (?:help|assist) you with|is there anything else i can (?:help|assist) with|"
    r"anything else i can do for you|(?:how|what) else can i (?:help|do for you)|"
    r"(?:can|may) i help you with anything|"
    r"is there anything else you(?:'d| would)? (?:like|want) to (?:talk about|share|discuss)|"
    r"reach out (?:to me )?(?:anytime|any time|whenever) you|"
    r"(?:please|and|,) reach out (?:to me )?(?:anytime|any time)|"
    r"(?:don'?t hesitate|feel free) to (?:reach out|contact me)|"
    r"i'?m (?:always )?here for you|i am (?:always )?here for you|"
    # a listener's reflections and counsel: in about 1 of 1,000 real ESConv seekers' messages
    r"(?:(?:i'?m|i am) (?:so |very |really )?)?sorry to hear (?:that|this|about)|"
    r"(?:it )?sounds like you(?:'re| are| have|'ve)|(?:it'?s|it is) (?:important|okay|ok) (?:to|that you)|"
    r"take care of yourself|i (?:can )?understand (?:that )?you(?:'re| are)|"
    r"(?:^|[.!?]\s+)you(?:'re| are) (?:feeling|going through))\b",
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


def character_slip(message: str) -> str | None:
    """How the simulated help-seeker left its role, if it did: "voice" (it talks like an assistant, or like
    the supporter it talks to) or "narrates" (it reports on "the supporter" in the third person)."""
    if ASSISTANT_TELLS.search(message) or SUPPORTER_TELLS.search(message):
        return "voice"
    return "narrates" if NARRATES.search(message) else None


def breaks_character(message: str) -> bool:
    """Whether the simulated help-seeker leaves its role (``character_slip``)."""
    return character_slip(message) is not None


def names_self(message: str, name: str) -> bool:
    """Whether the help-seeker speaks of itself by its own first name (narrating its profile in the third
    person, as small models do), other than to introduce itself ("I'm Dana", "my name is Dana")."""
    first = name.split()[0] if name.split() else ""
    if len(first) < 2:
        return False
    used = re.finditer(rf"\b{re.escape(first)}\b", message)
    intro = re.compile(r"(?:i'?m|i am|my name is|name's|this is|it'?s|call me)\s*,?\s*$", re.IGNORECASE)
    return any(not intro.search(message[: m.start()]) for m in used)


def user_text_events(text: str, earlier: list[str], name: str) -> list[tuple[str, str]]:
    """The events a simulated user's message raises: repetition, an assistant's voice, its own name."""
    events = []
    if text and repeats(text, earlier):
        events.append(("user_repetition", text[:80]))
    if text and breaks_character(text):
        events.append(("user_broke_character", text[:80]))
    if text and names_self(text, name):
        events.append(("user_named_self", text[:80]))
    return events
