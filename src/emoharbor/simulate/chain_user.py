"""The Chain-of-Agent user: for every supporter message an Appraiser, a Feeler and an Expresser.

- Appraiser (perception): what the supporter understood, which needs it met or missed, whether it was
  about me or generic, whether it did something I dislike.
- Feeler (affect): writes an inner thought, then how much better or worse it feels (better is positive;
  intensity falls by that much) and how trust moves, each by a bounded step.
- Expresser (behaviour): my next message in my voice, revealing my story at my pace, and whether I go on,
  end satisfied, or disengage.

The persona is in every call (small models forget it otherwise). A step whose output never parses is
recorded as an event and the user carries on with its state unchanged: nothing is invented.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..models.base import ChatModel, Message
from ..models.structured import ask_json
from ..profiles.schema import Profile
from ..prompts import load_prompt
from .conversation import Decision, Turn, UserState
from .text_checks import clean_message, repeats, user_text_events
from .user_agent import UserStep

CHAIN_PROMPTS = ("user_system", "user_open", "user_appraise", "user_feel", "user_express")  # what the chain reads


class UserSimulationError(Exception):
    """The simulated user could not produce a message: the conversation ends with termination 'error'."""

    def __init__(self, message: str, events: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.events = events


SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChainSettings:
    intensity_step: int = 15  # the most intensity can move after one message
    trust_step: int = 20
    initial_trust: int = 40
    min_turns: int = 2  # supporter replies before the user may end
    max_tokens: int = 200


def clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, x))


def story_facts(profile: Profile) -> list[str]:
    return [s.strip() for s in SENTENCE.split(profile.situation.story.strip()) if s.strip()]


def disclosure_count(pace: str, trust: int, turn: int, n_facts: int) -> int:
    """How many of the story's facts the user may have shared by ``turn`` (0 = the opening).

    fast: everything at once. medium: one more per turn. slow: one more every other turn, and nothing
    beyond the first fact while trust is under 50. High trust (70+) opens up one fact more.
    """
    if n_facts == 0:
        return 0
    if pace == "fast":
        return n_facts
    extra = 1 if trust >= 70 else 0
    if pace == "slow":
        return min(n_facts, 1 if trust < 50 else 1 + turn // 2 + extra)
    return min(n_facts, 1 + turn + extra)


def steps(bound: int, unit: int = 5) -> list[int]:
    """The steps a state may move by: multiples of ``unit`` up to ``bound`` each way, 0 among them
    (``bound`` 15: -15..15 by 5; 7: -5, 0, 5); a bound under one unit is its own step."""
    if bound < unit:
        return [-bound, 0, bound]
    n = bound // unit
    return [unit * k for k in range(-n, n + 1)]


APPRAISAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "understood": {"type": "string"},
        "needs_met": {"type": "array", "items": {"type": "string"}},
        "needs_missed": {"type": "array", "items": {"type": "string"}},
        "about_me": {"type": "boolean"},
        "disliked": {"type": "boolean"},
        "fit": {"type": "string", "enum": ["good", "mixed", "poor"]},
        "crisis_referral": {"type": "boolean"},
    },
    "required": ["understood", "needs_met", "needs_missed", "about_me", "disliked", "fit", "crisis_referral"],
}
EXPRESS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1},
        "decision": {"type": "string", "enum": ["continue", "end_satisfied", "disengage"]},
    },
    "required": ["message", "decision"],
}
OPEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "minLength": 1}},
    "required": ["message"],
}


def feel_schema(s: ChainSettings) -> dict[str, Any]:
    """The Feeler's answer. It says how much better (positive) or worse (negative) the person feels, not
    how intensity moves: small models do not keep straight that a higher intensity is worse, and wrote
    "I feel a bit better" beside a rising intensity. The thought comes first on purpose: a model writes
    the fields in this order (llama.cpp's grammar keeps the schema's order), so the number is written
    after, and follows from, the words it has just written, instead of the words justifying a number."""
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "feel_better": {"type": "integer", "enum": steps(s.intensity_step)},
            "trust_change": {"type": "integer", "enum": steps(s.trust_step)},
        },
        "required": ["thought", "feel_better", "trust_change"],
    }


def feel_scale(bound: int) -> str:
    """The Feeler's steps in words, best first: "15 = much better, 10 = clearly better, 5 = a little better,
    0 = no different, -5 = a little worse, ..." for a bound of 15. No "+" sign: "+10" is not a JSON number."""
    up = [v for v in steps(bound) if v > 0]

    def how(k: int) -> str:  # the k-th step up from 0 (k = 0 the smallest)
        return "" if len(up) == 1 else ["a little ", "clearly ", "much "][round(k * 2 / (len(up) - 1))]

    better = [f"{v} = {how(k)}better" for k, v in enumerate(up)]
    worse = [f"{-v} = {how(k)}worse" for k, v in enumerate(up)]
    return ", ".join([*reversed(better), "0 = no different", *worse])


