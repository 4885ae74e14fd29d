"""The simulated user's model, with its messages written by another (``user_agent.voice_model``, e.g. a model
trained on real seekers' messages: ``sft.role: user``): the calls that write a message (the prompts of
``MESSAGE_PROMPTS``) go to the voice model, recorded under the role ``user_voice``; every other call (the
Appraiser, the Feeler, the decision, the user's judgement) stays with the user's own model."""

from __future__ import annotations

from typing import Any

from ..models.base import ChatModel, ChatResult, Message
from ..models.pool import ModelPool, prompt_name
from ..models.spec import ModelSpec
from .agents import UserSettings, user_agent

MESSAGE_PROMPTS = ("user_voice", "user_voice_open", "user_voice_note")  # a message's call carries one of them


class VoiceRouted:
    def __init__(self, main: ChatModel, voice: ChatModel) -> None:
        self.main, self.voice = main, voice
        self.name = main.name

    async def chat(self, messages: list[Message], **kw: Any) -> ChatResult:
        writes = prompt_name(kw.get("prompt_version", "")) in MESSAGE_PROMPTS
        return await (self.voice if writes else self.main).chat(messages, **kw)

    async def aclose(self) -> None:
        return None


async def user_chat_model(pool: ModelPool, spec: ModelSpec, settings: UserSettings) -> ChatModel | None:
    """The model a simulated user of ``settings`` is given: None for one that calls none, the pool's model of
    ``spec`` (role ``user``), or that model with its messages written by ``settings.voice_model``."""
    if not user_agent(settings.agent).needs_model:
        return None
    main = await pool.get(spec, "user")
    voice: ModelSpec | None = getattr(settings, "voice_model", None)
    return main if voice is None else VoiceRouted(main, await pool.get(voice, "user_voice"))
