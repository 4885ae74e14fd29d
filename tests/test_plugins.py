"""Worked examples of extending emoharbor (docs/extending.md), run through the real paths.

A new user agent touches: its own module, with one ``register_agent(...)`` line in it. A user's own module is
named in the config (``user_agent: {agent: MODULE:NAME}``) and imported from there: no other file changes. A
built-in one (``simulate/rules_user.py``) adds its module's name to ``agents.BUILT_IN``: one line elsewhere.

A new judge form touches: its own module, with one ``register_judge_form(...)`` line in it (and the prompt
file it reads). A card names it (``kind: MODULE:NAME``), and the module is imported from there: no file of
emoharbor changes. A built-in one (``assess/pair_judge.py``) adds its module's name to
``judge_forms.BUILT_IN``: one line elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from cli_helpers import run_main
from emoharbor.assess import judge_forms
from emoharbor.assess.cards import load_card
from emoharbor.config import RunConfig
from emoharbor.errors import ConfigError, EmoharborError
from emoharbor.evaluate.plan import Plan
from emoharbor.evaluate.run import run_evaluation
from emoharbor.overrides import validated
from emoharbor.profiles.loader import builtin_profiles
from emoharbor.reward.context import RewardContext
from emoharbor.reward.score import UserReward
from emoharbor.reward.settings import RewardSettings
from emoharbor.simulate import agents
from emoharbor.simulate.conversation import Turn
from emoharbor.simulate.rules_user import RulesSettings, RulesUser, verdict
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer

SEEKER = "My manager yelled at me in the meeting and now I dread going back to the office tomorrow."
HEARD = "Being yelled at by your manager in a meeting sounds humiliating, and dreading the office makes sense."
ADVICE = "You should talk to HR about your manager."
DISMISSIVE = "Calm down, at least you still have a job."

# a user's own agent: this module and its one registering line are the whole change
OWN_AGENT = """
from emoharbor.simulate.agents import UserSettings, register_agent
from emoharbor.simulate.user_agent import UserStep


class EchoSettings(UserSettings):
    opening: str = "Hello."


class Echo:
    def __init__(self, settings):
        self.s = settings

    def initial_state(self):
        return None

    async def open(self, seed):
        return UserStep(text=self.s.opening)

    async def react(self, turns, seed):
        return UserStep(text="You said: " + turns[-1].text, decision="end_satisfied")


register_agent("echo", EchoSettings, lambda model, profile, s: Echo(s), needs_model=False)
"""


# a judge form of one's own: a conversation judge shown the supporter's turns only, without the seeker's
OWN_KIND = """
from pathlib import Path

from emoharbor.assess.judge import answer_text
from emoharbor.assess.judge_forms import ConversationForm, register_judge_form


def supporter_turns(card, conv, profile):
    p = card.prompt_file()
    said = "\\n".join(f"Supporter: {t.text}" for t in conv.turns if t.speaker == "supporter")
    text = p.render(replies=said, rubric=card.rubric_file().prompt_text(), answer=answer_text(card))
    return [{"role": "user", "content": text}], f"{card.version}+{p.version}"


register_judge_form(ConversationForm(name="supporter_only", shown=("the supporter's turns",),
                                     prompt=str(Path(__file__).with_name("supporter_only.txt")),
                                     messages=supporter_turns))
"""
OWN_KIND_PROMPT = "Read only what a supporter said, and rate it.\n\n$replies\n\n$rubric\n\n$answer\n"


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents and judge forms registered by a test stay in the test. The built-in ones are registered first: a
    built-in module imported while the copy stands would register into it, and be gone with it."""
    agents.user_agent(agents.DEFAULT), judge_forms.judge_form("reply")
    monkeypatch.setattr(agents, "AGENTS", dict(agents.AGENTS))
    monkeypatch.setattr(judge_forms, "FORMS", dict(judge_forms.FORMS))


