"""Is a judge's evidence a quote? Small models copy the prompt's placeholder ("...") or restate the rubric
anchor instead of quoting the supporter. Each evidence is sorted as:

- ``quoted``: at least four consecutive words of it (or all of it, when shorter) appear in a supporter
  message;
- ``not_a_quote``: words, but not the supporter's (a paraphrase, or a note of what was missing, which the
  prompts allow);
- ``placeholder``: fewer than two words of two letters or more ("...", "", "n/a").

The scores stand either way; these counts say how far to trust them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ..simulate.conversation import Conversation
from ..store.records import Assessment

WORD = re.compile(r"[a-z0-9']+")
OUTCOMES = ("quoted", "not_a_quote", "placeholder")  # what a piece of evidence is found to be (evidence_check)
RUN = 4


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower().replace("\u2019", "'"))


def evidence_check(evidence: str, supporter_texts: Iterable[str]) -> str:
    words = _words(evidence)
    if sum(1 for w in words if len(w) > 1) < 2:
        return "placeholder"
    said = [f" {' '.join(_words(t))} " for t in supporter_texts]
    n = min(RUN, len(words))
    pieces = (f" {' '.join(words[i : i + n])} " for i in range(len(words) - n + 1))
    return "quoted" if any(piece in s for piece in pieces for s in said) else "not_a_quote"


def evidence_counts(evidence: dict[str, str], supporter_texts: list[str]) -> Counter[str]:
    return Counter(evidence_check(e, supporter_texts) for e in evidence.values())


def assessment_evidence(assessment: Assessment | None, conv: Conversation) -> Counter[str]:
    """The evidence outcomes of one assessment of ``conv`` (none when it is missing or unscored)."""
    if assessment is None or not assessment.scored:
        return Counter()
    return evidence_counts(assessment.evidence, [t.text for t in conv.turns if t.speaker == "supporter"])
