"""The supporter under test: any ChatModel with a system prompt. It never sees the profile."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .. import userfiles
from ..errors import ConfigError
from ..models.base import ChatModel, Message
from ..prompts import Prompt, load_prompt
from .conversation import Turn


def supporter_prompt(spec: str | None) -> Prompt:
    """None: the built-in default; ``builtin:NAME``: prompts/supporter_NAME.txt; ``@PATH``: a file;
    anything else: the text itself."""
    if spec is None:
        return load_prompt("supporter_default")
    if spec.startswith("builtin:"):
        name = spec.removeprefix("builtin:")
        try:
            return load_prompt(f"supporter_{name}")
        except FileNotFoundError:
            raise ConfigError(
                f"no built-in supporter prompt '{name}': use builtin:default or builtin:personal"
            ) from None
    if spec.startswith("@"):
        path = Path(spec[1:])
        return Prompt(f"supporter_file:{path.name}", userfiles.read_text(path, "supporter system prompt file"))
    return Prompt("supporter_inline", spec)


class SupporterSettings(Protocol):
    """What a supporter is built from (``config.SupporterSpec``)."""

    @property
    def name(self) -> str: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def max_tokens(self) -> int | None: ...


class Replier(Protocol):
    """What a conversation asks of its supporter: a name and the next reply to the turns so far (a model's
    ``Supporter``, or a scripted one such as the ladder's rungs)."""

    name: str

    async def reply(self, turns: list[Turn], seed: int) -> tuple[str, list[tuple[str, str]]]: ...


class Supporter:
    def __init__(self, model: ChatModel, name: str, prompt: Prompt, max_tokens: int | None = None) -> None:
        self.model = model
        self.name = name
        self.prompt = prompt
        self.max_tokens = max_tokens

    def messages(self, turns: list[Turn]) -> list[Message]:
        msgs: list[Message] = [{"role": "system", "content": self.prompt.text.strip()}]
        msgs += [{"role": "user" if t.speaker == "user" else "assistant", "content": t.text} for t in turns]
        return msgs

    async def reply(self, turns: list[Turn], seed: int) -> tuple[str, list[tuple[str, str]]]:
        """The reply, and events about it: cut off at max_tokens, or empty (kept as said: the user hears it)."""
        r = await self.model.chat(
            self.messages(turns), seed=seed, prompt_version=self.prompt.version, max_tokens=self.max_tokens
        )
        text = r.text.strip()
        events = [("supporter_truncated", text[-80:])] if r.finish_reason == "length" else []
        if not text:
            events.append(("supporter_empty", ""))
        return text, events


def make_supporter(model: ChatModel, spec: SupporterSettings) -> Supporter:
    return Supporter(model, spec.name, supporter_prompt(spec.system_prompt), max_tokens=spec.max_tokens)