def write_run(path: Path, url: str, user_agent: object, reply: str) -> Path:
    fake = {"model": "fake", "base_url": url, "max_retries": 1, "timeout_s": 10}
    cfg = {"name": "plug", "profiles": ["builtin:p00[1-2]*"], "max_turns": 4, "judges": ["third_party"],
           "user_agent": user_agent,
           "roles": {"supporter": {"model": "scripted", "replies": [reply]}, "user": fake, "judge": fake}}  # fmt: skip
    path.write_text(yaml.safe_dump(cfg))
    return path


def stored(run_dir: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    store = RunStore.open_existing(run_dir)
    try:
        return store.config(), [d for _, d in store.items("conversation")]
    finally:
        store.close()


def test_the_rules_agent_runs_through_emoharbor_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as srv:
        cfg = write_run(tmp_path / "c.yaml", srv.base_url, {"agent": "rules", "trust_step": 20}, DISMISSIVE)
        code, _, err = run_main(["run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 0, err
    config, convs = stored(tmp_path / "r")
    assert config["user_agent"] == {"agent": "rules", "intensity_step": 15, "trust_step": 20, "initial_trust": 40,
                                    "min_turns": 2, "echo_words": 2, "satisfied_below": 30,
                                    "disengage_below": 10}  # fmt: skip
    assert not any(str(p).startswith("user_") for p in config["prompt_versions"])  # type: ignore[attr-defined]
    assert len(convs) == 2
    for conv in convs:  # a dismissive reply every turn: trust 40 -> 27 -> 14 -> 1, and the user leaves
        assert conv["termination"] == "user_disengaged"
        assert [s["trust"] for s in conv["states"]] == [40, 27, 14, 1]  # type: ignore[index]
        assert conv["turns"][2]["inner"]["appraisal"]["fit"] == "poor"  # type: ignore[index]


def test_a_users_own_agent_is_a_module_named_in_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, registry: None
) -> None:
    (tmp_path / "my_users.py").write_text(OWN_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_users", raising=False)
    try:
        with FakeOpenAIServer() as srv:
            own = {"agent": "my_users:echo", "opening": "I cannot sleep."}
            cfg = write_run(tmp_path / "c.yaml", srv.base_url, own, "That sounds exhausting.")
            code, _, err = run_main(["run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"], capsys)
        assert code == 0, err
        config, convs = stored(tmp_path / "r")
        assert config["user_agent"] == own
        assert [t["text"] for t in convs[0]["turns"]] == [  # type: ignore[attr-defined]
            "I cannot sleep.", "That sounds exhausting.", "You said: That sounds exhausting."]  # fmt: skip
        assert convs[0]["termination"] == "user_ended_satisfied"
        with pytest.raises(ValidationError, match="opening_text: Extra inputs are not permitted"):
            RunConfig.model_validate({"user_agent": {"agent": "my_users:echo", "opening_text": "x"}})
    finally:
        sys.modules.pop("my_users", None)


def test_an_agent_that_cannot_be_imported_is_one_line() -> None:
    with pytest.raises(ValidationError, match="cannot import no_such_module"):
        RunConfig.model_validate({"user_agent": "no_such_module:echo"})


def test_the_rules_agents_reaction_follows_the_replys_words() -> None:
    assert verdict(HEARD, SEEKER, 2)[0] == "good"
    assert verdict(ADVICE, SEEKER, 2)[0] == "neutral"  # one of the seeker's words (manager) and advice
    assert verdict(DISMISSIVE, SEEKER, 2)[0] == "poor"
    profile = builtin_profiles()[0]
    ctx = RewardContext("c", "file", profile, [Turn(speaker="user", text=SEEKER)], 60, 40)
    reward = UserReward(None, RewardSettings.model_validate({"user_agent": "rules"}))
    got = asyncio.run(reward.score_many([(ctx, HEARD), (ctx, ADVICE), (ctx, DISMISSIVE)]))
    assert [s.status for s in got] == ["ok"] * 3 and all(s.readout == "written" for s in got)
    assert got[0].reward == pytest.approx(0.5 + 0.3 + 0.2)  # relief 1, trust 1, fit good
    assert got[1].reward == pytest.approx(0.0)  # no different, fit mixed
    assert got[2].reward == pytest.approx(0.5 * -0.6667 + 0.3 * -0.65 - 0.2, abs=1e-3)  # worse, fit poor


def test_a_user_without_reactions_is_refused_where_a_reaction_is_needed() -> None:
    with pytest.raises(ConfigError) as e:
        validated(RewardSettings, {"user_agent": {"agent": "simple"}}, {}, "r.yaml")
    assert str(e.value) == (
        "r.yaml: field 'user_agent': agent simple: this simulated user has no reaction readouts (relief, trust, "
        "fit), which the reward needs: choose one that does (chain, rules)"
    )


def test_the_old_spelling_is_read_into_the_block() -> None:
    cfg = RunConfig.model_validate({"intensity_step": 10, "min_turns": 1, "max_turns": 3})
    assert cfg.user_agent.model_dump() == {"agent": "chain", "intensity_step": 10, "trust_step": 20,
                                           "initial_trust": 40, "min_turns": 1, "max_tokens": 200,
                                           "message_tokens": 0, "top_logprobs": 20, "readout": "written",
                                           "endings": "grounded", "patience": 2, "relief_to_end": 40, "examples": None,
                                           "examples_k": 4, "window": 0, "framing": "chat", "reasks": 1,
                                           "voice_model": None}  # fmt: skip
    simple = RunConfig.model_validate({"user_agent": "simple", "intensity_step": 15, "trust_step": 20})
    # the steps given are not the simple user's: it never read them
    said = {
        "agent": "simple",
        "examples": None,
        "examples_k": 4,
        "window": 0,
        "framing": "chat",
        "reasks": 1,
        "voice_model": None,
        "max_tokens": 0,
    }
    assert simple.user_agent.model_dump() == said
    reward = RewardSettings.model_validate({"intensity_step": 12, "max_tokens": 64, "relief": 1.0})
    assert reward.user_agent.model_dump()["max_tokens"] == 64
    assert (reward.user_agent.intensity_step, reward.relief) == (12, 1.0)
    with pytest.raises(ValidationError, match="intensity_step is given twice"):
        RunConfig.model_validate({"intensity_step": 10, "user_agent": {"intensity_step": 12}})


def test_a_run_started_with_the_old_spelling_is_refused_with_the_reason(tmp_path: Path) -> None:
    old = {**json.loads(json.dumps(RunConfig().resolved())), "user_agent": "chain", "intensity_step": 15}
    RunStore.create_or_resume(tmp_path / "r", "emoharbor", old, "oldhash").close()
    with pytest.raises(EmoharborError, match="started before the simulated user's settings moved into the user_agent"):
        asyncio.run(run_evaluation(RunConfig(), tmp_path / "r", progress=False))


def test_a_judge_form_of_ones_own_is_a_module_named_in_a_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, registry: None
) -> None:
    (tmp_path / "my_judges.py").write_text(OWN_KIND)
    (tmp_path / "supporter_only.txt").write_text(OWN_KIND_PROMPT)
    card = {"name": "supporter_view", "kind": "my_judges:supporter_only", "evidence": False, "max_tokens": 200}
    (tmp_path / "card.yaml").write_text(yaml.safe_dump(card))  # no prompt, no rubric: the kind's
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_judges", raising=False)
    try:
        loaded = load_card(str(tmp_path / "card.yaml"))
        assert (loaded.prompt, loaded.rubric) == (str(tmp_path / "supporter_only.txt"), "builtin:support10")
        with FakeOpenAIServer() as srv:
            cfg = write_run(tmp_path / "c.yaml", srv.base_url, "rules", HEARD)
            config = yaml.safe_load(cfg.read_text())
            cfg.write_text(yaml.safe_dump({**config, "judges": [str(tmp_path / "card.yaml")]}))
            code, _, err = run_main(["run", str(cfg), "--run-dir", str(tmp_path / "r"), "--quiet"], capsys)
            shown = [b["messages"][0]["content"] for b in srv.bodies]
        assert code == 0, err
        _, convs = stored(tmp_path / "r")
        assert len(convs) == 2 and len(shown) == 2  # the rules user calls no model: every request is the judge's
        for conv in convs:  # each judge was shown the supporter's turns, and none of the seeker's
            turns = conv["turns"]  # type: ignore[index]
            asked = next(s for s in shown if turns[1]["text"] in s)  # type: ignore[index]
            assert asked.startswith("Read only what a supporter said")
            assert all(t["text"] not in asked for t in turns if t["speaker"] == "user")  # type: ignore[attr-defined]
        code, out, err = run_main(["leaderboard", str(tmp_path / "r"), "--judge", "supporter_view:fake",
                                   "--format", "json"], capsys)  # fmt: skip
        assert code == 0, err
        rows = json.loads(out)["rows"]
        assert [(r["supporter"], r["scored"]) for r in rows] == [("scripted", 2)]
        store = RunStore.open_existing(tmp_path / "r")
        try:  # its scores are the leaderboard's
            scores = [d["scores"] for _, d in store.items("assessment") if d["judge"] == "supporter_view:fake"]
        finally:
            store.close()
        for key, cell in rows[0]["dimensions"].items():
            assert cell["mean"] == pytest.approx(sum(s[key] for s in scores) / 2)
    finally:
        sys.modules.pop("my_judges", None)


def test_a_card_of_a_kind_that_rates_replies_is_refused_by_a_run() -> None:
    cfg = RunConfig.model_validate({"judges": ["third_party_reply"]})  # read back from a store: no file opened
    with pytest.raises(ConfigError, match="judge card third_party_reply: a judge of one reply, not of a conversation"):
        Plan.of(cfg)  # the run's plan loads the cards and asks their kinds
    with pytest.raises(ConfigError, match="judge form 'oracle': no such judge form"):
        judge_forms.judge_form("oracle")
    with pytest.raises(ConfigError, match="cannot import no_such_module"):
        judge_forms.judge_form("no_such_module:oracle")


def test_a_name_registered_twice_is_refused_naming_both_modules() -> None:
    from emoharbor import kinds
    from emoharbor.assess.judge_forms import judge_form, register_judge_form
    from emoharbor.errors import ConfigError
    from emoharbor.simulate.agents import register_agent, user_agent

    chain = user_agent("chain")  # the built-in modules register theirs first
    with pytest.raises(ConfigError, match=r"simulated user 'chain' is registered twice: by emoharbor\.simulate\."
                       r"chain_user and by test_plugins"):  # fmt: skip
        register_agent("chain", RulesSettings, lambda model, profile, s: RulesUser(profile, s))
    assert user_agent("chain") is chain  # the first stands
    reply = judge_form("reply")
    with pytest.raises(ConfigError, match=r"judge form 'reply' is registered twice: by emoharbor\.assess\."):
        register_judge_form(reply)
    seekers = kinds.of("seekers")

    class Impostor(kinds.RunKind):
        name = "seekers"
        title = "not the seekers"

    # a run kind of one's own is named after its module (module:NAME), so it cannot take a built-in kind's name
    with pytest.raises(ConfigError, match=r"run kind 'seekers' of module test_plugins: a kind of your own is named "
                       r"MODULE:NAME"):  # fmt: skip
        kinds.register(Impostor())
    assert kinds.of("seekers") is seekers
    # the same module registering again (a reload) replaces its own entry
    register_agent("twice_here", RulesSettings, lambda model, profile, s: RulesUser(profile, s))
    register_agent("twice_here", RulesSettings, lambda model, profile, s: RulesUser(profile, s))


def test_a_judge_form_written_before_the_rename_still_imports_its_old_names() -> None:
    from emoharbor.assess import judge_kinds

    assert judge_kinds.register_judge_kind is judge_forms.register_judge_form
    assert judge_kinds.ConversationKind is judge_forms.ConversationForm
    assert judge_kinds.judge_kind("reply") is judge_forms.judge_form("reply")