def transcript(turns: list[Turn]) -> str:
    return "\n".join(f"{'You' if t.speaker == 'user' else 'Supporter'}: {t.text}" for t in turns) or "(nothing yet)"


class ChainUser:
    def __init__(self, model: ChatModel, profile: Profile, settings: ChainSettings | None = None) -> None:
        self.model = model
        self.profile = profile
        self.s = settings or ChainSettings()
        self.persona = profile.persona_card()
        self.facts = story_facts(profile)
        self.state = UserState(turn=0, intensity=profile.emotional_state.intensity, trust=self.s.initial_trust)
        self.p_system = load_prompt("user_system")
        self.p_open, self.p_appraise = load_prompt("user_open"), load_prompt("user_appraise")
        self.p_feel, self.p_express = load_prompt("user_feel"), load_prompt("user_express")

    def messages(self, turns: list[Turn], task: str) -> list[Message]:
        """The persona and the conversation first, the same for every agent of the chain (a long shared
        prefix that llama.cpp and most servers reuse instead of reading it again), then the task."""
        system = self.p_system.render(persona=self.persona, transcript=transcript(turns))
        return [{"role": "system", "content": system}, {"role": "user", "content": task}]

    def initial_state(self) -> UserState:
        return self.state

    def _disclosure(self) -> tuple[str, str]:
        n = disclosure_count(self.profile.disclosure_pace, self.state.trust, self.state.turn, len(self.facts))
        share, keep = self.facts[:n], self.facts[n:]
        return " ".join(share) or "only that you are struggling", " ".join(keep) or "nothing"

    async def open(self, seed: int) -> UserStep:
        may_share, keep_back = self._disclosure()
        prompt = self.p_open.render(intensity=self.state.intensity, may_share=may_share, keep_back=keep_back)
        r = await ask_json(
            self.model,
            self.messages([], prompt),
            OPEN_SCHEMA,
            seed=seed,
            prompt_version=self.p_open.version,
            max_tokens=self.s.max_tokens,
        )
        step = UserStep(text="", inner={"opening": True})
        if r.data is None:
            step.events.append(("parse_failure:open", r.error))
            step.text = f"Hi. I'm feeling {self.profile.emotional_state.emotion} and could use someone to talk to."
            step.events.append(("opening_from_profile", "the opening message was written from the profile"))
        else:
            step.text = clean_message(str(r.data["message"]))
        self._check_text(step, [])
        return step

    async def perceive(self, turns: list[Turn], seed: int) -> UserStep:
        """The Appraiser and the Feeler on the latest supporter message (``turns[-1]``): the inner state
        moves, no reply is written. ``react`` adds the Expresser; a replay of a real conversation uses this."""
        prev = self.state
        step = UserStep(text="")
        # 1. appraise
        pa = self.p_appraise.render(intensity=prev.intensity, trust=prev.trust)
        appraisal = await ask_json(
            self.model,
            self.messages(turns, pa),
            APPRAISAL_SCHEMA,
            seed=seed,
            prompt_version=self.p_appraise.version,
            max_tokens=self.s.max_tokens,
        )
        if appraisal.data is None:
            step.events.append(("parse_failure:appraise", appraisal.error))
        a = appraisal.data or {}
        # 2. feel
        pf = self.p_feel.render(
            intensity=prev.intensity,
            trust=prev.trust,
            appraisal=json.dumps(a, ensure_ascii=False) if a else "(unclear)",
            feel_scale=feel_scale(self.s.intensity_step),
            trust_steps=steps(self.s.trust_step),
        )
        feeling = await ask_json(
            self.model,
            self.messages(turns, pf),
            feel_schema(self.s),
            seed=seed,
            prompt_version=self.p_feel.version,
            max_tokens=self.s.max_tokens,
        )
        if feeling.data is None:
            step.events.append(("parse_failure:feel", feeling.error))
        f = feeling.data or {}
        # the schema's enums bound each step; an unparsed feeling leaves the state as it was
        better, d_trust = int(f.get("feel_better", 0)), int(f.get("trust_change", 0))
        self.state = UserState(
            turn=prev.turn + 1,
            intensity=clamp(prev.intensity - better, 0, 100),
            trust=clamp(prev.trust + d_trust, 0, 100),
            needs_met=[str(x) for x in a.get("needs_met", [])],
            needs_missed=[str(x) for x in a.get("needs_missed", [])],
            thought=str(f.get("thought", "")),
        )
        step.state = self.state
        step.safety_escalation = bool(a.get("crisis_referral")) and self.profile.risk_level in ("elevated", "high")
        step.inner = {
            "appraisal": a or None,
            "feeling": {"feel_better": better, "intensity_change": -better, "trust_change": d_trust} if f else None,
        }
        return step

    async def react(self, turns: list[Turn], seed: int) -> UserStep:
        step = await self.perceive(turns, seed)
        # 3. express
        may_share, keep_back = self._disclosure()
        end_rule = (
            "It is too early to end: choose continue."
            if self.state.turn < self.s.min_turns
            else "Only end satisfied if you truly feel better."
        )
        pe = self.p_express.render(
            intensity=self.state.intensity,
            trust=self.state.trust,
            thought=self.state.thought or "(none)",
            may_share=may_share,
            keep_back=keep_back,
            end_rule=end_rule,
        )
        earlier = [t.text for t in turns if t.speaker == "user"]
        expr = await self._express(self.messages(turns, pe), seed, earlier, step)
        decision: Decision = expr["decision"]
        step.text = clean_message(str(expr["message"]))
        if decision != "continue" and self.state.turn < self.s.min_turns:
            step.events.append(("early_end_ignored", decision))
            decision = "continue"
        step.decision = decision
        step.inner = {**(step.inner or {}), "shared": may_share}
        self._check_text(step, earlier)
        return step

    async def _express(self, msgs: list[Message], seed: int, earlier: list[str], step: UserStep) -> dict[str, Any]:
        """The Expresser's output; one more try when it repeats an earlier message."""
        for attempt in range(2):
            r = await ask_json(
                self.model,
                msgs,
                EXPRESS_SCHEMA,
                seed=seed + 100 * attempt,
                prompt_version=self.p_express.version,
                max_tokens=self.s.max_tokens,
            )
            if r.data is None:
                step.events.append(("parse_failure:express", r.error))
                raise UserSimulationError(
                    f"the Expresser gave no usable message after {r.attempts} tries: {r.error}", step.events
                )
            if attempt == 0 and repeats(clean_message(str(r.data["message"])), earlier):
                step.events.append(("user_repetition_retried", str(r.data["message"])[:80]))
                nudge = msgs[-1]["content"] + "\nYou already said that. Say something new."
                msgs = [msgs[0], {"role": "user", "content": nudge}]
                continue
            return r.data
        raise AssertionError("unreachable: the second try always returns")

    def _check_text(self, step: UserStep, earlier: list[str]) -> None:
        step.events.extend(user_text_events(step.text, earlier, self.profile.name))
