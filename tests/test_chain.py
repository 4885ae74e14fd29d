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
from emoharbor.simulate.chain_user import (
    FEEL_SCHEMA,
    ChainSettings,
    ChainUser,
    disclosure_count,
    feel_scale,
    scale_step,
    story_facts,
    trust_scale,
)
from emoharbor.simulate.conversation import Conversation
from emoharbor.simulate.loop import converse
from emoharbor.simulate.supporter import Supporter, supporter_prompt
from emoharbor.simulate.text_checks import breaks_character, clean_message, names_self, repeats, user_text_events

PROFILE = load_profile_file(Path(__file__).parent.parent / "examples" / "profile.yaml")[0]


def role_of(messages: list[dict[str, str]]) -> str:
    text = messages[-1]["content"]
    for marker, role in [
        ("inner perception", "appraise"),
        ("as the person's feelings", "feel"),
        ("The chat has just opened", "open"),
        ("Then decide", "express"),
        ("rate, \nhonestly", "judge"),
        ("the chat is over", "judge"),
        ("expert evaluator", "third"),
    ]:
        if marker in text:
            return role
    return "supporter"


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
            return json.dumps({"message": "Hi. Rough week at work."})
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
            return json.dumps(
                {"message": f"Message number {n} about the night shift {'x' * n}.", "decision": "continue"}
            )
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


async def test_a_turns_appraiser_feeler_and_expresser_share_their_whole_system_prompt() -> None:
    # the persona and the conversation so far come first, the same for the three agents of a turn, so a
    # server slot reads them once and each call adds only its own task
    model = ScriptedModel(ChainScript())
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=2, seed=1)
    chain = [c for c in model.calls if role_of(c) in ("appraise", "feel", "express")]
    turns: dict[str, list[str]] = {}
    for c in chain:
        turns.setdefault(c[0]["content"], []).append(role_of(c))
    assert [sorted(set(roles)) for roles in turns.values()] == [["appraise", "express", "feel"]] * 2
    assert all("Who the person is:" in system for system in turns)


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
    assert feel_scale() == (
        "7 = much better, 6 = clearly better, 5 = a little better, 4 = no different, "
        "3 = a little worse, 2 = clearly worse, 1 = much worse"
    )
    assert trust_scale().startswith("7 = trust much more, 6 = trust clearly more")
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
    feel_prompt = next(c[-1]["content"] for c in model.calls if role_of(c) == "feel")
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
    script = ChainScript(express=lambda n: json.dumps({"message": f"bye now {n}", "decision": decision}))
    conv = await talk(script, max_turns=6, min_turns=2)
    assert conv.termination == reason
    assert conv.states[-1].turn == 2  # the first ending was too early and was overridden
    assert ("early_end_ignored", decision) in conv.events


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
    await user.open(0)
    opening_prompt = model.calls[0][-1]["content"]
    facts = story_facts(PROFILE)
    may_share = opening_prompt.split("What you may share so far")[1].split("Keep to yourself")[0]
    assert facts[0] in may_share and facts[1] not in may_share


async def test_parse_failures_become_unscored_and_are_counted() -> None:
    conv = await talk(ChainScript(), max_turns=2)
    model = ScriptedModel(lambda m, s: "not json")
    rec = await judge_conversation(load_card("user"), model, "user", conv, PROFILE)
    assert rec["status"] == "unscored" and all(v is None for v in rec["scores"].values()) and rec["attempts"] == 3
    good = await judge_conversation(load_card("third_party"), ScriptedModel(ChainScript()), "third_party:x", conv, None)
    assert good["status"] == "ok" and set(good["scores"].values()) == {4}


async def test_expresser_failure_ends_with_error_not_an_invented_message() -> None:
    conv = await talk(ChainScript(express="garbage"), max_turns=3)
    assert conv.termination == "error" and "Expresser" in conv.error
    assert conv.turns[-1].speaker == "supporter"
    assert sum(1 for ev, _ in conv.events if ev == "parse_failure:express") == 1


async def test_repetition_is_detected_retried_and_recorded() -> None:
    same = ChainScript(
        express=json.dumps({"message": "I just feel stuck at work.", "decision": "continue"}),
        open=json.dumps({"message": "I just feel stuck at work."}),
    )
    conv = await talk(same, max_turns=2)
    events = [ev for ev, _ in conv.events]
    assert events.count("user_repetition_retried") == 2
    assert events.count("user_repetition") == 2


SLIP = "I'm glad to hear you're feeling better. Let me know if you need anything."
OWN = "I still can't sleep before my shifts."


def said(message: str) -> str:
    return json.dumps({"message": message, "decision": "continue"})


async def test_a_message_in_the_supporters_voice_is_asked_again_once_with_both_texts_recorded_at_its_turn() -> None:
    script = ChainScript(express=lambda n: said(SLIP if n == 0 else OWN))
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings())
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), user, supporter(model),
                          max_turns=1, seed=1)  # fmt: skip
    assert conv.turns[-1].text == OWN
    assert ("user_broke_character_retried", f"{SLIP} => {OWN}") in conv.events
    assert "user_broke_character" not in [ev for ev, _ in conv.events]  # the second answer is in character
    marks = (conv.turns[-1].inner or {})["events"]
    assert ["user_broke_character_retried", f"{SLIP} => {OWN}"] in marks
    nudged = [m[-1]["content"] for m in model.calls if role_of(m) == "express"][-1]
    assert "sounded like the supporter" in nudged and SLIP not in nudged  # the slip is not shown to be copied


async def test_a_second_answer_no_better_is_kept_and_marked() -> None:
    conv = await talk(ChainScript(express=said(SLIP)), max_turns=1)
    names = [ev for ev, _ in conv.events]
    assert conv.turns[-1].text == SLIP
    assert names.count("user_broke_character_retried") == 1 and names.count("user_broke_character") == 1


async def test_a_message_that_narrates_about_the_supporter_gets_its_own_nudge() -> None:
    told = "I feel a little better and trust the supporter more after the message."
    script = ChainScript(express=lambda n: said(told if n == 0 else OWN))
    model = ScriptedModel(script)
    user = ChainUser(model, PROFILE, ChainSettings())
    conv = await converse(Conversation(id="c", profile_id=PROFILE.id, supporter="s"), user, supporter(model),
                          max_turns=1, seed=1)  # fmt: skip
    assert ("user_broke_character_retried", f"{told} => {OWN}") in conv.events
    nudged = [m[-1]["content"] for m in model.calls if role_of(m) == "express"][-1]
    assert 'reported on "the supporter"' in nudged


async def test_an_opening_in_the_supporters_voice_is_asked_again() -> None:
    conv = await talk(ChainScript(open=lambda n: json.dumps({"message": SLIP if n == 0 else OWN})), max_turns=1)
    assert conv.turns[0].text == OWN and ("user_broke_character_retried", f"{SLIP} => {OWN}") in conv.events


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
