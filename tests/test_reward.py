"""The simulated user's reward: its formula, penalties, unscored and failed reactions, contexts from every
source and the guard, the TRL reward function, and `emoharbor reward` on a file of replies."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_main
from emoharbor.data.esconv import load_esconv
from emoharbor.data.selection import spread
from emoharbor.evolve.guard import EvalGuard
from emoharbor.heart.config import HistorySource
from emoharbor.models.base import ModelCallError
from emoharbor.profiles.loader import builtin_profiles
from emoharbor.reward import RewardContext, RewardSettings, UserReward, UserRewardFunc, tally
from emoharbor.reward.context import esconv_contexts, heart_contexts, load_heart_histories, openings
from emoharbor.reward.penalties import penalties
from emoharbor.simulate.agents import default_user
from emoharbor.simulate.conversation import Turn
from reward_helpers import scripted_user

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def context(text: str = "I lost my job last week and I can't stop worrying about rent.") -> RewardContext:
    p = builtin_profiles()[0]
    return RewardContext("c1", "test", p, [Turn(speaker="user", text=text)], 70, 40, 0, "c1")


def score(model: Any, reply: str, settings: RewardSettings | None = None) -> Any:
    return asyncio.run(UserReward(model, settings).score(context(), reply))


def test_the_reward_is_the_documented_function_of_the_reaction() -> None:
    good = score(scripted_user(), "That sounds frightening. What worries you most about the rent?")
    assert good.status == "ok"
    assert (good.relief, good.trust, good.fit) == (1.0, 1.0, 1.0)
    assert good.reward == pytest.approx(0.5 + 0.3 + 0.2)
    poor = score(scripted_user(), "Everyone loses jobs. Just apply to more places.")
    assert (poor.relief, poor.trust, poor.fit) == (pytest.approx(-5 / 15), 0.0, -1.0)
    assert poor.reward == pytest.approx(0.5 * -5 / 15 - 0.2)
    weights = RewardSettings(relief=1.0, trust=0.0, fit=0.0)
    assert score(scripted_user(), "What worries you most?", weights).reward == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("reply", "hit"),
    [
        ("Seeker: I feel so alone with all of this.", ["broke_character", "labels"]),
        ("As an AI language model, I cannot feel, but I hear you.", ["broke_character"]),
        ("Supporter: That sounds hard.", ["labels"]),
        ('{"reply": "That sounds hard."}', ["json_or_code"]),
        ("I lost my job last week and I can't stop worrying about rent.", ["broke_character", "repeats_context"]),
        (" ".join(["word"] * 130), ["too_long"]),
        ("That sounds really hard. What has the week been like?", []),
    ],
)
def test_penalties(reply: str, hit: list[str]) -> None:
    assert penalties(reply, context().texts(), RewardSettings()) == hit


def test_a_penalty_is_subtracted_and_counted() -> None:
    s = score(scripted_user(), "Supporter: What worries you most?")
    assert s.penalties == ["labels"]
    assert s.reward == pytest.approx(1.0 - 1.0)
    empty = score(scripted_user(), "   ")
    assert (empty.status, empty.reward, empty.penalties) == ("ok", -1.0, ["empty"])


def test_a_reaction_that_does_not_parse_gives_no_reward() -> None:
    s = score(scripted_user(garbage="I feel fine I guess"), "What worries you most?")
    assert s.status == "unscored"
    assert s.reward is None
    assert "parse_failure:feel" in s.error


def test_a_failed_model_call_gives_no_reward() -> None:
    class Down:
        name = "down"

        async def chat(self, *a: Any, **k: Any) -> Any:
            raise ModelCallError("connection refused")

        async def aclose(self) -> None:
            return None

    s = score(Down(), "What worries you most?")
    assert (s.status, s.reward) == ("error", None)
    assert "connection refused" in s.error


def test_many_replies_are_scored_concurrently_and_tallied() -> None:
    user = scripted_user()
    inner, at_once, most = user.chat, [0], [0]

    async def chat(messages: Any, **kw: Any) -> Any:  # counts the calls in flight together
        at_once[0] += 1
        most[0] = max(most[0], at_once[0])
        await asyncio.sleep(0.01)
        try:
            return await inner(messages, **kw)
        finally:
            at_once[0] -= 1

    user.chat = chat  # type: ignore[method-assign]
    ctxs = [replace(context(), id=f"c{i}") for i in range(8)]
    items = [(c, r) for c in ctxs for r in ("What worries you most?", "Just relax.", "")][:12]  # 4 contexts
    scored = asyncio.run(UserReward(user, RewardSettings(concurrency=6)).score_many(items))
    assert most[0] == 4  # one context at a time per worker: 4 contexts, 4 at once (the setting allows 6)
    order: list[str] = []
    asyncio.run(UserReward(scripted_user(), RewardSettings(concurrency=1)).score_many(
        items, on_scored=lambda i, _: order.append(items[i][0].id)))  # fmt: skip
    assert order == [c.id for c, _ in items]  # a context's replies one after another, in the order given
    t = tally(scored)
    assert (t["replies"], t["ok"], t["unscored"], t["error"]) == (12, 12, 0, 0)
    assert t["penalties"] == {"empty": 4}


def test_the_trl_reward_function_scores_completions_and_logs_them(tmp_path: Path) -> None:
    log = tmp_path / "rewards.jsonl"
    fn = UserRewardFunc(scripted_user(), log=log)
    metrics: dict[str, float] = {}
    ctx = context().to_json()
    completions = [[{"role": "assistant", "content": "What worries you most?"}], [{"role": "assistant", "content": ""}]]

    class State:
        global_step = 3

    out = asyncio.run(fn(prompts=[[], []], completions=completions, context=[ctx, ctx], trainer_state=State(),
                         log_metric=metrics.__setitem__))  # fmt: skip
    assert out == [pytest.approx(1.0), -1.0]
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["step"] for r in rows] == [4, 4]
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert metrics["penalty/empty"] == pytest.approx(0.5) and metrics["reward_unscored"] == pytest.approx(0.0)
    assert fn.totals["ok"] == 2 and fn.totals["penalty:empty"] == 1


def test_trl_sees_an_unscored_reaction_as_none() -> None:
    fn = UserRewardFunc(scripted_user(garbage="?"))
    out = asyncio.run(fn(prompts=[[]], completions=["What worries you most?"], context=[context().to_json()]))
    assert out == [None]


def test_openings_are_written_by_the_simulated_user() -> None:
    profiles = list(builtin_profiles()[:3])
    got, failed = asyncio.run(openings(profiles, scripted_user(), seed=0, settings=default_user()))
    assert failed == 0
    assert [c.id for c in got] == [f"open:{p.id}" for p in profiles]
    assert all(c.turns[-1].speaker == "user" and c.intensity == c.profile.emotional_state.intensity for c in got)


def test_contexts_from_esconv_and_heart_end_on_the_seeker_and_the_guard_holds_out() -> None:
    esconv, heart = SHARED / "esconv" / "valid.jsonl", SHARED / "heart" / "dialogues_regular.json"
    if not esconv.is_file() or not heart.is_file():
        pytest.skip("the shared data is not here")
    es = esconv_contexts(load_esconv(esconv), initial_trust=40)
    hs = heart_contexts(load_heart_histories(str(heart)), initial_trust=40)
    assert es and hs
    assert all(c.turns[-1].speaker == "user" for c in es + hs)
    assert len(hs) == 279  # the one history that ends on the supporter has no seeker turn to answer
    assert all(c.messages("be kind")[-1]["role"] == "user" for c in es[:50] + hs[:50])
    guard = EvalGuard(history_ids={es[0].history})
    assert guard.blocks_record(es[0].guard_record())
    assert not guard.blocks_record(hs[0].guard_record())
    # a history source names its subset and limits, as HEART's config does (the file name decides nothing)
    adv = load_heart_histories(HistorySource(path=str(heart), subset="adversarial", first=3))
    assert [h.id for h in adv] == ["adversarial:0", "adversarial:1", "adversarial:2"]
    picked = spread(es, 10, 0, lambda c: c.history)
    assert len({c.history for c in picked}) == 10  # one per dialogue while there are dialogues enough


def test_reward_command_scores_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    f = tmp_path / "replies.jsonl"
    turns = [{"speaker": "user", "text": "My sister stopped talking to me."}]
    f.write_text(json.dumps({"id": "a", "profile": "builtin:p002-aiko-burnout", "turns": turns,
                             "replies": ["What happened between you?", "Move on."]}) + "\n")  # fmt: skip
    monkeypatch.setattr("emoharbor.models.pool.ScriptedModel", lambda replies: scripted_user())  # --user scripted
    out = tmp_path / "rewards.jsonl"
    code, stdout, stderr = run_main(["reward", str(f), "--out", str(out), "--user", "scripted"], capsys)
    assert code == 0, stderr
    assert "rewarded 2 replies of 1 contexts: 2 scored, 0 unscored" in stdout
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["reward"] for x in rows] == [pytest.approx(1.0), pytest.approx(0.5 * -5 / 15 - 0.2)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"profile": "builtin:p002-aiko-burnout", "turns": [{"speaker": "user", "text": "hi"}]}, "field 'replies'"),
        ({"profile": "builtin:nobody", "turns": [{"speaker": "user", "text": "hi"}], "reply": "x"}, "field 'profile'"),
        ({"profile": "builtin:p002-aiko-burnout", "turns": [{"speaker": "supporter", "text": "hi"}], "reply": "x"},
         "the last turn must be the user's"),
        ({"profile": "builtin:p002-aiko-burnout", "turns": [{"speaker": "me", "text": "hi"}], "reply": "x"},
         "field 'turns.0'"),
        ({"profile": "builtin:p002-aiko-burnout", "turns": [{"speaker": "user", "text": "hi"}], "reply": "x",
          "trust": 900}, "field 'trust'"),
    ],
)  # fmt: skip
def test_reward_command_names_the_line_and_field_of_bad_input(tmp_path: Path, line: dict[str, Any], message: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    f = tmp_path / "replies.jsonl"
    f.write_text(json.dumps(line) + "\n")
    out = tmp_path / "rewards.jsonl"
    code, _, stderr = run_main(["reward", str(f), "--out", str(out), "--user", "scripted"], capsys)
    assert code != 0
    assert f"{f}: line 1: " in stderr and message in stderr, stderr
    assert "Traceback" not in stderr
    assert not out.exists()


async def test_contexts_from_a_simulated_talk_carry_the_state_the_user_was_in(tmp_path: Path) -> None:
    from emoharbor.reward.context import run_contexts
    from emoharbor.simulate.conversation import Conversation
    from emoharbor.store.run_store import RunStore
    from emoharbor.testing.fake_server import FakeOpenAIServer
    from report_helpers import small_run

    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv)
    got = run_contexts(run)
    store = RunStore.open_existing(run)
    convs = [Conversation.model_validate(d) for _, d in store.items("conversation")]
    store.close()
    assert len(got) == sum(sum(t.speaker == "user" for t in c.turns) for c in convs)  # every user turn
    for ctx in got:
        conv = next(c for c in convs if c.id == ctx.history)
        assert ctx.turns[-1].speaker == "user" and ctx.turns == conv.turns[: len(ctx.turns)]
        state = conv.states[ctx.turn]  # after ctx.turn supporter replies
        assert (ctx.intensity, ctx.trust) == (state.intensity, state.trust)


async def test_a_runs_talks_read_its_stored_profiles_and_an_older_run_says_it_resolves_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from emoharbor.profiles import loader
    from emoharbor.reward.context import run_talks
    from emoharbor.testing.fake_server import FakeOpenAIServer
    from report_helpers import small_run

    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv)
    resolved = run_talks(run)

    def no_files(specs: list[str]) -> list[Any]:
        raise AssertionError(f"the user's files were read: {specs}")

    monkeypatch.setattr(loader, "resolve_profiles", no_files)
    assert run_talks(run) == resolved and resolved  # the stored profiles, not the user's files
    assert "note:" not in capsys.readouterr().err
    with sqlite3.connect(run / "run.sqlite") as db:  # as a run made before runs kept their profiles
        db.execute("DELETE FROM results WHERE kind='profile'")
    monkeypatch.undo()
    assert run_talks(run) == resolved  # the builtin bank is unchanged since
    err = capsys.readouterr().err
    assert f"note: {run} was made before runs kept their profiles" in err and "builtin:" in err
