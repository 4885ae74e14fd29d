"""The rungs of the ladder: supporters whose order is known by construction, best first.

Built in (``RUNGS``, in their known order), each a controlled step down from the one above:

- ``knows``: the supporter model told who it talks to (the default prompt and the profile's card,
  ``prompts/supporter_knows.txt``): the upper anchor, it can personalise because it is told the person;
- ``default``: the same model with the default prompt (``prompts/supporter_default.txt``);
- ``generic``: validates and reflects feelings in general terms and never uses a detail of what the seeker
  said (scripted, ``texts.yaml``);
- ``off_target``: the default rung's reply at the same turn of another profile's talk: fluent and kind, made
  by the same model, to another seeker's situation;
- ``dismissive``: minimising, changing the subject, "others have it worse" (scripted, ``texts.yaml``).

The scripted rungs are padded to the word count nearest the default rung's reply at the same turn of the same
profile (its replies again from the first where its talk was shorter), and the off-target rung is the default
rung's own replies, so no rung is told from another by length; they need no model and are the same whatever the
supporter model, so ladders of different user models compare. A user's own rung is a system prompt on the
supporter model (``builtin:NAME``, ``@FILE`` or the text), placed in the order the user gives.
"""

from __future__ import annotations

import hashlib
import random
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ..errors import ConfigError
from ..profiles.schema import Profile
from ..prompts import Prompt, load_prompt
from ..simulate.conversation import Turn, words
from ..simulate.supporter import supporter_prompt

REFERENCE = "default"  # the rung the scripted ones are length-matched to
PROMPTS = ("supporter_default", "supporter_knows", "supporter_card")
RULES = "ladder-rungs-2"  # the rules of the scripted rungs: bump when one changes what it makes (in every record)


@cache
def texts() -> dict[str, Any]:
    return dict(yaml.safe_load(resources.files(__package__).joinpath("texts.yaml").read_text(encoding="utf-8")))


def texts_version() -> str:
    raw = resources.files(__package__).joinpath("texts.yaml").read_text(encoding="utf-8")
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Rung:
    """One rung: its name, the system prompt of a rung on the supporter model (None: a scripted rung), and
    whether that prompt is followed by the profile's card (``told``: the rung knows who it talks to)."""

    name: str
    prompt: str | None = None  # builtin:NAME, @FILE or the text
    told: bool = False

    @property
    def scripted(self) -> bool:
        return self.prompt is None

    def system_prompt(self, profile: Profile) -> Prompt:
        base = supporter_prompt(self.prompt)
        if not self.told:
            return base
        told = load_prompt("supporter_knows").render(card=profile_card(profile))
        return Prompt("supporter_knows", f"{base.text}\n{told}")


# the built-in rungs, best first
RUNGS = {r.name: r for r in (Rung("knows", "builtin:default", told=True), Rung("default", "builtin:default"),
                             Rung("generic"), Rung("off_target"), Rung("dismissive"))}  # fmt: skip
BUILT_IN = tuple(RUNGS)


def rungs_of(order: list[str], own: dict[str, str]) -> list[Rung]:
    """The rungs in ``order`` (best first): built-in names, or names ``own`` gives a system prompt. One line for
    an unknown name, a repeated one, fewer than two, or a scripted rung without the default rung to match."""
    if len(order) < 2:
        raise ConfigError(f"--rungs {','.join(order)}: a ladder needs at least two rungs, best first")
    dup = sorted({r for r in order if order.count(r) > 1})
    if dup:
        raise ConfigError(f"--rungs: {', '.join(dup)} named twice")
    out = []
    for name in order:
        if name in own:
            if name in BUILT_IN:
                raise ConfigError(f"--rung {name}=...: {name} is a built-in rung; give your own another name")
            try:
                supporter_prompt(own[name])
            except ConfigError as e:
                raise ConfigError(f"--rung {name}: {e}") from None
            out.append(Rung(name, own[name]))
        elif name in BUILT_IN:
            out.append(RUNGS[name])
        else:
            raise ConfigError(f"--rungs: no rung {name!r}: built-in {', '.join(BUILT_IN)}, or give it with "
                              f"--rung {name}=PROMPT")  # fmt: skip
    unused = sorted(set(own) - set(order))
    if unused:
        raise ConfigError(f"--rung {unused[0]}: not in --rungs, so its place in the order is unknown")
    if any(r.scripted for r in out) and REFERENCE not in order:
        scripted = ", ".join(r for r in BUILT_IN if RUNGS[r].scripted)
        raise ConfigError(
            f"--rungs: the scripted rungs ({scripted}) are matched to the default rung's replies: "
            "put default in the ladder too"
        )
    return out


