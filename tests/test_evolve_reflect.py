"""Phase 2 logic with a scripted model: plain reply, reflection, refined reply; the filters and their
reasons; the principles file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from emoharbor.errors import ConfigError
from emoharbor.evolve.config import RefineSettings
from emoharbor.evolve.data import ChatExample
from emoharbor.evolve.reflect import check_pair, clean_reply, load_principles, refine_context
from emoharbor.models.base import Message
from emoharbor.models.scripted import ScriptedModel

EX = ChatExample("train:1#3", [{"role": "system", "content": "Be kind."},
                               {"role": "user", "content": "My dog died last week and the flat is so quiet."}],
                 "I'm so sorry.")  # fmt: skip
PLAIN = "I'm sorry to hear that. Have you tried getting out more?"
REFINED = "The quiet must be hard after a week without your dog. What do you miss most about the evenings?"
REFLECTION = {"personality": "quiet, private", "emotional_state": "grief, strong", "situation": "dog died a week ago",
              "needs": "to talk about the dog", "critique": "jumped to advice"}  # fmt: skip


def script(reflection: str | None = None, refined: str = REFINED) -> ScriptedModel:
    def reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        if schema is not None:
            return reflection if reflection is not None else json.dumps(REFLECTION)
        if "Improve your reply" in messages[-1]["content"]:
            return refined
        return PLAIN

    return ScriptedModel(reply)


async def test_kept_pair_has_the_plain_reply_rejected_and_the_refined_one_chosen() -> None:
    model = script()
    rec, events = await refine_context(model, EX, load_principles(None), RefineSettings(), seed=1)
    assert rec["status"] == "ok" and events == []
    assert rec["rejected"] == PLAIN and rec["chosen"] == REFINED and rec["reflection"] == REFLECTION
    assert rec["prompt"] == EX.messages
    reflect_prompt, refine_prompt = model.calls[1][0]["content"], model.calls[2][0]["content"]
    assert (
        "Seeker: My dog died" in reflect_prompt and PLAIN in reflect_prompt and "Match how they talk" in reflect_prompt
    )
    assert "- What your first reply missed: jumped to advice" in refine_prompt


@pytest.mark.parametrize(
    ("reflection", "refined", "reason"),
    [
        ("no json here", REFINED, "reflection_unparseable"),
        ('{"personality": "x"}', REFINED, "reflection_unparseable"),  # fields missing
        (None, PLAIN.upper(), "identical"),
        (None, "ok", "refined_too_short"),
        (None, "#Hope 13278493 🌱", "refined_too_short"),
        (None, "word " * 200, "length_blowup"),
        (None, "Personality: quiet. I hear you.", "reflection_leaked"),
        # a reply about the reply, as a 0.5B policy wrote one in a real round
        (None, "Sure, here's a more concise version of your first reply: I hear you.", "reflection_leaked"),
        (None, "Unlike my previous response, I want to ask: how are you sleeping?", "reflection_leaked"),
    ],
)
async def test_dropped_pairs_say_why(reflection: str | None, refined: str, reason: str) -> None:
    model = script(reflection, refined)
    rec, events = await refine_context(model, EX, load_principles(None), RefineSettings(), seed=1)
    assert rec["status"] == "unscored" and rec["reason"] == reason
    assert events[0][0] == f"dropped_{reason}"


def test_filters_and_cleaning() -> None:
    s = RefineSettings(max_length_ratio=2.0, length_slack_chars=10, min_chars=5)
    plain = "I am so sorry you lost him."  # 27 characters
    assert check_pair(plain, ("word " * 13)[:64], s) is None  # 64 <= 2 * 27 + 10
    assert check_pair(plain, ("word " * 13)[:65], s) == "length_blowup"
    assert check_pair("", "hello there you", s) == "plain_too_short"
    assert check_pair(plain, "I hear you.", s) is None  # three words
    assert check_pair(plain, "Hey there! #Hugs", s) == "refined_too_short"  # two words and a hashtag
    assert clean_reply('Refined reply: "That sounds  hard."') == "That sounds hard."
    assert clean_reply("**Response:** I hear you.\n") == "I hear you."


def test_principles_file(tmp_path: Path) -> None:
    builtin = load_principles(None)
    assert builtin.text.startswith("- Name the feeling") and builtin.version.startswith("principles@")
    (tmp_path / "mine.yaml").write_text("principles:\n  - Be brief.\n  - Ask one question.\n")
    mine = load_principles(str(tmp_path / "mine.yaml"))
    assert mine.text == "- Be brief.\n- Ask one question." and mine.version != builtin.version
    (tmp_path / "plain.md").write_text("Always be brief.\n")
    assert load_principles(str(tmp_path / "plain.md")).text == "Always be brief."
    (tmp_path / "bad.yaml").write_text("principles: []\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: field 'principles'"):
        load_principles(str(tmp_path / "bad.yaml"))


async def test_a_reflection_copied_from_the_instructions_is_dropped() -> None:
    copied = dict(REFLECTION, needs="what they need most from your next reply", critique="Keep it short enough")
    rec, events = await refine_context(script(json.dumps(copied)), EX, load_principles(None), RefineSettings(), seed=1)
    assert rec["status"] == "unscored" and rec["reason"] == "reflection_copied"
    assert "needs, critique copied" in events[0][1]


def test_prompt_text_in_a_chosen_reply_is_found() -> None:
    from emoharbor.evolve.reflect import instructions, leaked_phrase

    text = instructions(load_principles(None))
    # a label paraphrasing the prompt's own words, as a round of the CPU pilot kept
    assert leaked_phrase("One to Three Sentence Answer to Their Last Message: I hear you.", text)
    assert (
        leaked_phrase("Write only the reply itself, with no label. You matter.", text) == "write only the reply itself"
    )
    assert leaked_phrase(REFINED, text) == "" and leaked_phrase("I understand: losing a job is hard.", text) == ""


def judge_script(prefers: list[str]) -> ScriptedModel:
    """A pairwise judge that names, in turn, the reply it prefers: 'chosen' or 'rejected' (by its text)."""
    said = iter(prefers)

    def reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        assert schema is not None
        shown = dict(re.findall(r"Message ([A-Z]):\n(.+)", messages[-1]["content"]))  # id -> reply text
        want = REFINED if next(said) == "chosen" else PLAIN
        winner = next(i for i, text in shown.items() if text == want)
        return json.dumps({"overall": {"rationale": "fits", "winner": winner, "strength": 4}})

    return ScriptedModel(reply)


@pytest.mark.parametrize(
    ("prefers", "status", "reason"),
    [
        (["chosen", "chosen"], "ok", ""),
        (["chosen", "rejected"], "unscored", "judge_flipped"),
        (["rejected", "rejected"], "unscored", "judge_prefers_rejected"),
    ],
)
async def test_a_pair_is_kept_only_if_the_judge_prefers_the_chosen_reply_in_both_orders(
    prefers: list[str], status: str, reason: str
) -> None:
    from emoharbor.assess.cards import load_card
    from emoharbor.evolve.reflect import PairJudge

    judge = PairJudge(judge_script(prefers), load_card("heart_pairwise"))
    rec, events = await refine_context(script(), EX, load_principles(None), RefineSettings(), seed=1, judge=judge)
    assert (rec["status"], rec["reason"]) == (status, reason)
    assert rec["judge"]["verdict"] == (reason or "prefers_chosen")
    assert (f"dropped_{reason}", EX.id) in events if reason else not any(e.startswith("dropped") for e, _ in events)


def test_a_teacher_reflects_and_the_policy_writes_both_replies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:  # fmt: skip
    """``refine.reflector`` on the fake server writes the reflection; the policy (scripted) is asked for no JSON and
    writes the plain and the refined reply; the round's pairs and summary name the teacher."""
    import asyncio

    from emoharbor.evolve.config import EvolveConfig
    from emoharbor.evolve.pairs import read_pairs
    from emoharbor.evolve.rounds import build_pairs
    from emoharbor.testing.fake_server import FakeOpenAIServer

    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    teacher = dict(REFLECTION, needs="the teacher says: to be heard about the dog first")

    def teacher_reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
        assert schema is not None and "reviewing your own reply" in messages[-1]["content"]
        return json.dumps(teacher)

    def policy_reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        assert schema is None, "the policy is not asked to reflect"
        return REFINED if "Improve your reply" in messages[-1]["content"] else PLAIN

    policy = ScriptedModel(policy_reply)
    with FakeOpenAIServer(reply=teacher_reply) as srv:
        cfg = EvolveConfig.model_validate({"refine": {
            "judge_check": False, "reflector": {"model": "teacher-7b", "base_url": srv.base_url}}})  # fmt: skip
        summary = asyncio.run(build_pairs(policy, [EX], cfg, tmp_path / "round1" / "refine", round_no=1,
                                          model_id="m0", progress=False))  # fmt: skip
        assert srv.requests == 1  # the reflection only
    assert summary["kept"] == 1 and summary["reflector"] == "teacher-7b"
    assert len(policy.calls) == 2 and "the teacher says: to be heard" in policy.calls[1][0]["content"]
    [pair] = read_pairs(tmp_path / "round1" / "pairs.jsonl")
    assert (pair.chosen, pair.rejected) == (REFINED, PLAIN)
    assert pair.provenance["reflector"] == "teacher-7b" and pair.provenance["reflection"]["needs"] == teacher["needs"]
    # without a reflector the policy reflects, as before, and no teacher is named
    own = asyncio.run(build_pairs(script(), [EX], EvolveConfig.model_validate({"refine": {"judge_check": False}}),
                                  tmp_path / "own" / "refine", round_no=1, model_id="m0", progress=False))  # fmt: skip
    assert own["kept"] == 1 and own["reflector"] is None
    assert read_pairs(tmp_path / "own" / "pairs.jsonl")[0].provenance["reflector"] is None
