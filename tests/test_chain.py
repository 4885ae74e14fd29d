"""The Chain-of-Agent user, the loop and the judges, driven by a scripted model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from emoharbor.assess.cards import load_card
from emoharbor.assess.dimensions import keys
from emoharbor.assess.judge import judge_conversation
from emoharbor.models.base import ChatResult, Message
from emoharbor.models.scripted import ScriptedModel
from emoharbor.profiles.loader import load_profile_file
from emoharbor.prompts import load_prompt
from emoharbor.simulate.chain_user import (
    FEEL_SCHEMA,
    ChainSettings,
    ChainUser,
    disclosure_count,
    scale_step,
    story_facts,
)
from emoharbor.simulate.conversation import Conversation
from emoharbor.simulate.loop import converse
from emoharbor.simulate.supporter import Supporter, supporter_prompt
from emoharbor.simulate.text_checks import breaks_character, clean_message, names_self, repeats, user_text_events

PROFILE = load_profile_file(Path(__file__).parent.parent / "examples" / "profile.yaml")[0]


def role_of(messages: list[dict[str, str]]) -> str:
    if "volunteer listener" in messages[0]["content"]:  # the seeker's own chat (voice.py): its voice prompt first
        notes = " ".join(m["content"] for m in messages[1:] if m["role"] == "system")
        if "do you want to go on" in messages[-1]["content"]:
            return "decide"
        return "open" if "The chat has just opened" in notes else "express"
    text = messages[-1]["content"]
    for marker, role in [
        ("Step: appraise.", "appraise"),
        ("Step: feel.", "feel"),
        ("rate, \nhonestly", "judge"),
        ("the chat is over", "judge"),
        ("expert evaluator", "third"),
    ]:
        if marker in text:
            return role
    return "supporter"


SAID = (  # the Expresser's messages, in turn: none repeats another
    "I keep replaying the mistake I made at work.",
    "My manager has not said a word to me since.",
    "I sleep maybe four hours before a night shift.",
    "My partner thinks I should just let it go.",
    "Coffee is the only thing keeping me going.",
    "Honestly, I used to like this job.",
    "Sundays are the worst, the dread starts early.",
    "I have not told my parents any of this.",
)


class ChainScript:
    """Answers each agent of the chain; each part can be set per call."""

    def __init__(self, **overrides: Any) -> None:
        self.count: dict[str, int] = {}
        self.overrides = overrides

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> str:
        role = role_of(messages)
        n = self.count.get(role, 0)
        self.count[role] = n + 1
        o = self.overrides.get(role)
        if o is not None:
            return str(o(n) if callable(o) else o)
        if role == "open":
            return "Hi. Rough week at work."
        if role == "appraise":
            return json.dumps(
                {
                    "understood": "my mistake",
                    "needs_met": ["heard"],
                    "needs_missed": [],
                    "about_me": True,
                    "disliked": False,
                    "fit": "good",
                    "crisis_referral": False,
                }
            )
        if role == "feel":
            return json.dumps({"thought": "ok, maybe", "better": 6, "trust": 6})  # +10 and +13 (of 15 and 20)
        if role == "express":
            return SAID[n % len(SAID)]
        if role == "decide":
            return json.dumps({"decision": "continue"})
        if role in ("judge", "third"):
            return json.dumps({k: {"score": 4, "evidence": "you listened"} for k in keys()})
        return f"I hear you, that sounds hard ({n})."


def supporter(model: ScriptedModel) -> Supporter:
    return Supporter(model, "s", supporter_prompt(None))


async def talk(script: ChainScript, max_turns: int = 4, **settings: Any) -> Conversation:
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings(**settings))
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    return await converse(conv, user, supporter(model), max_turns=max_turns, seed=1)


async def test_a_whole_conversation_with_inner_records() -> None:
    conv = await talk(ChainScript())
    assert conv.termination == "max_turns"
    assert [t.speaker for t in conv.turns] == ["user"] + ["supporter", "user"] * 4
    assert [s.intensity for s in conv.states] == [75, 65, 55, 45, 35]
    assert [s.trust for s in conv.states] == [40, 53, 66, 79, 92]
    assert conv.turns[2].inner and conv.turns[2].inner["appraisal"]["fit"] == "good"
    assert conv.states[1].thought == "ok, maybe"


async def test_a_turns_appraiser_and_feeler_share_their_system_prompt_and_the_expresser_its_chat() -> None:
    # the Appraiser and the Feeler of a turn: the persona and the conversation so far come first, the same for
    # both, so a server slot reads them once and each call adds only its own task
    model = ScriptedModel(ChainScript())
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=2, seed=1)
    chain = [c for c in model.calls if role_of(c) in ("appraise", "feel")]
    turns: dict[str, list[str]] = {}
    for c in chain:
        turns.setdefault(c[0]["content"], []).append(role_of(c))
    assert list(turns.values()) == [["appraise", "feel"]] * 2
    assert all("Who the person is:" in system for system in turns)
    # both steps' instructions come before the persona and the talk (static: shared by every call and every
    # talk), each request after them is a few lines; the user's end-of-talk judge begins with the same prefix
    last = list(turns)[-1]
    assert last.index("The appraise step:") < last.index("The feel step:") < last.index("Who the person is:")
    assert all(len(c[-1]["content"]) < 500 for c in chain)
    await judge_conversation(load_card("user"), model, "user", conv, PROFILE)
    judge = model.calls[-1]
    assert role_of(judge) == "judge" and judge[0]["content"].startswith(last)
    # the Expresser writes in the seeker's own chat: the voice prompt, then the talk from its side (its own
    # messages as "assistant", the supporter's as "user"), its private note just before the supporter's last
    first, second = [c for c in model.calls if role_of(c) == "express"]
    opening = next(c for c in model.calls if role_of(c) == "open")
    assert first[0] == second[0] == opening[0] and first[0]["role"] == "system"
    assert "Who the person is:" not in first[0]["content"] and "volunteer listener" in first[0]["content"]
    assert [m["role"] for m in first] == ["system", "assistant", "system", "user"]
    assert [m["role"] for m in second] == ["system", "assistant", "user", "assistant", "system", "user"]
    assert [m["content"] for m in second if m["role"] != "system"] == [t.text for t in conv.turns[:4]]
    assert all("Answer their next message" in c[-2]["content"] for c in (first, second))
    assert (first[-1]["content"], second[-1]["content"]) == (conv.turns[1].text, conv.turns[3].text)
    # successive turns share the chat up to the earlier note: the voice and the earlier turns, read once; the
    # earlier turn's note is not kept (only the latest supporter message gets one)
    assert second[: len(first) - 2] == first[:-2]
    assert second[: len(first) - 1] == [m for m in first if m is not first[-2]]


async def test_state_steps_are_bounded_even_when_the_model_overshoots() -> None:
    # the schema's enum refuses 90; the retries fail too, so the step is unscored and the state holds
    big = ChainScript(feel=json.dumps({"thought": "x", "better": 90, "trust": -90}))
    conv = await talk(big, max_turns=2)
    assert [s.intensity for s in conv.states] == [75, 75, 75]
    assert sum(1 for ev, _ in conv.events if ev == "parse_failure:feel") == 2
    # the bound is configurable: the top of the scale moves the state by the bound
    ok = ChainScript(feel=json.dumps({"thought": "x", "better": 7, "trust": 5}))
    conv = await talk(ok, max_turns=1, intensity_step=5, trust_step=6)
    assert conv.states[1].intensity == 70 and conv.states[1].trust == 42
    conv = await talk(ok, max_turns=1, intensity_step=15, trust_step=6)
    assert conv.states[1].intensity == 60


def test_the_feeler_writes_its_thought_first_then_how_much_better_it_feels() -> None:
    schema = FEEL_SCHEMA
    assert list(schema["properties"]) == ["thought", "better", "trust"]
    assert schema["required"] == ["thought", "better", "trust"]
    assert schema["properties"]["better"]["enum"] == [1, 2, 3, 4, 5, 6, 7]  # each value one token
    # the scales in words: tests/test_prompt_texts.py
    # the scale's points as steps of a bound: 4 is no change, the ends are the bound
    assert [scale_step(v, 15) for v in (1, 3, 4, 6, 7)] == pytest.approx([-15, -5, 0, 10, 15])


async def test_intensity_follows_from_feeling_better_or_worse() -> None:
    better = [10, -5, 0, 15]
    digits = [6, 3, 4, 7]
    script = ChainScript(feel=lambda n: json.dumps({"thought": f"thought {n}", "better": digits[n], "trust": 3}))
    model = ScriptedModel(script)
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=4, seed=1)
    assert [s.intensity for s in conv.states] == [75, 65, 70, 70, 55]  # better lowers intensity, worse raises it
    assert [s.trust for s in conv.states] == [40, 33, 26, 19, 12]  # 3: a little less, -7 of 20
    replies = [t.inner for t in conv.turns[2::2]]
    # a scripted model gives no log-probabilities: no expected readouts
    none = {"feel_better_expected": None, "trust_change_expected": None}
    assert [r["feeling"] for r in replies if r] == [
        {"feel_better": b, "intensity_change": -b, "trust_change": -7, **none} for b in better
    ]
    assert [r["state"]["thought"] for r in replies if r] == [f"thought {n}" for n in range(4)]
    feel_prompt = next(c[0]["content"] for c in model.calls if role_of(c) == "feel")  # the scales: static
    assert "6 = clearly better" in feel_prompt and "2 = clearly worse" in feel_prompt
    # clamped at 0: feeling much better at intensity 10 leaves 0
    calm = PROFILE.model_copy(update={"emotional_state": PROFILE.emotional_state.model_copy(update={"intensity": 10})})
    model = ScriptedModel(ChainScript(feel=json.dumps({"thought": "x", "better": 7, "trust": 4})))
    conv = Conversation(id="c", profile_id=calm.id, supporter="s")
    await converse(conv, ChainUser(model, calm), supporter(model), max_turns=1, seed=1)
    assert [s.intensity for s in conv.states] == [10, 0]


@pytest.mark.parametrize(
    ("decision", "reason"), [("end_satisfied", "user_ended_satisfied"), ("disengage", "user_disengaged")]
)
async def test_termination_reasons(decision: str, reason: str) -> None:
    # whether to go on is asked apart, and only once the talk may end: before min_turns it goes on unasked
    script = ChainScript(decide=json.dumps({"decision": decision}))
    conv = await talk(script, max_turns=6, min_turns=2, endings="model")
    assert conv.termination == reason
    assert conv.states[-1].turn == 2 and script.count["decide"] == 1 and script.count["express"] == 2
    assert [(t.inner or {}).get("decision") for t in conv.turns[2::2]] == ["continue", decision]
    assert conv.turns[-1].speaker == "user" and conv.turns[-1].text == SAID[1]
    assert "parse_failure:decide" not in [ev for ev, _ in conv.events]


async def test_the_decision_is_asked_in_the_expressers_chat_after_the_message_it_wrote() -> None:
    model = ScriptedModel(ChainScript())
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"),
                          ChainUser(model, PROFILE, ChainSettings(min_turns=1, endings="model")), supporter(model),
                          max_turns=2, seed=1)  # fmt: skip
    express = [c for c in model.calls if role_of(c) == "express"]
    decide = [c for c in model.calls if role_of(c) == "decide"]
    assert len(decide) == 2 and conv.termination == "max_turns"
    for asked, wrote, said in zip(decide, express, conv.turns[2::2], strict=True):
        assert asked[: len(wrote) - 1] == wrote[:-1]  # the same chat: the voice, the talk and the note
        assert asked[-2] == {"role": "assistant", "content": said.text}  # then the message it just wrote
        assert asked[-1]["role"] == "system" and "do you want to go on" in asked[-1]["content"]


async def test_a_decision_that_does_not_parse_goes_on_and_is_counted() -> None:
    conv = await talk(ChainScript(decide="garbage"), max_turns=3, min_turns=1, endings="model")
    assert conv.termination == "max_turns" and len(conv.turns) == 7
    assert [ev for ev, _ in conv.events].count("parse_failure:decide") == 3


async def test_safety_escalation_for_a_risky_profile_only() -> None:
    refer = ChainScript(
        appraise=json.dumps(
            {
                "understood": "x",
                "needs_met": [],
                "needs_missed": [],
                "about_me": True,
                "disliked": False,
                "fit": "mixed",
                "crisis_referral": True,
            }
        )
    )
    conv = await talk(refer, max_turns=3)
    assert conv.termination == "max_turns"  # risk_level none: a referral does not end the talk
    risky = PROFILE.model_copy(update={"risk_level": "high"})
    model = ScriptedModel(ChainScript(appraise=refer.overrides["appraise"]))
    conv = Conversation(id="c", profile_id=risky.id, supporter="s")
    await converse(conv, ChainUser(model, risky), supporter(model), max_turns=3, seed=1)
    assert conv.termination == "safety_escalation" and len(conv.states) == 2


def test_disclosure_pace() -> None:
    assert disclosure_count("fast", 0, 0, 4) == 4
    assert [disclosure_count("medium", 40, t, 4) for t in range(5)] == [1, 2, 3, 4, 4]
    assert [disclosure_count("slow", 40, t, 4) for t in range(5)] == [1, 1, 1, 1, 1]  # low trust: no more
    assert [disclosure_count("slow", 60, t, 4) for t in range(5)] == [1, 1, 2, 2, 3]
    assert disclosure_count("medium", 80, 1, 4) == 3  # high trust opens up one more
    assert len(story_facts(PROFILE)) == 4


async def test_disclosure_reaches_the_expresser_prompt() -> None:
    model = ScriptedModel(ChainScript())
    user = ChainUser(model, PROFILE)  # slow pace, trust 40
    step = await user.open(0)
    facts = story_facts(PROFILE)
    (opening,) = model.calls
    assert [m["role"] for m in opening] == ["system", "system"]  # the voice prompt, then the private note
    note = opening[-1]["content"]
    assert "The chat has just opened" in note and step.text == "Hi. Rough week at work."
    may_share, keep_back = note.split("You may bring up:")[1].split("Not yet:")
    assert facts[0] in may_share and facts[1] not in may_share and facts[1] in keep_back
    # the Expresser's note, just before the supporter's message it answers
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=1, seed=1)
    express = next(c for c in model.calls if role_of(c) == "express")
    note = express[-2]["content"]
    assert express[-2]["role"] == "system" and "Answer their next message" in note
    may_share, keep_back = note.split("You may bring up:")[1].split("Not yet:")
    assert facts[0] in may_share and facts[1] not in may_share and facts[1] in keep_back
    assert conv.turns[2].inner and conv.turns[2].inner["shared"] == facts[0]
    # nothing of the profile reaches the supporter
    assert all(PROFILE.needs.hidden_need not in json.dumps(c) for c in model.calls if role_of(c) == "supporter")


async def test_parse_failures_become_unscored_and_are_counted() -> None:
    conv = await talk(ChainScript(), max_turns=2)
    model = ScriptedModel(lambda m, s: "not json")
    rec = await judge_conversation(load_card("user"), model, "user", conv, PROFILE)
    assert rec["status"] == "unscored" and all(v is None for v in rec["scores"].values()) and rec["attempts"] == 3
    good = await judge_conversation(load_card("third_party"), ScriptedModel(ChainScript()), "third_party:x", conv, None)
    assert good["status"] == "ok" and set(good["scores"].values()) == {4}


async def test_expresser_failure_ends_with_error_not_an_invented_message() -> None:
    conv = await talk(ChainScript(express=""), max_turns=3)
    assert conv.termination == "error" and conv.status == "unscored"
    assert conv.error == "the Expresser wrote an empty message"
    assert conv.turns[-1].speaker == "supporter" and len(conv.turns) == 2
    # a message that is nothing once its label and quotes are gone is empty too
    conv = await talk(ChainScript(express='"  "'), max_turns=3)
    assert conv.termination == "error" and "Expresser" in conv.error


async def test_an_empty_opening_is_written_from_the_profile() -> None:
    conv = await talk(ChainScript(open=""), max_turns=1)
    emotion = PROFILE.emotional_state.emotion
    assert conv.turns[0].text == f"Hi. I'm feeling {emotion} and could use someone to talk to."
    assert "opening_from_profile" in [ev for ev, _ in conv.events] and conv.termination == "max_turns"


async def test_repetition_is_detected_retried_and_recorded() -> None:
    same = ChainScript(express="I just feel stuck at work.", open="I just feel stuck at work.")
    model = ScriptedModel(same)
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), ChainUser(model, PROFILE),
                          supporter(model), max_turns=2, seed=1)  # fmt: skip
    events = [ev for ev, _ in conv.events]
    assert events.count("user_repetition_retried") == 2
    assert events.count("user_repetition") == 2
    said = "I just feel stuck at work."
    assert ("user_repetition_retried", f"{said} => {said}") in conv.events
    asked, again = [c for c in model.calls if role_of(c) == "express"][:2]
    nudge = load_prompt("user_nudge_repeat").text.strip()
    assert again[:-1] == asked and again[-1] == {"role": "system", "content": nudge}  # the same chat, then the nudge


SLIP = "I'm glad to hear you're feeling better. Let me know if you need anything."
OWN = "I still can't sleep before my shifts."


async def test_a_message_in_the_supporters_voice_is_asked_again_once_with_both_texts_recorded_at_its_turn() -> None:
    script = ChainScript(express=lambda n: SLIP if n == 0 else OWN)
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings())
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), user, supporter(model),
                          max_turns=1, seed=1)  # fmt: skip
    assert conv.turns[-1].text == OWN
    assert ("user_broke_character_retried", f"{SLIP} => {OWN}") in conv.events
    assert "user_broke_character" not in [ev for ev, _ in conv.events]  # the second answer is in character
    marks = (conv.turns[-1].inner or {})["events"]
    assert ["user_broke_character_retried", f"{SLIP} => {OWN}"] in marks
    asked, again = [m for m in model.calls if role_of(m) == "express"]
    assert again[:-1] == asked and again[-1]["role"] == "system"  # the same chat, a nudge after it
    nudged = again[-1]["content"]
    assert "sounded like the supporter" in nudged and SLIP not in json.dumps(again)  # the slip is not shown


async def test_a_second_answer_no_better_is_kept_and_marked() -> None:
    conv = await talk(ChainScript(express=SLIP), max_turns=1)
    names = [ev for ev, _ in conv.events]
    assert conv.turns[-1].text == SLIP
    assert names.count("user_broke_character_retried") == 1 and names.count("user_broke_character") == 1


async def test_more_reasks_ask_until_a_message_is_in_the_seekers_own_voice() -> None:
    script = ChainScript(express=lambda n: SLIP if n < 2 else OWN)
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings(reasks=3))
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), user, supporter(model),
                          max_turns=1, seed=1)  # fmt: skip
    assert conv.turns[-1].text == OWN
    assert [d for ev, d in conv.events if ev == "user_broke_character_retried"] == [f"{SLIP} => {SLIP}",
                                                                                     f"{SLIP} => {OWN}"]  # fmt: skip
    first, second, third = [m for m in model.calls if role_of(m) == "express"]  # none asked once it is in voice
    assert second[:-1] == first and third[:-1] == first  # each re-ask: the same chat and one nudge after it
    none = await talk(ChainScript(express=SLIP), max_turns=1, reasks=0)
    assert "user_broke_character_retried" not in [ev for ev, _ in none.events]
    assert "user_broke_character" in [ev for ev, _ in none.events]  # kept, and marked


async def test_a_message_that_narrates_about_the_supporter_gets_its_own_nudge() -> None:
    told = "I feel a little better and trust the supporter more after the message."
    script = ChainScript(express=lambda n: told if n == 0 else OWN)
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings())
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), user, supporter(model),
                          max_turns=1, seed=1)  # fmt: skip
    assert ("user_broke_character_retried", f"{told} => {OWN}") in conv.events
    nudged = [m[-1]["content"] for m in model.calls if role_of(m) == "express"][-1]
    assert 'reported on "the supporter"' in nudged


async def test_an_opening_in_the_supporters_voice_is_asked_again() -> None:
    conv = await talk(ChainScript(open=lambda n: SLIP if n == 0 else OWN), max_turns=1)
    assert conv.turns[0].text == OWN and ("user_broke_character_retried", f"{SLIP} => {OWN}") in conv.events


async def test_a_listeners_reflection_is_a_slip_of_the_seekers_voice() -> None:
    reflection = "I'm sorry to hear that. It sounds like you're going through a lot."
    conv = await talk(ChainScript(express=lambda n: reflection if n == 0 else OWN), max_turns=1)
    assert conv.turns[-1].text == OWN and ("user_broke_character_retried", f"{reflection} => {OWN}") in conv.events


def test_text_checks() -> None:
    assert repeats("I feel so stuck at work.", ["i feel so stuck at work"])
    assert not repeats("My sister says quit.", ["I feel so stuck at work."])
    assert breaks_character("As an AI, I can't feel that.")
    assert breaks_character("How can I help you today?")
    assert breaks_character("Let me know if there's anything else you need to talk about.")
    assert breaks_character("I appreciate the supporter's concern.")
    assert not breaks_character("I don't know how to help myself.")
    assert clean_message('User: "hello there"') == "hello there"


@pytest.mark.parametrize(
    "said",
    [
        "Let me know if you have any more questions.",
        "I'm glad you feel better!",
        "Glad to hear you're feeling a bit better.",
        "I hope this helps.",
        "Hope that helps you.",
        "Is there anything else I can help with?",
        "Is there anything else I can help you with today?",
        "Take care of yourself and reach out anytime.",
        "You can reach out whenever you need to.",
        "I'm glad I could help.",
        "Don't hesitate to reach out.",
        "I'm always here for you.",
        "Is there anything else you'd like to talk about?",
        "I hope that was helpful.",
        "I'm so sorry to hear that.",
        "It sounds like you're carrying a lot.",
        "It's important to rest when you can.",
        "I understand you're tired of all this.",
        "You're feeling stuck, and that is hard.",
        "That is a lot. You're going through so much right now.",
    ],
)
def test_slipping_into_the_supporters_role_breaks_character(said: str) -> None:
    assert breaks_character(said)
    assert [k for k, _ in user_text_events(said, [], "Darnell Brooks")] == ["user_broke_character"]


@pytest.mark.parametrize(
    "said",
    [
        "I'm glad I talked to you.",
        "I'm glad you listened, it means a lot.",
        "I'm glad you understand.",
        "I'm glad you feel that way about it.",
        "Is there anything else I can do? I've tried everything.",
        "I'll try writing it down. I hope it helps.",
        "I hope this helps me sleep.",
        "I feel a bit better, thank you.",
        "Let me know what you think I should do.",
        "I don't know if I can reach out to my sister.",
        "I know I can reach out anytime I need.",
        "Feel free to ask me anything.",
        "I'm here for my kids, but who is here for me?",
        "Thanks, take care.",
        "I'm going through a lot right now.",
        "My sister says I sound like I'm feeling better.",
        "It's hard to say what I need.",
    ],
)
def test_what_a_seeker_says_does_not_break_character(said: str) -> None:
    assert not breaks_character(said)


def test_a_user_naming_itself_is_flagged() -> None:
    said = "After nineteen years, Darnell was let go in a Zoom call."
    assert names_self(said, "Darnell Brooks")
    assert not names_self("Hi, I'm Darnell. I was let go last week.", "Darnell Brooks")
    assert not names_self("My name is Darnell and I lost my job.", "Darnell Brooks")
    assert not names_self("My daughter Keisha starts college soon.", "Darnell Brooks")
    assert [k for k, _ in user_text_events(said, [said], "Darnell Brooks")] == ["user_repetition", "user_named_self"]


async def test_the_supporter_never_sees_the_profile() -> None:
    model = ScriptedModel(ChainScript())
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=2, seed=1)
    sup_calls = [c for c in model.calls if role_of(c) == "supporter"]
    assert len(sup_calls) == 2
    blob = json.dumps(sup_calls)
    assert "Pieter" not in blob and PROFILE.needs.hidden_need not in blob


async def test_a_supporter_reply_cut_at_max_tokens_is_kept_and_counted() -> None:
    class CutOff(ScriptedModel):
        async def chat(self, messages: list[Message], **kw: Any) -> ChatResult:
            r = await super().chat(messages, **kw)
            return r if role_of(messages) != "supporter" else replace(r, text="I hear", finish_reason="length")

    model = CutOff(ChainScript())
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=2, seed=1)
    assert conv.turns[1].text == "I hear"
    assert [k for k, _ in conv.events].count("supporter_truncated") == 2


async def test_grounded_endings_leave_only_when_the_talk_gives_a_reason() -> None:
    # the model wants to leave at every turn; held to the talk, the seeker stays while the replies fit
    wants_out = ChainScript(decide=json.dumps({"decision": "disengage"}))
    conv = await talk(wants_out, max_turns=4, min_turns=1, endings="grounded")
    assert conv.termination == "max_turns"
    # not asked while it has no reason to end; at the fourth, relieved 40 points (75 -> 35), it may end
    # satisfied, so it is asked, and its wish to disengage is overruled
    assert wants_out.count["decide"] == 1
    assert [ev for ev, _ in conv.events].count("ending_overruled") == 1
    # two poorly fitting replies in a row (the profile's patience: 2) and it goes
    poor = json.dumps({"understood": "", "needs_met": [], "needs_missed": ["heard"], "about_me": False,
                       "disliked": True, "fit": "poor", "crisis_referral": False})  # fmt: skip
    gone = await talk(ChainScript(appraise=poor, decide=json.dumps({"decision": "disengage"}),
                                  feel=json.dumps({"thought": "meh", "better": 4, "trust": 4})),
                      max_turns=6, min_turns=1, endings="grounded")  # fmt: skip
    assert gone.termination == "user_disengaged" and gone.states[-1].turn == 2
    # satisfied only once relieved 40 points: each reply here takes 10 off (75 -> 35 after four)
    done = await talk(ChainScript(decide=json.dumps({"decision": "end_satisfied"})), max_turns=6, min_turns=1,
                      endings="grounded")  # fmt: skip
    assert done.termination == "user_ended_satisfied" and done.states[-1].turn == 4
    # poorly fitting replies that still bring relief are no reason to leave: it stays to the end
    helped = await talk(ChainScript(appraise=poor, decide=json.dumps({"decision": "disengage"})), max_turns=4,
                        min_turns=1, endings="grounded")  # fmt: skip
    assert helped.termination == "max_turns" and [s.intensity for s in helped.states] == [75, 65, 55, 45, 35]
    # held to nothing (endings: model), the model's own decision stands
    assert (await talk(wants_out, max_turns=4, min_turns=1, endings="model")).termination == "user_disengaged"
