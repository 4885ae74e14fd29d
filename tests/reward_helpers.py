"""A scripted simulated user for the reward tests: its Appraiser and Feeler answer by the reply they read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from emoharbor.models.base import Message
from emoharbor.models.scripted import ScriptedModel


def last_reply(messages: list[Message]) -> str:
    """The supporter message the user is reacting to (the last one in the transcript of the system prompt)."""
    return messages[0]["content"].rsplit("Supporter:", 1)[-1]


def digit(units: int, bound: int) -> int:
    """The Feeler's 7-point digit for a step of ``units`` (of at most ``bound``): 0 -> 4, bound -> 7."""
    return round(units / bound * 3 + 4)


def scripted_user(react: Callable[[str], tuple[str, int, int]] | None = None, *, garbage: str = "") -> ScriptedModel:
    """``react(reply) -> (fit, feel_better, trust_change)``; default: a reply that asks a question fits well,
    relieves 15 and earns 20 trust, any other fits poorly, worsens 5 and costs 0 trust. ``garbage``: the
    answer of the Feeler (a reaction that does not parse)."""

    def default(reply: str) -> tuple[str, int, int]:
        return ("good", 15, 20) if "?" in reply else ("poor", -5, 0)

    decide = react or default

    def reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        if schema is None:  # the Opener's or the Expresser's message: free text, in the seeker's own chat
            return "I have been so tired since the layoff, I can't sleep."
        props = schema.get("properties", {})
        if "decision" in props:  # whether to go on, asked apart once the talk may end
            return json.dumps({"decision": "continue"})
        fit, better, trust = decide(last_reply(messages))
        if "fit" in props:
            return json.dumps({"understood": "my problem", "needs_met": [], "needs_missed": [], "about_me": True,
                               "disliked": False, "fit": fit, "crisis_referral": False})  # fmt: skip
        if "better" in props:
            return garbage or json.dumps({"thought": "they listened", "better": digit(better, 15),
                                          "trust": digit(trust, 20)})  # fmt: skip
        raise AssertionError(f"the scripted user has no answer for the schema {sorted(props)}")

    return ScriptedModel(reply)
