"""A simple simulated user: one call per message (one more when it slips: ``voice.checked``, as the chain's
Expresser), written as itself in its own chat (``voice.py``, the same voice as the chain's Expresser, without an
inner state), persona in every call. The first vertical slice; the
Chain-of-Agent user (chain_user.py) is the real one. Registered as the agent ``simple``."""

from __future__ import annotations

from pydantic import Field

from ..models.base import ChatModel
from ..profiles.schema import PERSONA, Profile
from ..prompts import load_prompt
from . import voice
from .agents import VoiceSettings, needs, register_agent
from .conversation import Decision, Turn, UserState
from .examples import examples_text
from .text_checks import user_text_events
from .user_agent import UserStep

END_MARK = "[END]"


class SimpleSettings(VoiceSettings):
    max_tokens: int = Field(default=0, ge=0)  # per message; 0: from the profile's length (voice.message_tokens)


class SimpleUser:
    def __init__(self, model: ChatModel, profile: Profile, settings: SimpleSettings | None = None) -> None:
        s = settings or SimpleSettings(agent="simple")
        self.model = model
        self.profile = profile
        voice_prompt = load_prompt("user_voice")
        self.version = voice_prompt.version
        ending = [examples_text(s.examples, profile, s.examples_k), load_prompt("user_simple").render().strip()]
        self.head = voice.system(voice_prompt, profile, ending="\n\n".join(e for e in ending if e))
        self.max_tokens = voice.message_tokens(profile, s.max_tokens)
        self.opening_cue = load_prompt("user_simple_open").render().strip()  # after the head, before a message
        self.window, self.framing, self.reasks = s.window, s.framing, s.reasks

    def initial_state(self) -> UserState | None:
        return None

    async def _step(self, turns: list[Turn], seed: int) -> UserStep:
        msgs = voice.chat(self.head, turns, None if turns else self.opening_cue, self.window, self.framing)
        earlier = [t.text for t in turns if t.speaker == "user"]
        events: list[tuple[str, str]] = []
        text = await voice.checked(self.model, msgs, seed=seed, version=self.version, max_tokens=self.max_tokens,
                                   earlier=earlier, events=events, reasks=self.reasks)  # fmt: skip
        decision: Decision = "continue"
        if END_MARK in text:
            text = " ".join(text.replace(END_MARK, " ").split())
            decision = "end_satisfied"
        step = UserStep(text=text, decision=decision, events=events)
        step.events.extend(user_text_events(text, earlier, self.profile.name))
        return step

    async def open(self, seed: int) -> UserStep:
        return await self._step([], seed)

    async def react(self, turns: list[Turn], seed: int) -> UserStep:
        return await self._step(turns, seed)


register_agent("simple", SimpleSettings,
               lambda model, profile, s: SimpleUser(needs(model, "simple"), profile, s),
               prompts=(PERSONA, "user_voice", "user_simple", "user_simple_open", "user_voice_examples",
                        voice.FRAMES, *voice.NUDGES))  # fmt: skip
