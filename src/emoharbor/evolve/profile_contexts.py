"""Refine contexts drawn from the simulated users' profiles (``refine.profiles``, ``refine.profile_share``): each is
a profile's opening message, as the rules user writes it (``simulate.rules_user.opening``: no model), as a one-turn
talk. With ``refine.personal_share``, a share of them is shown the person in the system prompt as ESConv contexts
are (``personal.personal_system``: the profile's emotion, problem type and story retold in the first person). The
reflector of every profile context is also shown the profile's persona card (``ChatExample.person``), so that its
reflection can name the personality, feelings and needs a one-line opening does not show.

A profile marked ``evaluation_only`` is refused, and the profiles a holdout file lists are left out; the ids of the
profiles a model was trained on go in its card (``card.TRAINED_PROFILES``), so ``evolve eval`` can refuse them."""

from __future__ import annotations

import random

from ..errors import ConfigError
from ..models.base import Message
from ..profiles.loader import resolve_profiles
from ..profiles.schema import Profile
from ..simulate.rules_user import opening, told_facts
from .data import ChatExample
from .guard import EvalGuard
from .personal import Personal, personal_system

SOURCE = "profile"
PREFIX = f"{SOURCE}:"  # a profile context's id: ``profile:<profile id>``


def training_profiles(specs: list[str], guard: EvalGuard | None = None) -> list[Profile]:
    """The profiles of ``specs`` (as a run config names them), less those ``guard`` holds out; a profile marked
    ``evaluation_only`` is a ConfigError in one line naming it and the field."""
    out = []
    for p in resolve_profiles(specs):
        if p.evaluation_only:
            raise ConfigError(f"refine.profiles: profile '{p.id}' is marked evaluation_only: true, so it is never "
                              "trained on: take it out of refine.profiles")  # fmt: skip
        if guard is None or not guard.blocks_record({"profile_id": p.id}):
            out.append(p)
    return out


def profile_context(p: Profile, system: str, personal: Personal | None = None) -> ChatExample:
    """``p``'s opening as a one-turn context; its system prompt shows the person where ``personal`` draws it."""
    ident = f"{PREFIX}{p.id}"
    facts = told_facts(p)
    shown = personal is not None and personal.shown(ident)
    text = personal_system(system, p.emotional_state.emotion, p.situation.problem_type, " ".join(facts))
    msgs: list[Message] = [{"role": "system", "content": text if shown else system},
                           {"role": "user", "content": opening(p, facts)}]  # fmt: skip
    return ChatExample(ident, msgs, "", SOURCE, shown, p.persona_card())


def profile_contexts(profiles: list[Profile], system: str, n: int, seed: int,
                     personal: Personal | None = None) -> list[ChatExample]:  # fmt: skip
    """``n`` of ``profiles`` (a seeded sample; all of them where there are fewer), each opening a context."""
    rng = random.Random(seed)
    return [profile_context(p, system, personal) for p in rng.sample(profiles, min(n, len(profiles)))]


def profile_id(ex_id: str) -> str | None:
    """The profile a context id (``profile:<id>``) was drawn from; None for another source's."""
    return ex_id.removeprefix(PREFIX) if ex_id.startswith(PREFIX) else None
