"""The help-seeker profile."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..prompts import load_prompt

PERSONA = "persona_card"  # the prompt file the persona card is rendered from

HiddenNeed = Literal["venting", "reassurance", "validation", "plan", "information", "perspective", "challenge",
                     "company", "distraction", "permission", "closure"]  # fmt: skip
ESCONV_PROBLEMS = ["ongoing depression", "job crisis", "breakup with partner", "problems with friends",
                   "academic pressure", "procrastination", "alcohol abuse", "issues with parents", "sleep problems",
                   "appearance anxiety", "school bullying", "issues with children"]  # fmt: skip


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
        """A compact description used in every simulated-user prompt (small models forget), rendered from the
        versioned template ``prompts/persona_card.txt`` (every agent names it among its prompts, so a reworded
        card refuses to resume a run made with the old one)."""
        p, c, s, n = self.personality, self.communication_style, self.situation, self.needs

        def level(x: float) -> str:
            return "high" if x >= 0.67 else "low" if x <= 0.33 else "moderate"

        return load_prompt(PERSONA).render(
            name=self.name, age=self.age, gender=self.gender or "person", occupation=self.occupation or "no stated job",
            culture=f", {self.culture}" if self.culture else "",
            **{trait: level(x) for trait, x in p.model_dump(exclude={"traits"}).items()},  # the Big Five
            traits=f"; {', '.join(p.traits)}" if p.traits else "",
            **c.model_dump(exclude={"notes"}), notes=f". {c.notes}" if c.notes else "",
            problem=s.problem_type, story=s.story, tried="; ".join(s.already_tried) or "nothing yet",
            emotion=self.emotional_state.emotion, surface=n.surface_request, hidden=n.hidden_need,
            liked="; ".join(n.liked_support) or "not sure",
            disliked="; ".join(n.disliked_support) or "nothing in particular", pace=self.disclosure_pace,
        ).rstrip("\n")  # fmt: skip
