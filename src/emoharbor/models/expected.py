"""Probability-weighted scores (the G-Eval idea): instead of the digit a judge wrote, the mean of the score
values weighted by the probability the model gave each of them at that position of its output.

The judge's reply is a JSON object with one integer score per dimension (``{"empathy": {"score": 4, ...}}``
or ``{"empathy": 4}``). For each dimension the score's digit is found in the text, the generated token
that spells it is found among the call's token log-probabilities, and the alternatives at that position
whose text is one of the allowed values are kept and renormalised over those values:
``expected = sum(v * p(v)) / sum(p(v))``. The written integer is kept beside it by the caller.

A dimension whose digit cannot be tied to one token (the reply and the tokens do not spell the same text,
or the digit shares its token with other characters) gets ``None`` for that dimension: it is unscored for
this scoring, never replaced by the integer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .base import TokenLogprob


@dataclass(frozen=True)
class ExpectedScores:
    expected: dict[str, float | None]
    probs: dict[str, dict[int, float]]  # the renormalised distribution over the allowed values
    error: str = ""  # why a dimension has no expected score (the first reason met)


def digit_offset(text: str, key: str, field: str = "score") -> int | None:
    """Where the score of ``key`` starts in ``text``: ``"key": 4``, or ``"key": {... "field": 4`` (the
    field among the entry's others, as a HEART verdict's ``strength``)."""
    m = re.search(rf'"{re.escape(key)}"\s*:\s*(?:\{{[^{{}}]*?"{re.escape(field)}"\s*:\s*)?(\d)', text)
    return m.start(1) if m else None


def aligned(text: str, tokens: Sequence[TokenLogprob]) -> int | None:
    """Where the parsed ``text`` starts in what the tokens spell: 0 when they spell it exactly; further on when
    the model wrapped it (a code fence, a sentence before the JSON); None when the tokens do not hold it."""
    joined = "".join(t.token for t in tokens)
    if joined == text:
        return 0
    at = joined.find(text) if text else -1
    return at if at >= 0 else None


def token_at(tokens: Sequence[TokenLogprob], offset: int) -> TokenLogprob | None:
    pos = 0
    for t in tokens:
        if pos <= offset < pos + len(t.token):
            return t
        pos += len(t.token)
    return None


def value_distribution(tok: TokenLogprob, values: Sequence[int]) -> dict[int, float]:
    """The probabilities of the allowed values at one position, renormalised over those values (a value's
    spellings with and without surrounding space are added up)."""
    allowed = {str(v): v for v in values}
    mass: dict[int, float] = {}
    seen: set[str] = set()
    for text, lp in [(tok.token, tok.logprob), *tok.top]:
        if text in seen:
            continue
        seen.add(text)
        v = allowed.get(text.strip())
        if v is not None and math.isfinite(lp):
            mass[v] = mass.get(v, 0.0) + math.exp(lp)
    total = sum(mass.values())
    return {v: p / total for v, p in sorted(mass.items())} if total > 0 else {}


def expected_scores(
    text: str,
    tokens: Sequence[TokenLogprob] | None,
    keys: Sequence[str],
    values: Sequence[int],
    field: str = "score",
) -> ExpectedScores:
    if tokens is None:
        return ExpectedScores(dict.fromkeys(keys), {}, "the backend returned no log-probabilities")
    base = aligned(text, tokens)
    if base is None:
        return ExpectedScores(dict.fromkeys(keys), {}, "the tokens do not spell the reply")
    expected: dict[str, float | None] = {}
    probs: dict[str, dict[int, float]] = {}
    error = ""
    for k in keys:
        off = digit_offset(text, k, field)
        tok = token_at(tokens, base + off) if off is not None else None
        dist: dict[int, float] = {}
        if off is not None and tok is not None and tok.token.strip() == text[off]:
            dist = value_distribution(tok, values)
        if not dist:
            expected[k] = None
            error = error or f"no single score token for {k}"
            continue
        probs[k] = dist
        expected[k] = sum(v * p for v, p in dist.items())
    return ExpectedScores(expected, probs, error)


def word_offset(text: str, key: str) -> int | None:
    """Where the word value of ``key`` starts in ``text`` (``"key": "good"``: the ``g``)."""
    m = re.search(rf'"{re.escape(key)}"\s*:\s*"([A-Za-z])', text)
    return m.start(1) if m else None


def word_distribution(tok: TokenLogprob, start: str, words: Sequence[str]) -> dict[str, float]:
    """The probabilities of ``words`` at the position of the token that spells a word's start: each
    alternative, stripped of the quote and spaces that ``start`` (the token's text before the word) holds,
    counts for the one word it begins (an alternative that begins several, or none, is left out);
    renormalised over the words."""
    mass: dict[str, float] = {}
    seen: set[str] = set()
    for text, lp in [(tok.token, tok.logprob), *tok.top]:
        if text in seen or not math.isfinite(lp):
            continue
        seen.add(text)
        if not text.startswith(start):
            continue
        m = re.match(r"[A-Za-z]+", text[len(start) :])
        head = m.group(0).lower() if m else ""
        hits = [w for w in words if head and w.startswith(head)]
        if len(hits) == 1:
            mass[hits[0]] = mass.get(hits[0], 0.0) + math.exp(lp)
    total = sum(mass.values())
    return {w: p / total for w, p in sorted(mass.items())} if total > 0 else {}


def expected_word(text: str, tokens: Sequence[TokenLogprob] | None, key: str, values: dict[str, float]) -> float | None:
    """The mean of ``values`` (a value per allowed word) weighted by the probability the model gave each word
    where it wrote the value of ``key``; None where that cannot be read (no log-probabilities, the tokens do
    not spell the text, or the word's first token also holds other text than a quote or spaces)."""
    base = aligned(text, tokens) if tokens is not None else None
    off = word_offset(text, key)
    if tokens is None or base is None or off is None:
        return None
    off, text = base + off, "".join(t.token for t in tokens)
    pos = 0
    for t in tokens:
        if pos <= off < pos + len(t.token):
            start = text[pos:off]
            if start.strip(' "'):
                return None
            dist = word_distribution(t, start, list(values))
            return sum(values[w] * p for w, p in dist.items()) if dist else None
        pos += len(t.token)
    return None
