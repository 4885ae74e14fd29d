"""User-as-a-Judge and the third-party judge: 10 dimension scores (1-5) with evidence.

The user-judge sees its own profile, its state trajectory and the transcript. The third-party judge
sees the transcript only. An output that never parses is unscored: every score None, counted.
"""

from __future__ import annotations

from typing import Any

from ..models.base import ChatModel
from ..models.structured import ask_json
from ..profiles.schema import Profile
from ..prompts import load_prompt
from ..simulate.conversation import Conversation
from .dimensions import keys, rubric_text, scores_schema

USER_JUDGE = "user"


def trajectory_text(conv: Conversation) -> str:
    rows = []
    for s in conv.states:
        met = f"; met: {', '.join(s.needs_met)}" if s.needs_met else ""
        missed = f"; missed: {', '.join(s.needs_missed)}" if s.needs_missed else ""
        rows.append(f"{s.turn}: intensity {s.intensity}, trust {s.trust}; {s.thought or '-'}{met}{missed}")
    return "\n".join(rows) or "(no inner record)"


def assessment_record(judge: str, data: dict[str, Any] | None, error: str, attempts: int) -> dict[str, Any]:
    return {
        "judge": judge,
        "scores": {k: (int(data[k]["score"]) if data else None) for k in keys()},
        "evidence": {k: (str(data[k].get("evidence", "")) if data else "") for k in keys()},
        "unscored": data is None,
        "error": error,
        "attempts": attempts,
    }


async def judge_as_user(model: ChatModel, profile: Profile, conv: Conversation, seed: int = 0) -> dict[str, Any]:
    p = load_prompt("user_judge")
    system = load_prompt("user_system").render(persona=profile.persona_card(), transcript=conv.transcript("You"))
    text = p.render(trajectory=trajectory_text(conv), rubric=rubric_text(), keys=", ".join(keys()))
    r = await ask_json(
        model,
        [{"role": "system", "content": system}, {"role": "user", "content": text}],
        scores_schema(),
        seed=seed,
        prompt_version=p.version,
        max_tokens=900,
    )
    return assessment_record(USER_JUDGE, r.data, r.error, r.attempts)


async def judge_third_party(model: ChatModel, name: str, conv: Conversation, seed: int = 0) -> dict[str, Any]:
    p = load_prompt("third_party_judge")
    text = p.render(transcript=conv.transcript("Seeker", "Supporter"), rubric=rubric_text(), keys=", ".join(keys()))
    r = await ask_json(
        model, [{"role": "user", "content": text}], scores_schema(), seed=seed, prompt_version=p.version, max_tokens=900
    )
    return assessment_record(name, r.data, r.error, r.attempts)
