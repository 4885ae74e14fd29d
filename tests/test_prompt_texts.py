"""Texts that reach a model, pinned to the exact strings they were when they moved from the code into prompt
files (measurements and cached calls depend on them): a rewording changes these tests on purpose. And the
versions of those files: in the run records and the cache keys of the calls that read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emoharbor.assess.cards import load_card
from emoharbor.assess.judge_forms import Pair
from emoharbor.assess.seeker_choice import choice_messages, seeker_sketch
from emoharbor.config import SupporterSpec
from emoharbor.heart.histories import History, Turn
from emoharbor.heart.stages.candidates import (
    candidate_messages,
    context_line,
    model_candidate,
    system_prompt,
    transcript,
)
from emoharbor.models.base import ChatResult, Message
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.structured import ask_json
from emoharbor.prompts import Prompt, load_prompt
from emoharbor.simulate import voice
from emoharbor.simulate.agents import user_agent


def test_the_voice_words() -> None:
    assert voice.landed("good") == "What they said fits you, so you tell a bit more."
    assert voice.landed("mixed") == "What they said only half fits you."
    assert voice.landed("poor") == "What they said misses what you meant: you may say so, or hold back."
    assert voice.landed(None) == voice.landed("other") == ""
    levels = [voice.feeling(i, "anxiety") for i in (0, 19, 20, 39, 40, 59, 60, 79, 80, 100)]
    assert levels == ["mostly calm (anxiety)"] * 2 + ["a bit low (anxiety)"] * 2 + ["upset (anxiety)"] * 2 + [
        "very upset (anxiety)"] * 2 + ["overwhelmed (anxiety)"] * 2  # fmt: skip
    assert voice.feeling(45, "unspecified") == voice.feeling(45, "") == "upset"
    trust = [voice.trusting(t) for t in (0, 29, 30, 54, 55, 74, 75, 100)]
    assert trust == ["you do not trust them yet"] * 2 + ["you are unsure about them"] * 2 + [
        "you are starting to trust them"] * 2 + ["you trust them"] * 2  # fmt: skip


def test_the_chains_note_as_rendered() -> None:
    note = load_prompt("user_voice_note").render(feeling=voice.feeling(65, "anxiety"), trusting=voice.trusting(50),
                                                 landed=voice.landed("poor"), may_share="I lost my job.",
                                                 keep_back="nothing", words=15)  # fmt: skip
    assert note == (
        "(Private, for you only: never say this as it is written. Right now you feel very upset (anxiety); you are "
        "unsure about them. What they said misses what you meant: you may say so, or hold back.\n"
        "You may bring up: I lost my job.\nNot yet: nothing\n"
        "Answer their next message the way you would text it, about 15 words, about your own situation.)\n"
    )


HISTORY = History("h", "regular", "f", [Turn("supporter", "Hi, how are you?"), Turn("seeker", "Not great, $5 left.")],
                  emotion_type="sadness", situation="lost my job ${x}")  # fmt: skip


def test_the_heart_candidates_view_of_a_history() -> None:
    assert context_line(HISTORY, True) == "Before the chat, the seeker described their situation: lost my job ${x}\n"
    assert context_line(HISTORY, False) == context_line(History("e", "regular", "f", []), True) == ""
    assert transcript(HISTORY) == "Supporter: Hi, how are you?\nSeeker: Not great, $5 left."
    user = candidate_messages(HISTORY, "SYSTEM", True)[1]["content"]
    assert user == (
        "Before the chat, the seeker described their situation: lost my job ${x}\n\nThe conversation so far:\n\n"
        "Supporter: Hi, how are you?\nSeeker: Not great, $5 left.\n\nWrite the supporter's next message."
    )


def test_the_seeker_sketch() -> None:
    def pair(emotion: str, situation: str) -> Pair:
        return Pair(context="", transcript="", first=("A", "a"), second=("B", "b"), dimensions="", keys=["overall"],
                    situation=situation, emotion=emotion)  # fmt: skip

    assert seeker_sketch(pair("anger", "my $boss yelled")) == (
        "How you feel: anger.\nWhat happened, as you told it before the chat: my $boss yelled\n"
    )
    assert seeker_sketch(pair("", "lost job")) == "What happened, as you told it before the chat: lost job\n"
    assert seeker_sketch(pair("fear", "")) == "How you feel: fear.\n"
    assert seeker_sketch(pair("", "")) == ""


async def test_the_json_reask() -> None:
    model = ScriptedModel(["no json here", '{"score": 1}'])
    got = await ask_json(model, [{"role": "user", "content": "rate"}], {"type": "object"}, prompt_version="p@1")
    assert got.data == {"score": 1}
    assert model.calls[1][1:] == [
        {"role": "assistant", "content": "no json here"},
        {"role": "user", "content": "That was not usable: no JSON object in the reply. Reply again with only the "
                                    "JSON object, exactly in the requested form."},
    ]  # fmt: skip


class Versions(ScriptedModel):
    """A scripted model that keeps the prompt version of each call."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.versions: list[str] = []

    async def chat(self, messages: list[Message], **kw: Any) -> ChatResult:
        self.versions.append(kw.get("prompt_version", ""))
        return await super().chat(messages, **kw)


