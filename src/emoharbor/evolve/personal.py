"""Training on what the seeker said of themselves before the talk: an ESConv dialogue's emotion type, problem type
and situation (or a simulated user's profile's, for refine's contexts drawn from profiles) put in the system prompt of
a share of the examples (``sft.personal_share``, ``refine.personal_share``), from the prompt
``prompts/evolve_personal.txt``.

Which examples are shown it is seeded by the example's id (the same example is shown it in every run of the same
settings, whatever the sample around it), so a share of the model's training sees the person and the rest sees the
talk alone, as the supporter of an EmoHarbor evaluation does: the model is not taught to lean on a situation it
will not be given (docs/evolve.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..data.esconv import EsconvDialog
from ..prompts import load_prompt

PROMPT = "evolve_personal"
UNSAID = "not said"


@dataclass(frozen=True)
class Personal:
    share: float  # of the examples, 0 to 1
    seed: int

    def shown(self, example_id: str) -> bool:
        """Whether the example ``example_id`` is shown the seeker's situation: a seeded draw of its own."""
        if self.share <= 0:
            return False
        digest = hashlib.sha256(f"{self.seed}:{example_id}".encode()).digest()
        return self.share >= 1 or int.from_bytes(digest[:8], "big") / 2**64 < self.share


def told(d: EsconvDialog) -> bool:
    """Whether the dialogue's record says anything of the seeker before the talk."""
    return any(x.strip() for x in (d.emotion_type, d.problem_type, d.situation))


def personal_system(system: str, emotion: str, problem: str, situation: str) -> str:
    """``system`` followed by what the seeker said of themselves before the talk: an ESConv record's emotion type,
    problem type and situation, or a profile's (``profile_contexts``)."""
    return load_prompt(PROMPT).render(system=system, emotion=emotion.strip() or UNSAID,
                                      problem=problem.strip() or UNSAID,
                                      situation=" ".join(situation.split()) or UNSAID).strip()  # fmt: skip


def shown_record(share: float, personal: list[bool]) -> dict[str, Any]:
    """What a stage's examples (or contexts) were shown, for its summary and model card."""
    return {"share": share, "prompt": load_prompt(PROMPT).version if share > 0 else None,
            "with_situation": sum(personal), "talk_only": len(personal) - sum(personal)}  # fmt: skip
