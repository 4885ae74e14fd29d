"""Controlled bad replies, made from a case by rules (no model), so that a suite is deterministic and cheap.

Each maker is one way a reply can fail a person (``MAKERS``, by name, in the suite's order); every case gets
the reply of each maker that can make one:

- ``off_target``: a real supporter reply from another talk about another problem, the nearest in length;
- ``generic`` / ``generic_long``: a platitude; the long one is padded with more platitudes to the real
  reply's length, so a scorer that only likes long replies cannot pass;
- ``dismissive`` / ``dismissive_long``: "you're overthinking it, others have it worse", likewise;
- ``advice``: a numbered list of impersonal instructions;
- ``ignores_last``: answers an earlier seeker turn (quotes it and asks about it), not the last message;
- ``wrong_facts``: the real reply with the seeker's details swapped for another story's (its content words
  that the seeker used, replaced by another seeker's; and the other story's problem named first);
- ``repeats``: the supporter's previous message, verbatim;
- ``role_break``: speaks as the seeker, or as an AI disclaiming itself (alternating by case).

The texts live in ``bad_replies.yaml``; ``suite_version()`` hashes them with this rule set's name.
"""

from __future__ import annotations

import hashlib
import random
import re
import zlib
from collections import Counter
from collections.abc import Callable
from functools import cache, partial
from importlib import resources
from typing import Any

import yaml

from ..scoring.case import Case
from ..simulate.conversation import words
from .cases import Pool

RULES = "bad-replies-1"  # bump when a rule below changes what it makes
WORD = re.compile(r"[A-Za-z']+")


@cache
def texts() -> dict[str, Any]:
    raw = resources.files(__package__).joinpath("bad_replies.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(raw))


@cache
def stop_words() -> frozenset[str]:
    return frozenset(str(texts()["stop_words"]).split())


def suite_version() -> str:
    blob = RULES + resources.files(__package__).joinpath("bad_replies.yaml").read_text(encoding="utf-8")
    return f"{RULES}@{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def _rng(case: Case, maker: str) -> random.Random:
    return random.Random(zlib.crc32(f"{case.id}|{maker}".encode()))


def fixed(maker: str, case: Case, pool: Pool) -> str:
    """One of ``maker``'s texts."""
    return str(_rng(case, maker).choice(list(texts()[maker])))


def padded(maker: str, case: Case, pool: Pool) -> str:
    """``maker``'s texts (shuffled, again and again) joined until the text has the real reply's words or more."""
    order = list(texts()[maker])
    order = _rng(case, f"{maker}_long").sample(order, len(order))
    out: list[str] = []
    while not out or words(" ".join(out)) < words(case.real):
        out.append(order[len(out) % len(order)])
    return " ".join(out)


def _others(case: Case, items: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Texts of other talks about another problem (about another talk, when the problem is unknown)."""
    dialog = case.context.history
    return [x for x in items if x[0] != dialog and (not case.problem or x[1].lower() != case.problem.lower())]


def off_target(case: Case, pool: Pool) -> str | None:
    others = _others(case, pool.replies)
    if not others:
        return None
    n = words(case.real)
    rng = _rng(case, "off_target")
    return min(others, key=lambda x: (abs(words(x[2]) - n), rng.random()))[2]


def content_words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text) if len(w) >= 4 and w.lower() not in stop_words()]


def problem_phrase(problem: str) -> str:
    return str(texts()["problems"].get(problem.lower(), problem.lower() or "what happened"))


def wrong_facts(case: Case, pool: Pool) -> str | None:
    others = _others(case, pool.seeker)
    if not others:
        return None
    rng = _rng(case, "wrong_facts")
    dialog, problem, _ = rng.choice(others)
    theirs = Counter(w for d, _, t in pool.seeker if d == dialog for w in content_words(t))
    mine = {w for t in case.context.turns if t.speaker == "user" for w in content_words(t.text)}
    swaps = iter([w for w, _ in theirs.most_common() if w not in mine])
    mapping: dict[str, str] = {}

    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        low = w.lower()
        if low in mine:
            if low not in mapping:
                mapping[low] = next(swaps, low)
            new = mapping[low]
            return new.capitalize() if w[0].isupper() else new
        return w

    body = WORD.sub(swap, case.real)
    return f"{str(texts()['wrong_facts']).format(problem=problem_phrase(problem))} {body}"


def ignores_last(case: Case, pool: Pool) -> str | None:
    earlier = [t.text for t in case.context.turns[:-1] if t.speaker == "user" and words(t.text) >= 4]
    if not earlier:
        return None
    first = re.split(r"(?<=[.!?])\s+", earlier[0].strip())[0]
    quote = " ".join(first.split()[:20])
    return str(texts()["ignores_last"]).format(quote=quote)


def repeats(case: Case, pool: Pool) -> str | None:
    mine = [t.text for t in case.context.turns if t.speaker == "supporter" and t.text.strip()]
    return mine[-1] if mine else None


def role_break(case: Case, pool: Pool) -> str | None:
    rng = _rng(case, "role_break")
    if zlib.crc32(case.id.encode()) % 2 == 0:
        return str(rng.choice(list(texts()["seeker_voice"])))
    return str(rng.choice(list(texts()["ai_voice"]))).format(problem=problem_phrase(case.problem))


MAKERS: dict[str, Callable[[Case, Pool], str | None]] = {
    "off_target": off_target,
    "generic": partial(fixed, "generic"),
    "generic_long": partial(padded, "generic"),
    "dismissive": partial(fixed, "dismissive"),
    "dismissive_long": partial(padded, "dismissive"),
    "advice": partial(fixed, "advice"),
    "ignores_last": ignores_last,
    "wrong_facts": wrong_facts,
    "repeats": repeats,
    "role_break": role_break,
}


def bad_replies(case: Case, pool: Pool, makers: list[str]) -> dict[str, str]:
    """The case's bad reply of each of ``makers`` that can make one (one that cannot is left out: the case
    has no earlier seeker turn to answer, no other talk to borrow from)."""
    out = {}
    for k in makers:
        text = MAKERS[k](case, pool)
        if text and text.strip() and text.strip() != case.real.strip():
            out[k] = text.strip()
    return out
