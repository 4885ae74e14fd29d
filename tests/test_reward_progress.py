"""`emoharbor reward` shows its progress and keeps its work: ``score_many`` calls back as each reply is done,
the command appends each row as it comes, and a stopped run resumes in the same --out, scoring only the
replies it had not done, or refuses an --out made with other settings or another user model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_main
from emoharbor.models.scripted import ScriptedModel
from emoharbor.profiles.loader import builtin_profiles
from emoharbor.reward import RewardContext, RewardSettings, Scored, UserReward
from emoharbor.simulate.conversation import Turn
from reward_helpers import scripted_user

REPLIES = {"a": ["What happened between you?", "Move on.", "That sounds lonely. What do you miss most?"],
           "b": ["How have you been sleeping?", "Work harder.", "Which part of the week was worst?"]}  # fmt: skip
ALL = [r for rs in REPLIES.values() for r in rs]
FLOATS = ("reward", "relief", "trust", "fit")
Cap = pytest.CaptureFixture[str]


def reacted(user: ScriptedModel) -> set[str]:
    """The replies the scripted user was asked about."""
    return {r for r in ALL if any(r in m[0]["content"] for m in user.calls)}


def replies_file(tmp_path: Path) -> Path:
    f = tmp_path / "replies.jsonl"
    lines = [{"id": cid, "profile": "builtin:p002-aiko-burnout", "replies": rs,
              "turns": [{"speaker": "user", "text": f"My sister stopped talking to me ({cid})."}]}
             for cid, rs in REPLIES.items()]  # fmt: skip
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return f


def reward(tmp_path: Path, out: Path, capsys: Cap, *more: str) -> tuple[int, str, str]:
    return run_main(["reward", str(replies_file(tmp_path)), "--out", str(out), "--user", "scripted", *more], capsys)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [{k: v for k, v in r.items() if k not in FLOATS} for r in got] == [
        {k: v for k, v in r.items() if k not in FLOATS} for r in want
    ]
    for g, w in zip(got, want, strict=True):
        for k in FLOATS:
            assert g[k] == (None if w[k] is None else pytest.approx(w[k])), (k, g, w)


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``use(model)``: ``--user scripted`` is that model."""

    def put(model: ScriptedModel) -> ScriptedModel:
        monkeypatch.setattr("emoharbor.models.pool.ScriptedModel", lambda replies: model)
        return model

    return put


@pytest.fixture
def reference(tmp_path: Path, use: Any, capsys: Cap) -> tuple[list[dict[str, Any]], int]:
    """An uninterrupted run's rows, and the calls it made per reply."""
    user = use(scripted_user())
    out = tmp_path / "reference.jsonl"
    code, _, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 0, stderr
    assert len(user.calls) % len(ALL) == 0
    return rows(out), len(user.calls) // len(ALL)


def context(cid: str) -> RewardContext:
    return RewardContext(cid, "test", builtin_profiles()[0], [Turn(speaker="user", text="I lost my job.")], 70, 40, 0,
                         cid)  # fmt: skip


def test_score_many_calls_back_as_each_reply_is_done_one_context_after_another() -> None:
    user = scripted_user()
    items = [(context(cid), r) for cid, rs in REPLIES.items() for r in rs]
    seen: list[tuple[int, Scored, int]] = []
    got = asyncio.run(UserReward(user, RewardSettings(concurrency=1)).score_many(
        items, on_scored=lambda i, s: seen.append((i, s, len(user.calls)))))  # fmt: skip
    assert [i for i, _, _ in seen] == [0, 1, 2, 3, 4, 5]  # a's replies in a row (one prefix), then b's
    assert all(s is got[i] for i, s, _ in seen)  # the reply's own result, every reply once
    per = len(user.calls) // len(items)
    assert [n for _, _, n in seen] == [per * k for k in range(1, len(items) + 1)]  # called as each is done


def test_score_many_calls_back_for_every_reply_when_many_run_at_once() -> None:
    items = [(context(cid), r) for cid, rs in REPLIES.items() for r in rs] * 3
    seen: list[int] = []
    got = asyncio.run(UserReward(scripted_user(), RewardSettings(concurrency=4)).score_many(
        items, on_scored=lambda i, s: seen.append(i)))  # fmt: skip
    assert sorted(seen) == list(range(len(items)))
    assert [s.reply for s in got] == [r for _, r in items]  # the result keeps the order given


def test_an_interrupted_run_resumes_with_only_the_missing_replies(
    tmp_path: Path, use: Any, reference: Any, capsys: Cap
) -> None:
    want, per = reference
    out = tmp_path / "rewards.jsonl"
    settings = tmp_path / "one_at_a_time.yaml"
    settings.write_text("concurrency: 1\n")  # the order is fixed: a1, a2, a3, b1, b2, b3

    def react(reply: str) -> tuple[str, int, int]:
        if "Work harder." in reply:  # b2: the fifth reply started
            raise KeyboardInterrupt
        return ("good", 15, 20) if "?" in reply else ("poor", -5, 0)

    use(scripted_user(react))
    code, _, stderr = reward(tmp_path, out, capsys, "--settings", str(settings), "--quiet")
    assert code == 130, stderr
    assert "interrupted" in stderr
    kept = rows(out)  # the four done before the stop, each written as it was done
    assert [r["reply"] for r in kept] == ALL[:4]

    user = use(scripted_user())
    code, stdout, stderr = reward(tmp_path, out, capsys, "--quiet")  # concurrency is no setting of the rewards
    assert code == 0, stderr
    assert f"resumed: 4 of 6 replies already scored in {out}" in stderr
    assert reacted(user) == {ALL[4], ALL[5]}
    assert len(user.calls) == 2 * per
    assert "rewarded 6 replies of 2 contexts: 6 scored" in stdout
    same_rows(rows(out), want)  # in the input's order, as an uninterrupted run wrote them
    assert not out.with_name(out.name + ".tmp").exists()

    again = use(scripted_user())
    code, stdout, stderr = reward(tmp_path, out, capsys)
    assert code == 0, stderr
    assert f"resumed: 6 of 6 replies already scored in {out}" in stderr
    assert again.calls == []
    same_rows(rows(out), want)


