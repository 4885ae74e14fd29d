"""A simple simulated user: one call per message, persona in every call. The first vertical slice;
the Chain-of-Agent user (chain_user.py) is the real one. Registered as the agent ``simple``."""

from __future__ import annotations

from pydantic import Field

from ..models.base import ChatModel, Message
from ..profiles.schema import Profile
from ..prompts import load_prompt
from .agents import UserSettings, needs, register_agent
from .conversation import Decision, Turn, UserState
from .text_checks import clean_message, user_text_events
from .user_agent import UserStep

END_MARK = "[END]"
OPENING_CUE = "(The chat has just opened. Write your first message.)"


class SimpleSettings(UserSettings):
    max_tokens: int = Field(default=120, ge=16)


class SimpleUser:
    def __init__(self, model: ChatModel, profile: Profile, max_tokens: int = 120) -> None:
        self.model = model
        self.profile = profile
        self.prompt = load_prompt("user_simple")
        self.max_tokens = max_tokens

    def initial_state(self) -> UserState | None:
        return None

    def _messages(self, turns: list[Turn]) -> list[Message]:
        system = self.prompt.render(persona=self.profile.persona_card())
        msgs: list[Message] = [{"role": "system", "content": system}]
        # from the user's side, the supporter's messages are what it hears ("user"), its own are "assistant"
        msgs += [{"role": "assistant" if t.speaker == "user" else "user", "content": t.text} for t in turns]
        if not turns:
            msgs.append({"role": "user", "content": OPENING_CUE})
        return msgs

    async def _step(self, turns: list[Turn], seed: int) -> UserStep:
        r = await self.model.chat(
            self._messages(turns), seed=seed, prompt_version=self.prompt.version, max_tokens=self.max_tokens
        )
        text = clean_message(r.text)
        decision: Decision = "continue"
        if END_MARK in text:
            text = text.replace(END_MARK, "").strip()
            decision = "end_satisfied"
        step = UserStep(text=text, decision=decision)
        step.events.extend(user_text_events(text, [t.text for t in turns if t.speaker == "user"], self.profile.name))
        return step

    async def open(self, seed: int) -> UserStep:
        return await self._step([], seed)

    async def react(self, turns: list[Turn], seed: int) -> UserStep:
        return await self._step(turns, seed)


register_agent("simple", SimpleSettings,
               lambda model, profile, s: SimpleUser(needs(model, "simple"), profile, s.max_tokens),
               prompts=("user_simple",))  # fmt: skip