def profile_card(p: Profile) -> str:
    """What the ``knows`` rung is told of the person (``prompts/supporter_card.txt``)."""
    c, s, n = p.communication_style, p.situation, p.needs
    return load_prompt("supporter_card").render(
        name=p.name, age=p.age, gender=p.gender or "person", occupation=p.occupation or "no stated job",
        culture=f", {p.culture}" if p.culture else "", traits=", ".join(p.personality.traits) or "not stated",
        verbosity=c.verbosity, directness=c.directness, formality=c.formality, humour=c.humour,
        notes=f". {c.notes}" if c.notes else "", problem=s.problem_type, story=s.story,
        tried="; ".join(s.already_tried) or "nothing yet", constraints="; ".join(s.constraints) or "none stated",
        emotion=p.emotional_state.emotion, surface=n.surface_request, hidden=n.hidden_need,
        liked="; ".join(n.liked_support) or "not sure",
        disliked="; ".join(n.disliked_support) or "nothing in particular",
    ).rstrip("\n")  # fmt: skip


def default_replies(turns: list[dict[str, Any]]) -> list[str]:
    """The supporter's replies of a stored talk, in order."""
    return [str(t["text"]) for t in turns if t["speaker"] == "supporter"]


def at(replies: list[str], i: int) -> str:
    """The reply at supporter turn ``i``; where the talk was shorter, its replies again from the first."""
    return replies[i % len(replies)]


def padded(rung: str, target: int, rng: random.Random) -> str:
    """``rung``'s texts in a shuffled order, as many as bring the words nearest ``target`` (one at least; the
    fewer at a tie), so that the rung is as often a little shorter than the reply it matches as longer."""
    order = rng.sample(list(texts()[rung]), len(texts()[rung]))
    out: list[str] = []
    while not out or words(" ".join(out)) < target:
        out.append(order[len(out) % len(order)])
    if len(out) > 1 and target - words(" ".join(out[:-1])) <= words(" ".join(out)) - target:
        out.pop()
    return " ".join(out)


class ScriptedSupporter:
    """A scripted rung in a talk: its reply at supporter turn ``i`` is made from ``reference`` (the default rung's
    replies to this profile) and, for the off-target rung, ``donor`` (the default rung's replies to another)."""

    def __init__(self, name: str, profile_id: str, reference: list[str], donor: list[str] | None = None) -> None:
        if not reference or (name == "off_target" and not donor):
            raise ValueError(f"the {name} rung needs the default rung's replies")
        self.name, self.profile_id, self.reference, self.donor = name, profile_id, reference, donor or []

    async def reply(self, turns: list[Turn], seed: int) -> tuple[str, list[tuple[str, str]]]:
        i = sum(1 for t in turns if t.speaker == "supporter")
        if self.name == "off_target":
            return at(self.donor, i), []
        rng = random.Random(zlib.crc32(f"{self.profile_id}|{self.name}|{i}".encode()))
        return padded(self.name, words(at(self.reference, i)), rng), []


def donors(profiles: list[Profile]) -> dict[str, str]:
    """For each profile, the profile whose default talk the off-target rung replays: the nearest one before it
    in the list with another problem type (so that its talk is made first), else the nearest after it; any other
    profile where all have the same problem type."""
    out = {}
    for i, p in enumerate(profiles):
        near = [*reversed(profiles[:i]), *profiles[i + 1 :]]
        other = [q for q in near if q.situation.problem_type.lower() != p.situation.problem_type.lower()]
        if other or near:
            out[p.id] = (other or near)[0].id
    return out