def test_a_killed_run_keeps_its_rows_and_redoes_the_errors(
    tmp_path: Path, use: Any, reference: Any, capsys: Cap
) -> None:
    want, per = reference
    out = tmp_path / "rewards.jsonl"
    failed = {**want[4], "status": "error", "reward": None, "relief": None, "trust": None, "fit": None,
              "error": "connection refused"}  # fmt: skip
    cut = json.dumps(want[2])[:40]  # the row being written when the run was killed
    out.write_text("".join(json.dumps(r) + "\n" for r in [want[3], want[0], failed]) + cut)
    user = use(scripted_user())
    code, _, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 0, stderr
    assert f"resumed: 2 of 6 replies already scored in {out}" in stderr
    assert reacted(user) == {ALL[1], ALL[2], ALL[4], ALL[5]}
    assert len(user.calls) == 4 * per
    same_rows(rows(out), want)


def test_an_unscored_row_is_kept(tmp_path: Path, use: Any, capsys: Cap) -> None:
    out = tmp_path / "rewards.jsonl"
    use(scripted_user(garbage="I feel fine I guess"))
    assert reward(tmp_path, out, capsys, "--quiet")[0] == 0
    first = rows(out)
    assert {r["status"] for r in first} == {"unscored"}
    user = use(scripted_user())
    code, stdout, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 0, stderr
    assert user.calls == []
    assert "0 scored, 6 unscored" in stdout
    assert rows(out) == first


def test_rows_of_a_changed_context_are_done_again(tmp_path: Path, use: Any, reference: Any, capsys: Cap) -> None:
    want, _ = reference
    out = tmp_path / "rewards.jsonl"
    stale = {**want[0], "context_hash": "0" * 16}  # context a as it was before its file was edited
    out.write_text("".join(json.dumps(r) + "\n" for r in [stale, *want[1:]]))
    user = use(scripted_user())
    code, _, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 0, stderr
    assert reacted(user) == {ALL[0]}
    same_rows(rows(out), want)


def test_an_out_made_with_other_settings_is_refused(tmp_path: Path, use: Any, reference: Any, capsys: Cap) -> None:
    want, _ = reference
    out = tmp_path / "rewards.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in want[:2]))
    before = out.read_text()
    settings = tmp_path / "weights.yaml"
    settings.write_text("relief: 0.6\n")
    user = use(scripted_user())
    code, _, stderr = reward(tmp_path, out, capsys, "--settings", str(settings), "--quiet")
    assert code == 2
    assert f"error: {out} holds rewards made with other reward settings" in stderr
    assert "give another --out" in stderr and "Traceback" not in stderr
    assert user.calls == [] and out.read_text() == before


def test_an_out_made_with_another_user_model_is_refused(tmp_path: Path, use: Any, reference: Any, capsys: Cap) -> None:
    want, _ = reference
    out = tmp_path / "rewards.jsonl"
    other = {"settings": want[0]["made_with"]["settings"], "user": "local:qwen1.5b", "user_spec": "f" * 16}
    out.write_text(json.dumps({**want[0], "made_with": other}) + "\n")
    before = out.read_text()
    user = use(scripted_user())
    code, _, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 2
    assert f"{out} holds rewards made with another user model (local:qwen1.5b; this run's is scripted)" in stderr
    assert user.calls == [] and out.read_text() == before


def test_an_out_that_does_not_say_what_made_it_is_refused(
    tmp_path: Path, use: Any, reference: Any, capsys: Cap
) -> None:
    want, _ = reference
    out = tmp_path / "rewards.jsonl"
    out.write_text(json.dumps({k: v for k, v in want[0].items() if k != "made_with"}) + "\n")  # an older row
    code, _, stderr = reward(tmp_path, out, capsys, "--quiet")
    assert code == 2
    assert f"{out}: line 1 is not a row of emoharbor reward that can be resumed" in stderr


def test_the_progress_bar_and_quiet(tmp_path: Path, use: Any, capsys: Cap) -> None:
    use(scripted_user())
    code, _, stderr = reward(tmp_path, tmp_path / "shown.jsonl", capsys)
    assert code == 0, stderr
    assert "reward: 100%" in stderr and "6/6" in stderr
    code, _, stderr = reward(tmp_path, tmp_path / "quiet.jsonl", capsys, "--quiet")
    assert code == 0, stderr
    assert "6/6" not in stderr and "%|" not in stderr
    assert rows(tmp_path / "quiet.jsonl") == rows(tmp_path / "shown.jsonl")
