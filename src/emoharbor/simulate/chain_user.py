"""The Chain-of-Agent user: for every supporter message an Appraiser, a Feeler and an Expresser.

- Appraiser (perception): what the supporter understood, which needs it met or missed, whether it was
  about me or generic, whether it did something I dislike.
- Feeler (affect): writes an inner thought, then how much better or worse it feels and how trust moves,
  each one digit of a 7-point scale mapped onto a bounded step (intensity falls as I feel better).
- Expresser (behaviour): my next message in my voice, revealing my story at my pace, written as myself in my
  own chat (``voice.py``: free text, the inner state in a private note), then, once the talk may end, whether
  I go on, end satisfied, or disengage (asked apart, in the same chat).

The persona is in every call (small models forget it otherwise). A step whose output never parses is
recorded as an event and the user carries on with its state unchanged: nothing is invented.

The fit and the two steps are also read as the model's probabilities over their values (``*_expected``,
as the judges' ``scoring: expected``): most replies land on the same written step, the expectation tells
them apart. ``ChainSettings.readout`` says which moves the state.

It registers itself as the agent ``chain`` (``agents.py``); its settings are a run's ``user_agent:`` block.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field

from ..models.base import ChatModel, Message
from ..models.expected import expected_scores, expected_word
from ..models.structured import Structured, ask_json
from ..profiles.schema import PERSONA, Profile
from ..prompts import load_prompt
from . import voice
from .agents import ReactionSettings, VoiceSettings, needs, register_agent
from .conversation import Decision, Turn, UserState
from .examples import examples_text
from .text_checks import user_text_events
from .user_agent import UserSimulationError, UserStep

# what ChainUser loads itself (``ChainUser.prompts``: these only)
OWN_PROMPTS = ("user_system", "user_appraise", "user_feel", "user_feel_scale", "user_voice", "user_voice_open",
               "user_voice_note", "user_decide")  # fmt: skip
# what the chain reads (its run record): its own, the examples' and the voice's (the note's words, the re-asks)
CHAIN_PROMPTS = (PERSONA, *OWN_PROMPTS, "user_voice_examples", voice.NOTE_WORDS, voice.FRAMES, *voice.NUDGES)
REACTION_PROMPTS = ("user_system", "user_appraise", "user_feel", "user_feel_scale", PERSONA)  # what ``perceive`` reads


SENTENCE = re.compile(r"(?<=[.!?])\s+")


class ChainSettings(ReactionSettings, VoiceSettings):
    min_turns: int = Field(default=2, ge=0)  # supporter replies before the user may end
    max_tokens: int = Field(default=200, ge=16)  # per call of the Appraiser and the Feeler
    message_tokens: int = Field(default=0, ge=0)  # per message; 0: from the profile's length (voice.message_tokens)
    top_logprobs: int = Field(default=20, ge=0, le=20)  # alternatives per token for the expected readouts (0: none)
    readout: Literal["written", "expected"] = "written"  # what moves the state: the written or expected step
    # who decides that the talk ends: the model alone, or the model held to what the talk gave it (``grounded``:
    # leave only after ``patience`` poorly fitting replies in a row that brought no relief, or lost trust; end
    # satisfied only once relieved ``relief_to_end`` points; asked only then: ``ChainUser.grounds``)
    endings: Literal["model", "grounded"] = "grounded"
    patience: int = Field(default=2, ge=1)
    # intensity points fallen before a grounded seeker may end satisfied: ESConv's train seekers fell 40 on
    # average over a talk (two steps of their 1-5 survey; 12 supporter turns)
    relief_to_end: int = Field(default=40, ge=1, le=100)


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


FIT = {"good": 1.0, "mixed": 0.0, "poor": -1.0}  # the Appraiser's verdict, as a number (-1..1)
SCALE = list(range(1, 8))  # the Feeler writes a digit: 1 much worse .. 4 no different .. 7 much better
APPRAISAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "understood": {"type": "string"},
        "needs_met": {"type": "array", "items": {"type": "string"}},
        "needs_missed": {"type": "array", "items": {"type": "string"}},
        "about_me": {"type": "boolean"},
        "disliked": {"type": "boolean"},
        "fit": {"type": "string", "enum": list(FIT)},
        "crisis_referral": {"type": "boolean"},
    },
    "required": ["understood", "needs_met", "needs_missed", "about_me", "disliked", "fit", "crisis_referral"],
}
DECIDE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["continue", "end_satisfied", "disengage"]}},
    "required": ["decision"],
}


# The Feeler's answer. It says how much better or worse the person feels and how trust moves, each as one digit
# of a 7-point scale (4 = no change), not as a change of intensity: small models do not keep straight that a
# higher intensity is worse, and a digit is one token, so the model's probabilities over the scale can be read
# (``expected``). The thought comes first on purpose: a model writes the fields in this order (llama.cpp's
# grammar keeps the schema's order), so the numbers follow from the words.
FEEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "better": {"type": "integer", "enum": SCALE},
        "trust": {"type": "integer", "enum": SCALE},
    },
    "required": ["thought", "better", "trust"],
}


def scale_step(value: float, bound: int) -> float:
    """A point of the 7-point scale as a change of at most ``bound`` (4 -> 0, 7 -> bound, 1 -> -bound)."""
    return (value - 4) / 3 * bound


def readouts(r: Structured, keys: list[str], word: str | None = None) -> dict[str, float | None] | None:
    """The probability-weighted values of ``keys`` (digits of the scale) and of ``word`` (the fit) in a
    parsed answer; None when the backend gave no log-probabilities (the written values stand, and the step
    says so)."""
    if r.data is None or r.logprobs is None:
        return None
    ex = expected_scores(r.raw[-1], r.logprobs, keys, SCALE).expected if keys else {}
    out: dict[str, float | None] = dict(ex)
    if word is not None:
        out[word] = expected_word(r.raw[-1], r.logprobs, word, FIT)
    return out


def transcript(turns: list[Turn]) -> str:
    return "\n".join(f"{'You' if t.speaker == 'user' else 'Supporter'}: {t.text}" for t in turns) or "(nothing yet)"


def system_prompt(persona: str, transcript_text: str) -> str:
    """What every call of the Appraiser and the Feeler (and the user's end-of-talk judge) begins with: the
    role and both steps' instructions (static: read once, then reused from the server's prompt cache), the
    persona, then the talk. Each step's request after it is a few lines: the values of the moment."""
    scales = load_prompt("user_feel_scale").entries()
    return load_prompt("user_system").render(feel_scale=scales["feel"].text, trust_scale=scales["trust"].text,
                                             persona=persona, transcript=transcript_text)  # fmt: skip


