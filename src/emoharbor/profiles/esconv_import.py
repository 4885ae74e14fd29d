"""DRAFT profiles from ESConv records, optionally enriched by a model from the seeker's own turns.

What a draft takes from the record, and the documented defaults for what the record does not say:

- ``id``: ``esconv-<file stem>-<index>`` (stem lowercased, other characters than ``a-z0-9_-`` -> ``-``).
- ``situation.problem_type``: the record's ``problem_type`` lowercased (``conflict with parents`` ->
  ``issues with parents``, the ESConv category it duplicates); missing -> ``unspecified``.
- ``situation.story``: the record's ``situation``; missing -> the seeker's first turn, tag
  ``esconv-no-situation``.
- ``emotional_state``: the record's ``emotion_type`` (lowercased; missing -> ``unspecified``) and the
  seeker's own ``initial_emotion_intensity`` r (1..5) mapped to ``INTENSITY_BY_RATING[r] = 20*r - 10``,
  the middle of the r-th fifth of 0-100 (1->10, 2->30, 3->50, 4->70, 5->90). Missing ->
  ``MISSING_INTENSITY`` (50, the middle of the scale) and tag ``esconv-intensity-missing``.
- ``age``: ESConv gives none; ``DEFAULT_AGE`` (30) and tag ``esconv-age-unknown``.
- personality 0.5 on every trait, default communication style, disclosure pace ``medium``: neutral,
  not inferred. ``needs.hidden_need_type`` ``venting`` with tag ``esconv-need-unknown`` until enriched.
- ``risk_level``: ``elevated`` (tag ``esconv-risk-keywords``) when a seeker turn mentions self-harm or
  suicide (``RISK_WORDS``), else ``none``. A deliberately cautious flag: it also fires on negations
  ("I'm not suicidal") and on other people's suicide, so a human should read the flagged records.
- tags ``esconv``, ``draft`` (+ ``esconv-failed`` when the record is a failed conversation).

``enrich_profile`` asks a model for personality, communication style, hidden need and liked/disliked
support from the SEEKER's turns only. A reply that does not parse (after ``ask_json``'s re-asks) or a
failed call leaves the draft unchanged and returns the error, for the caller to count: never invented.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, get_args

from pydantic import ValidationError

from ..data.esconv import EsconvDialog
from ..models.base import ChatModel, ModelCallError
from ..models.structured import ask_json
from ..prompts import load_prompt
from .schema import CommunicationStyle, HiddenNeed, Needs, Personality, Profile
from .stats import TRAITS

POINTS_PER_RATING = 20  # a step of the survey's 1-5 intensity on the simulated 0-100 scale
INTENSITY_BY_RATING = {r: POINTS_PER_RATING * r - 10 for r in range(1, 6)}


def seeker_relief(initial: int | None, final: int | None, supporter_turns: int) -> float | None:
    """A real seeker's intensity fallen per supporter turn (its survey's initial minus final, on the simulated
    0-100 scale); None where the survey or the turns are missing."""
    if initial is None or final is None or not supporter_turns:
        return None
    return (initial - final) * POINTS_PER_RATING / supporter_turns


MISSING_INTENSITY = 50
DEFAULT_AGE = 30
PROBLEM_ALIASES = {"conflict with parents": "issues with parents"}
RISK_WORDS = re.compile(
    r"\b(suicid\w*|kill(ing)? myself|end(ing)? (my life|it all)|self[- ]harm\w*|cut(ting)? myself|hurt(ing)? myself|"
    r"want to die|better off dead|no reason to live)\b",
    re.IGNORECASE,
)
MAX_SEEKER_CHARS = 6000
PROMPT = "profile_enrich"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_") or "esconv"


def draft_id(dialog: EsconvDialog) -> str:
    stem = _slug(dialog.id.rsplit(":", 1)[0])
    suffix = f"-{dialog.index}"
    return f"esconv-{stem}"[: 64 - len(suffix)] + suffix


def seeker_text(dialog: EsconvDialog) -> list[str]:
    return [t.text for t in dialog.merged_turns() if t.speaker == "seeker"]


def draft_profile(dialog: EsconvDialog, *, evaluation_only: bool = False) -> Profile:
    """A draft profile from one ESConv record (see the module docstring for every default)."""
    tags = ["esconv", "draft"]
    problem = dialog.problem_type.strip().lower() or "unspecified"
    problem = PROBLEM_ALIASES.get(problem, problem)
    seeker = seeker_text(dialog)
    story = dialog.situation.strip()
    if not story:
        story = seeker[0] if seeker else "The ESConv record describes no situation."
        tags.append("esconv-no-situation")
    rating = dialog.survey.get("initial_emotion_intensity")
    intensity = MISSING_INTENSITY if rating is None else INTENSITY_BY_RATING[rating]
    if rating is None:
        tags.append("esconv-intensity-missing")
    risky = any(RISK_WORDS.search(t) for t in seeker)
    if risky:
        tags.append("esconv-risk-keywords")
    if dialog.failed:
        tags.append("esconv-failed")
    tags += ["esconv-age-unknown", "esconv-need-unknown"]
    emotion = dialog.emotion_type.strip().lower() or "unspecified"
    return Profile.model_validate({
        "id": draft_id(dialog), "name": f"ESConv seeker {dialog.id}", "age": DEFAULT_AGE,
        "personality": {t: 0.5 for t in TRAITS},
        "situation": {"problem_type": problem, "story": story},
        "emotional_state": {"emotion": emotion, "intensity": intensity},
        "needs": {"surface_request": f"To talk about my {problem} and feel a bit better.",
                  "hidden_need": "Not known from the record (draft).", "hidden_need_type": "venting"},
        "risk_level": "elevated" if risky else "none", "evaluation_only": evaluation_only, "tags": tags,
    })  # fmt: skip


def _enum(values: Any) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


STYLE_FIELDS = ("verbosity", "directness", "formality", "humour")
NEED_FIELDS = ("hidden_need", "hidden_need_type", "liked_support", "disliked_support")
_STRINGS = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}
ENRICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{t: {"type": "integer", "enum": list(range(11))} for t in TRAITS},
        "traits": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
        **{f: _enum(get_args(CommunicationStyle.model_fields[f].annotation)) for f in STYLE_FIELDS},
        "style_notes": {"type": "string"},
        "hidden_need": {"type": "string", "minLength": 1},
        "hidden_need_type": _enum(get_args(HiddenNeed)),
        "liked_support": _STRINGS,
        "disliked_support": _STRINGS,
        "disclosure_pace": _enum(["slow", "medium", "fast"]),
    },
    "required": [*TRAITS, *STYLE_FIELDS, *NEED_FIELDS, "disclosure_pace"],
    "additionalProperties": False,
}


def _apply(profile: Profile, d: dict[str, Any]) -> Profile:
    personality = Personality(**{t: d[t] / 10 for t in TRAITS}, traits=d.get("traits", []))
    style = CommunicationStyle(**{f: d[f] for f in STYLE_FIELDS}, notes=d.get("style_notes", ""))
    needs = Needs(surface_request=profile.needs.surface_request, **{k: d[k] for k in NEED_FIELDS})
    tags = [t for t in profile.tags if t != "esconv-need-unknown"] + ["llm-enriched"]
    data = profile.model_dump() | {
        "personality": personality.model_dump(), "communication_style": style.model_dump(),
        "needs": needs.model_dump(), "disclosure_pace": d["disclosure_pace"], "tags": tags,
    }  # fmt: skip
    return Profile.model_validate(data)


async def enrich_profile(
    profile: Profile, dialog: EsconvDialog, model: ChatModel, *, seed: int = 0
) -> tuple[Profile, str | None]:
    """``(enriched profile, None)``, or ``(profile unchanged, error)`` when the model's output is unusable."""
    turns = seeker_text(dialog)
    if not turns:
        return profile, "the record has no seeker turns to infer from"
    text: list[str] = []
    used = 0
    for t in turns:  # the seeker's turns in order, up to MAX_SEEKER_CHARS (the first one always, cut if need be)
        if text and used + len(t) > MAX_SEEKER_CHARS:
            break
        text.append(f"- {t[:MAX_SEEKER_CHARS]}")
        used += len(t)
    prompt = load_prompt(PROMPT)
    content = prompt.render(
        problem_type=profile.situation.problem_type, emotion=profile.emotional_state.emotion,
        situation=profile.situation.story, seeker_turns="\n".join(text),
        need_types=", ".join(get_args(HiddenNeed)),
    )  # fmt: skip
    try:
        r = await ask_json(model, [{"role": "user", "content": content}], ENRICH_SCHEMA, seed=seed,
                           prompt_version=prompt.version, max_tokens=600)  # fmt: skip
    except ModelCallError as e:
        return profile, f"model call failed: {e}"
    if r.data is None:
        return profile, f"unusable output after {r.attempts} attempts: {r.error}"
    try:
        return _apply(profile, r.data), None
    except (ValidationError, KeyError, TypeError) as e:
        return profile, f"output does not fit the profile schema: {str(e).splitlines()[0]}"


async def enrich_all(
    pairs: list[tuple[Profile, EsconvDialog]], model: ChatModel, *, concurrency: int = 4
) -> tuple[list[Profile], list[tuple[str, str]]]:
    """Enrich every draft; returns the profiles (failed ones unchanged) and ``(profile id, error)`` failures."""
    gate = asyncio.Semaphore(concurrency)

    async def one(p: Profile, d: EsconvDialog) -> tuple[Profile, str | None]:
        async with gate:
            return await enrich_profile(p, d, model)

    results = await asyncio.gather(*(one(p, d) for p, d in pairs))
    failures = [(p.id, err) for p, err in results if err is not None]
    return [p for p, _ in results], failures
