"""A file of replies to reward (``emoharbor reward``): JSON Lines, one context per line with its replies.

    {"id": "c1", "profile": "builtin:p002-aiko-burnout", "turns": [{"speaker": "user", "text": "..."}],
     "replies": ["reply one", "reply two"]}

``profile`` is a built-in id (``builtin:ID``), a profile file with one profile, or the profile itself (an
object); ``turns`` end on the user's turn (``speaker`` user or supporter; seeker is read as user);
``reply`` (one) or ``replies`` (a list); ``intensity`` and ``trust`` optional (default: the profile's
intensity and the initial trust). A line in ``RewardContext.to_dict`` form under ``context`` is taken too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..data.jsonl import read_jsonl
from ..errors import DataError, EmoharborError, validation_message
from ..profiles.loader import resolve_profiles
from ..profiles.schema import Profile
from ..simulate.conversation import Turn
from .context import RewardContext

SPEAKERS = {"user": "user", "seeker": "user", "supporter": "supporter", "assistant": "supporter"}


def _profile(value: Any, where: str) -> Profile:
    if isinstance(value, dict):
        try:
            return Profile.model_validate(value)
        except ValidationError as e:
            raise DataError(validation_message(f"{where}: field 'profile'", e)) from None
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field 'profile': give builtin:ID, a profile file, or the profile as an object")
    try:
        found = resolve_profiles([value])
    except EmoharborError as e:
        raise DataError(f"{where}: field 'profile': {e}") from None
    if len(found) != 1:
        raise DataError(f"{where}: field 'profile': {value!r} gives {len(found)} profiles, not one")
    return found[0]


def _turns(value: Any, where: str) -> list[Turn]:
    if not isinstance(value, list) or not value:
        raise DataError(f"{where}: field 'turns': a non-empty list of {{speaker, text}}")
    out = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or t.get("speaker") not in SPEAKERS or not isinstance(t.get("text"), str):
            raise DataError(f"{where}: field 'turns.{i}': needs speaker (user or supporter) and text")
        out.append(Turn(speaker=SPEAKERS[t["speaker"]], text=t["text"]))  # type: ignore[arg-type]
    if out[-1].speaker != "user" or not out[-1].text.strip():
        raise DataError(f"{where}: field 'turns': the last turn must be the user's, with text (the reply answers it)")
    return out


def _int(rec: dict[str, Any], key: str, default: int, where: str) -> int:
    v = rec.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100:
        raise DataError(f"{where}: field '{key}': an integer from 0 to 100")
    return v


def read_replies(path: Path, initial_trust: int) -> list[tuple[RewardContext, list[str]]]:
    out = []
    seen: set[str] = set()
    for n, rec in read_jsonl(path, "reply file"):
        where = f"{path}: line {n}"
        if not isinstance(rec, dict):
            raise DataError(f"{where}: not a JSON object")
        replies = rec.get("replies", [rec["reply"]] if "reply" in rec else None)
        if not isinstance(replies, list) or not replies or not all(isinstance(r, str) for r in replies):
            raise DataError(f"{where}: field 'replies': a non-empty list of strings (or 'reply': one string)")
        if isinstance(rec.get("context"), dict):
            try:
                ctx = RewardContext.from_dict(rec["context"])
            except (KeyError, TypeError, ValueError) as e:
                raise DataError(f"{where}: field 'context': not a reward context ({e})") from None
        else:
            profile = _profile(rec.get("profile"), where)
            turns = _turns(rec.get("turns"), where)
            cid = str(rec.get("id") or f"line{n}")
            ctx = RewardContext(cid, "file", profile, turns,
                                _int(rec, "intensity", profile.emotional_state.intensity, where),
                                _int(rec, "trust", initial_trust, where),
                                sum(t.speaker == "supporter" for t in turns), cid)  # fmt: skip
        if ctx.id in seen:
            raise DataError(f"{where}: field 'id': {ctx.id!r} is given twice in this file")
        seen.add(ctx.id)
        out.append((ctx, replies))
    if not out:
        raise DataError(f"{path}: no replies in it")
    return out