class ChainUser:
    def __init__(self, model: ChatModel, profile: Profile, settings: ChainSettings | None = None) -> None:
        self.model = model
        self.profile = profile
        self.s = settings or ChainSettings()
        self.persona = profile.persona_card()
        self.facts = story_facts(profile)
        self.state = UserState(turn=0, intensity=profile.emotional_state.intensity, trust=self.s.initial_trust)
        self.prompts = {name: load_prompt(name) for name in OWN_PROMPTS}
        examples = examples_text(self.s.examples, profile, self.s.examples_k)
        self.voice = voice.system(self.prompts["user_voice"], profile, ending=examples)
        self.words = voice.words_target(profile)
        self.message_tokens = voice.message_tokens(profile, self.s.message_tokens)
        # each supporter message so far: the Appraiser's fit (None: not said) and the intensity after it
        self.heard: list[tuple[str | None, int]] = []

    def messages(self, turns: list[Turn], task: str) -> list[Message]:
        """``system_prompt`` first, the same for both steps of a turn (a long shared prefix that llama.cpp and
        most servers reuse instead of reading it again), then the step's short request."""
        return [{"role": "system", "content": system_prompt(self.persona, transcript(turns))},
                {"role": "user", "content": task}]  # fmt: skip

    def initial_state(self) -> UserState:
        return self.state

    def _disclosure(self) -> tuple[str, str]:
        n = disclosure_count(self.profile.disclosure_pace, self.state.trust, self.state.turn, len(self.facts))
        share, keep = self.facts[:n], self.facts[n:]
        return " ".join(share) or "only that you are struggling", " ".join(keep) or "nothing"

    async def open(self, seed: int) -> UserStep:
        may_share, keep_back = self._disclosure()
        p_open = self.prompts["user_voice_open"]
        note = p_open.render(feeling=self._feeling(), may_share=may_share, keep_back=keep_back, words=self.words)
        step = UserStep(text="", inner={"opening": True})
        text = await self._message(voice.chat(self.voice, [], note), seed, p_open.version, [], step)
        if not text:
            step.text = f"Hi. I'm feeling {self.profile.emotional_state.emotion} and could use someone to talk to."
            step.events.append(("opening_from_profile", "the opening message was empty: written from the profile"))
        else:
            step.text = text
        self._check_text(step, [])
        return step

    def _feeling(self) -> str:
        return voice.feeling(self.state.intensity, self.profile.emotional_state.emotion)

    async def perceive(self, turns: list[Turn], seed: int) -> UserStep:
        """The Appraiser and the Feeler on the latest supporter message (``turns[-1]``): the inner state
        moves, no reply is written. ``react`` adds the Expresser; a replay of a real conversation uses this.

        Beside each written value the inner record keeps its probability-weighted readout (``*_expected``:
        the fit in -1..1, the steps in intensity and trust units), read from the token log-probabilities;
        a backend that gives none leaves them None and the step records ``readout_written``."""
        prev = self.state
        step = UserStep(text="")
        lp = self.s.top_logprobs
        a, appraised, fit_read = await self._appraise(turns, seed, prev, step)
        f, felt, feel_read = await self._feel(turns, seed, prev, a, step)
        unread = (appraised and fit_read is None) or (felt and feel_read is None)
        if lp and unread:
            step.events.append(("readout_written", "no token log-probabilities: the written values stand"))
        better, d_trust, ex_better, ex_trust = self._steps(f, feel_read)
        if a:
            a["fit_expected"] = fit_read.get("fit") if fit_read else None
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
        feel = {"feel_better": better, "intensity_change": -better, "trust_change": d_trust,
                "feel_better_expected": ex_better, "trust_change_expected": ex_trust} if f else None  # fmt: skip
        step.inner = {"appraisal": a or None, "feeling": feel}
        return step

    async def _appraise(
        self, turns: list[Turn], seed: int, prev: UserState, step: UserStep
    ) -> tuple[dict[str, Any], bool, dict[str, float | None] | None]:
        """1. appraise: the appraisal (empty when unparsed), whether it parsed, and its fit's readout."""
        lp = self.s.top_logprobs
        p_appraise = self.prompts["user_appraise"]
        pa = p_appraise.render(intensity=prev.intensity, trust=prev.trust)
        appraisal = await ask_json(self.model, self.messages(turns, pa), APPRAISAL_SCHEMA, seed=seed,
                                   prompt_version=p_appraise.version, max_tokens=self.s.max_tokens,
                                   top_logprobs=lp)  # fmt: skip
        if appraisal.data is None:
            step.events.append(("parse_failure:appraise", appraisal.error))
        fit_read = readouts(appraisal, [], "fit") if lp else None
        return dict(appraisal.data or {}), appraisal.data is not None, fit_read

    async def _feel(
        self, turns: list[Turn], seed: int, prev: UserState, a: dict[str, Any], step: UserStep
    ) -> tuple[dict[str, Any], bool, dict[str, float | None] | None]:
        """2. feel, on the appraisal: the feeling (empty when unparsed), whether it parsed, and its steps' readouts."""
        lp = self.s.top_logprobs
        p_feel = self.prompts["user_feel"]
        pf = p_feel.render(
            intensity=prev.intensity,
            trust=prev.trust,
            appraisal=json.dumps(a, ensure_ascii=False) if a else "(unclear)",
        )
        feeling = await ask_json(self.model, self.messages(turns, pf), FEEL_SCHEMA, seed=seed,
                                 prompt_version=p_feel.version, max_tokens=self.s.max_tokens,
                                 top_logprobs=lp)  # fmt: skip
        if feeling.data is None:
            step.events.append(("parse_failure:feel", feeling.error))
        feel_read = readouts(feeling, ["better", "trust"]) if lp else None
        return feeling.data or {}, feeling.data is not None, feel_read

    def _steps(
        self, f: dict[str, Any], feel_read: dict[str, float | None] | None
    ) -> tuple[int, int, float | None, float | None]:
        """The steps in intensity and trust a feeling makes, written and expected; the expected ones move the
        state when ``readout: expected`` and both were read. The schema's enums bound each step; an unparsed
        feeling leaves the state as it was."""
        better = round(scale_step(f["better"], self.s.intensity_step)) if f else 0
        d_trust = round(scale_step(f["trust"], self.s.trust_step)) if f else 0
        ex_better = ex_trust = None
        if feel_read is not None:
            eb, et = feel_read.get("better"), feel_read.get("trust")
            ex_better = None if eb is None else scale_step(eb, self.s.intensity_step)
            ex_trust = None if et is None else scale_step(et, self.s.trust_step)
        if self.s.readout == "expected" and ex_better is not None and ex_trust is not None:
            better, d_trust = round(ex_better), round(ex_trust)
        return better, d_trust, ex_better, ex_trust

    async def react(self, turns: list[Turn], seed: int) -> UserStep:
        step = await self.perceive(turns, seed)
        # 3. express: the message in the seeker's own chat, then (once the talk may end) the decision
        may_share, keep_back = self._disclosure()
        fit = ((step.inner or {}).get("appraisal") or {}).get("fit")
        p_note = self.prompts["user_voice_note"]
        note = p_note.render(feeling=self._feeling(), trusting=voice.trusting(self.state.trust),
                             landed=voice.landed(fit), may_share=may_share, keep_back=keep_back,
                             words=self.words)  # fmt: skip
        earlier = [t.text for t in turns if t.speaker == "user"]
        msgs = voice.chat(self.voice, turns, note, self.s.window, self.s.framing)
        text = await self._message(msgs, seed, p_note.version, earlier, step)
        if not text:
            raise UserSimulationError("the Expresser wrote an empty message", step.events)
        step.text = text
        self.heard.append((fit, self.state.intensity))
        step.decision = "continue"
        if self.state.turn >= self.s.min_turns:
            allowed = self.grounds()
            if allowed:  # asked only where the talk gives a reason to end (always, with ``endings: model``)
                step.decision = await self._decide(msgs, text, seed, step)
            if step.decision not in ("continue", *allowed):
                step.events.append(("ending_overruled", f"{step.decision}: the talk gave no reason yet"))
                step.decision = "continue"
        step.inner = {**(step.inner or {}), "shared": may_share}
        self._check_text(step, earlier)
        return step

    async def _decide(self, msgs: list[Message], text: str, seed: int, step: UserStep) -> Decision:
        """Whether to go on, asked in the chat the message was written in, after it; an answer that does not
        parse goes on (an event says so)."""
        p_decide = self.prompts["user_decide"]
        asked = [
            *msgs,
            {"role": "assistant", "content": text},
            {"role": "system", "content": p_decide.render(end_rule=voice.note_words()["decide end rule"].render())},
        ]
        r = await ask_json(self.model, asked, DECIDE_SCHEMA, seed=seed, prompt_version=p_decide.version,
                           max_tokens=24)  # fmt: skip
        if r.data is None:
            step.events.append(("parse_failure:decide", r.error))
            return "continue"
        decision: Decision = r.data["decision"]
        return decision

    def patience(self) -> int:
        """Poorly fitting replies in a row before the seeker may leave: the setting, one more for an agreeable
        person and one fewer for a neurotic one (at least one)."""
        p = self.profile.personality
        return max(1, self.s.patience + (p.agreeableness >= 0.67) - (p.neuroticism >= 0.67))

    def grounds(self) -> tuple[Decision, ...]:
        """The endings the talk gives this seeker a reason for. ``endings: model``: both, always (the model alone
        decides). ``grounded``: it may disengage after ``patience()`` poorly fitting replies in a row that brought
        it no relief (its intensity no lower than before them), or with its trust fallen 20 points below where it
        started; it may end satisfied once its intensity has fallen ``relief_to_end`` points; with neither, it
        goes on without being asked."""
        if self.s.endings == "model":
            return ("end_satisfied", "disengage")
        start, n = self.profile.emotional_state.intensity, self.patience()
        felt = [start, *(i for _, i in self.heard)]  # the intensity before the first reply and after each
        poor = len(self.heard) >= n and all(f == "poor" for f, _ in self.heard[-n:])
        failed = poor and self.state.intensity >= felt[-n - 1]  # and no relief through them
        leave = failed or self.state.trust <= self.s.initial_trust - 20
        relieved = self.state.intensity <= start - self.s.relief_to_end
        return (*(("end_satisfied",) if relieved else ()), *(("disengage",) if leave else ()))

    async def _message(self, msgs: list[Message], seed: int, version: str, earlier: list[str],
                       step: UserStep) -> str:  # fmt: skip
        return await voice.checked(self.model, msgs, seed=seed, version=version, max_tokens=self.message_tokens,
                                   earlier=earlier, events=step.events, reasks=self.s.reasks)  # fmt: skip

    def _check_text(self, step: UserStep, earlier: list[str]) -> None:
        step.events.extend(user_text_events(step.text, earlier, self.profile.name))


register_agent("chain", ChainSettings, lambda model, profile, s: ChainUser(needs(model, "chain"), profile, s),
               prompts=CHAIN_PROMPTS, reaction_prompts=REACTION_PROMPTS, reactions=True)  # fmt: skip
