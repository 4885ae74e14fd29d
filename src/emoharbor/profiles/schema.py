"""The help-seeker profile."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HiddenNeed = Literal[
    "venting",
    "reassurance",
    "validation",
    "plan",
    "information",
    "perspective",
    "challenge",
    "company",
    "distraction",
    "permission",
    "closure",
]
ESCONV_PROBLEMS = [
    "ongoing depression",
    "job crisis",
    "breakup with partner",
    "problems with friends",
    "academic pressure",
    "procrastination",
    "alcohol abuse",
    "issues with parents",
    "sleep problems",
    "appearance anxiety",
    "school bullying",
    "issues with children",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Personality(_Strict):
    openness: float = Field(ge=0, le=1)
    conscientiousness: float = Field(ge=0, le=1)
    extraversion: float = Field(ge=0, le=1)
    agreeableness: float = Field(ge=0, le=1)
    neuroticism: float = Field(ge=0, le=1)
    traits: list[str] = Field(default_factory=list)


class CommunicationStyle(_Strict):
    verbosity: Literal["terse", "moderate", "expansive"] = "moderate"
    directness: Literal["low", "medium", "high"] = "medium"
    formality: Literal["casual", "neutral", "formal"] = "neutral"
    humour: Literal["none", "dry", "playful", "self-deprecating", "dark"] = "none"
    notes: str = ""


class Situation(_Strict):
    problem_type: str = Field(min_length=1)
    story: str = Field(min_length=1)
    already_tried: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)


class EmotionalState(_Strict):
    emotion: str = Field(min_length=1)
    intensity: int = Field(ge=0, le=100)


class Needs(_Strict):
    surface_request: str = Field(min_length=1)
    hidden_need: str = Field(min_length=1)
    hidden_need_type: HiddenNeed
    liked_support: list[str] = Field(default_factory=list)
    disliked_support: list[str] = Field(default_factory=list)


class Profile(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)
    name: str = Field(min_length=1)
    age: int = Field(ge=10, le=100)
    gender: str = ""
    culture: str = ""
    occupation: str = ""
    personality: Personality
    communication_style: CommunicationStyle = Field(default_factory=CommunicationStyle)
    situation: Situation
    emotional_state: EmotionalState
    needs: Needs
    disclosure_pace: Literal["slow", "medium", "fast"] = "medium"
    risk_level: Literal["none", "low", "elevated", "high"] = "none"
    evaluation_only: bool = False  # kept out of training pairs
    tags: list[str] = Field(default_factory=list)

    def persona_card(self) -> str:
        """A compact description used in every simulated-user prompt (small models forget)."""
        p, c, s, e, n = self.personality, self.communication_style, self.situation, self.emotional_state, self.needs

        def level(x: float) -> str:
            return "high" if x >= 0.67 else "low" if x <= 0.33 else "moderate"

        lines = [
            f"You are {self.name}, {self.age}, {self.gender or 'person'}, {self.occupation or 'no stated job'}"
            + (f", {self.culture}" if self.culture else "")
            + ".",
            f"Personality: openness {level(p.openness)}, conscientiousness {level(p.conscientiousness)}, "
            f"extraversion {level(p.extraversion)}, agreeableness {level(p.agreeableness)}, "
            f"neuroticism {level(p.neuroticism)}" + (f"; {', '.join(p.traits)}" if p.traits else "") + ".",
            f"How you talk: {c.verbosity}, directness {c.directness}, {c.formality}, humour {c.humour}"
            + (f". {c.notes}" if c.notes else "")
            + ".",
            f'Your problem ({s.problem_type}; told about you, you tell it as "I"): {s.story}',
            f"Already tried: {'; '.join(s.already_tried) or 'nothing yet'}.",
            f"You feel {e.emotion}.",
            f"What you say you want: {n.surface_request}",
            f"What you really need (you never say this outright): {n.hidden_need}",
            f"Support you like: {'; '.join(n.liked_support) or 'not sure'}. "
            f"Support you dislike: {'; '.join(n.disliked_support) or 'nothing in particular'}.",
            f"You open up {self.disclosure_pace}ly.",
        ]
        return "\n".join(lines)