async def test_a_reask_call_carries_the_reask_prompts_version() -> None:
    reask = load_prompt("json_reask").version
    model = Versions(["no json", "still none", '{"a": 1}'])
    await ask_json(model, [{"role": "user", "content": "rate"}], {"type": "object"}, prompt_version="p@1")
    assert model.versions == ["p@1", f"p@1+{reask}", f"p@1+{reask}"]  # the first call's key is as it was
    model = Versions(["no json", '{"a": 1}'])
    await ask_json(model, [{"role": "user", "content": "rate"}], {"type": "object"})
    assert model.versions == ["", reask]


async def test_the_heart_calls_carry_the_versions_of_their_words() -> None:
    model = Versions(["A reply."])
    spec = SupporterSpec(model="scripted", name="c")
    await model_candidate(model, spec, HISTORY, system_prompt(spec, Path(".")), show_situation=True, seed=0)
    assert f"+{load_prompt('heart_history').version}+" in model.versions[0]
    pair = Pair(context="", transcript="", first=("A", "a"), second=("B", "b"), dimensions="", keys=["overall"])
    assert choice_messages(load_card("seeker_choice"), pair)[1].endswith(
        f"+{load_prompt('seeker_choice_sketch').version}"
    )


def test_the_chain_records_the_version_of_its_notes_words() -> None:
    chain = user_agent("chain")
    assert voice.NOTE_WORDS in chain.prompts and voice.NOTE_WORDS not in chain.reaction_prompts  # perceive has none
    assert voice.NOTE_WORDS not in user_agent("simple").prompts  # it writes with no note


def test_a_file_of_short_texts() -> None:
    words = Prompt("w", "# a note\n\nkey one: a text: with a colon $x\n  # another\nkey two:\n").entries()
    assert {k: p.text for k, p in words.items()} == {"key one": "a text: with a colon $x", "key two": ""}
    assert words["key one"].render(x=1) == "a text: with a colon 1"
    for bad in ("no colon here\n", "a: 1\na: 2\n"):
        with pytest.raises(ValueError, match="key: text"):
            Prompt("w", bad).entries()


def test_the_simple_users_opening_cue_is_todays() -> None:
    from emoharbor.profiles.loader import builtin_profiles
    from emoharbor.simulate.simple_user import SimpleUser

    user = SimpleUser(None, builtin_profiles()[0])  # type: ignore[arg-type]  # no call is made
    assert user.opening_cue == "(The chat has just opened. Write your first message.)"


def test_the_decisions_rule_on_ending_is_todays() -> None:
    from emoharbor.simulate import voice

    assert voice.note_words()["decide end rule"].render() == "Only end satisfied if you truly feel better."


def test_the_feelers_scales_are_todays_and_in_the_reactions_record() -> None:
    from emoharbor import measurements
    from emoharbor.profiles.loader import builtin_profiles
    from emoharbor.simulate.chain_user import ChainUser

    user = ChainUser(None, builtin_profiles()[0])  # type: ignore[arg-type]  # no call is made
    system = user.messages([], "Step: feel.")[0]["content"]
    assert (
        "7 = much better, 6 = clearly better, 5 = a little better, 4 = no different, 3 = a little worse, "
        "2 = clearly worse, 1 = much worse") in system  # fmt: skip
    assert (
        "7 = trust much more, 6 = trust clearly more, 5 = trust a little more, 4 = trust unchanged, "
        "3 = trust a little less, 2 = trust clearly less, 1 = trust much less") in system  # fmt: skip
    chain = user_agent("chain")  # a reworded scale refuses to resume a run and to match a calibration
    assert "user_feel_scale" in chain.reaction_prompts and "user_feel_scale" in measurements.PROMPTS
