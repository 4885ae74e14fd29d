"""Judge forms, in one registry: a form is its name, what it rates (a conversation, one reply, or a pair of
replies), what it is shown, the prompt and rubric a card of that form gets when it names none, and the
function that builds its messages. A card (a YAML file) picks its form with its ``kind:`` key (the key's old
name, kept: a card's version hashes its fields, and every stored run's record holds it); the code asks the
form, never its name: "which forms rate a conversation?", "build this card's messages".

The built-in forms register themselves in the modules named in ``BUILT_IN``: ``user``, ``profile_aware`` and
``third_party`` (conversation_judges.py), ``reply`` (reply_judge.py), ``heart_pairwise`` (pair_judge.py),
``seeker_choice`` (seeker_choice.py). A user's own form is its own module with one ``register_judge_form(...)``
line, named in a card as ``kind: module:name``; the module is imported, it registers ``name``, and the run's
recorded card names it the same way (docs/extending.md).

A form's ``messages`` takes a ``cards.JudgeCard``; ``cards`` asks this module for a card's form, so this module
does not name that class back: ``Card`` is what it reads of a card itself, and ``messages`` takes the card as
``Any``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from ..errors import ConfigError
from ..models.base import Message
from ..profiles.schema import Profile
from ..registry import add, caller, lookup
from ..simulate.conversation import Conversation, Turn
from .dimensions import DEFAULT_RUBRIC

# modules of this package that register a form
BUILT_IN = ("conversation_judges", "reply_judge", "pair_judge", "seeker_choice")
Rates = Literal["conversation", "reply", "pair"]
Asked = tuple[list[Message], str]  # the messages, and the prompt version of the call's cache key
ELSEWHERE: dict[Rates, str] = {  # what a card of a form is, and where it belongs, when given where it does not
    "conversation": "a judge of a whole conversation: give it to `emoharbor run`, `assess` or `validate`",
    "reply": "a judge of one reply, not of a conversation: give it to `emoharbor sensitivity`",
    "pair": "a HEART pairwise judge: give it to `emoharbor heart judge` or `emoharbor sensitivity`",
}


class Card(Protocol):
    """What ``card_form`` reads of a judge card (a ``cards.JudgeCard``)."""

    name: str
    kind: str  # the card's form, by its key's kept name


@dataclass(frozen=True)
class Pair:
    """What a pairwise judge is shown: the conversation so far and two next replies under neutral ids."""

    context: str  # a line on the seeker's situation, or ""
    transcript: str
    first: tuple[str, str]  # (neutral id, reply)
    second: tuple[str, str]
    dimensions: str  # the dimensions to compare on, described
    keys: list[str]  # the answer's keys: the dimensions and "overall"
    situation: str = ""  # the seeker's own account of their situation, where the history has one (always given)
    emotion: str = ""  # the emotion the seeker named, where the history has one


@dataclass(frozen=True, kw_only=True)
class JudgeForm:
    name: str
    shown: tuple[str, ...]  # what it is shown, in words
    prompt: str  # the prompt file of a card of this form that names none (builtin:NAME or a path)
    rubric: str | None = DEFAULT_RUBRIC  # likewise its rubric; None: it reads no rubric
    rates: ClassVar[Rates]


@dataclass(frozen=True, kw_only=True)
class ConversationForm(JudgeForm):
    """Rates a whole conversation: runs, ``assess`` and validate take it."""

    messages: Callable[[Any, Conversation, Profile | None], Asked]  # (a cards.JudgeCard, ...)
    profile: bool = False  # it is shown the user's profile: a conversation without one is refused
    lived: bool = False  # the simulated user itself, shown its inner record: it runs on the user's model, and
    # validate replays the conversation through the user for it
    rates: ClassVar[Rates] = "conversation"


@dataclass(frozen=True, kw_only=True)
class ReplyForm(JudgeForm):
    """Rates one next reply in its context (the turns so far): the sensitivity suite takes it."""

    messages: Callable[[Any, list[Turn], str], Asked]  # (a cards.JudgeCard, ...)
    rates: ClassVar[Rates] = "reply"


@dataclass(frozen=True, kw_only=True)
class PairForm(JudgeForm):
    """Compares two next replies (a winner and a strength per dimension): HEART, the sensitivity suite and
    evolve's judge check take it. Its dimensions come from the run, not from a rubric."""

    messages: Callable[[Any, Pair], Asked]  # (a cards.JudgeCard, ...)
    rubric: str | None = None
    chooses: bool = False  # it only names the reply it prefers overall: 1 (shown first) or 2 (no dimensions,
    # strength or rationale; ``heart.stages.judging.choice_schema``)
    rates: ClassVar[Rates] = "pair"


F = TypeVar("F", bound=JudgeForm)
FORMS: dict[str, JudgeForm] = {}


def register_judge_form(form: F) -> F:
    """Make ``form`` a form a card can name (``kind: NAME``)."""
    add(FORMS, form.name, form, module=caller(), what="judge form")
    return form


def judge_form(name: str) -> JudgeForm:
    """The form ``name``: a built-in one, or ``module:name`` (the module is imported and registers it)."""
    return lookup(FORMS, name, __package__ or "", BUILT_IN, field="judge form", what="judge form")


def card_form(card: Card, cls: type[F]) -> F:
    """The form of ``card``, refused in one line when it does not rate what ``cls`` rates."""
    form = judge_form(card.kind)
    if not isinstance(form, cls):
        raise ConfigError(f"judge card {card.name}: {ELSEWHERE[form.rates]}")
    return form
