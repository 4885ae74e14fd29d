"""The sensitivity suite: its cases, the rule-made bad replies, a run with scripted scorers (resumed after a
stop), the table's arithmetic and the command line."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_main
from emoharbor.data.esconv import load_esconv
from emoharbor.errors import ConfigError
from emoharbor.models.base import Message
from emoharbor.models.pool import ModelPool
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.spec import ModelSpec
from emoharbor.reward.penalties import penalties
from emoharbor.reward.settings import RewardSettings
from emoharbor.sensitivity.analysis import outcomes_of, sensitivity_table
from emoharbor.sensitivity.bad import MAKERS, bad_replies, suite_version
from emoharbor.sensitivity.cases import Pool, esconv_cases, heart_cases
from emoharbor.sensitivity.names import ALL
from emoharbor.sensitivity.render import render_sensitivity
from emoharbor.sensitivity.run import SensitivityOptions, run_sensitivity
from emoharbor.simulate.conversation import words
from emoharbor.store.run_store import RunStore
from evolve_helpers import esconv_file
from reward_helpers import digit

HEART = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "heart" / "dialogues_regular.json"


@pytest.fixture(scope="module")
def valid() -> Path:
    return esconv_file("valid.jsonl")


def test_esconv_cases_are_real_contexts_cut_before_a_real_reply(valid: Path) -> None:
    pool = Pool()
    cases = esconv_cases(valid, 40, pool)
    records = {d.id: d for d in load_esconv(valid)}
    assert len(cases) >= 24
    for c in cases:
        d = records[c.context.history]
        assert (d.survey["empathy"] or 0) >= 4  # support the seeker valued
        assert c.context.turns[-1].speaker == "user" and words(c.context.turns[-1].text) >= 8
        assert sum(t.speaker == "user" for t in c.context.turns) >= 3
        merged = [t.text for t in d.merged_turns()]
        i = len(c.context.turns)
        assert merged[:i] == [t.text for t in c.context.turns] and merged[i] == c.real  # the next real message
    assert len(pool.replies) > len(cases)  # every loaded talk lends texts, chosen or not


def test_bad_replies_are_deterministic_and_of_every_kind(valid: Path) -> None:
    pool = Pool()
    cases = esconv_cases(valid, 40, pool)[:24]
    made = [bad_replies(c, pool, list(MAKERS)) for c in cases]
    assert made == [bad_replies(c, pool, list(MAKERS)) for c in cases]  # rules, no model, no randomness left
    s = RewardSettings()
    for c, bad in zip(cases, made, strict=True):
        assert set(bad) == set(MAKERS)
        assert all(t.strip() != c.real.strip() for t in bad.values())
        for k in ("generic_long", "dismissive_long"):  # padded to the real reply's length
            assert words(bad[k]) >= words(c.real)
        assert bad["repeats"] == next(t.text for t in reversed(c.context.turns) if t.speaker == "supporter")
        assert bad["off_target"] not in [t.text for t in c.context.turns]
        assert "repeats_context" in penalties(bad["repeats"], c.context.texts(), s)
        assert bad["wrong_facts"].startswith("I'm so sorry to hear about ")  # another story's problem first
        assert bad["ignores_last"].startswith("Earlier you said:")
    # the seeker's own words in the real reply are swapped for another seeker's where there are any
    opening = len("I'm so sorry to hear about ")
    swapped = [b["wrong_facts"].split(". ", 1)[-1] != c.real for c, b in zip(cases, made, strict=True)]
    assert sum(swapped) >= 5 and opening > 0
    # the off-target reply is another talk's, about another problem, and near the real reply in length
    lengths = [abs(words(b["off_target"]) - words(c.real)) for c, b in zip(cases, made, strict=True)]
    assert sorted(lengths)[len(lengths) // 2] <= 3
    kinds = {c.id: c.problem for c in cases}
    by_text = {t: (d, p) for d, p, t in pool.replies}
    for c, b in zip(cases, made, strict=True):
        dialog, problem = by_text[b["off_target"]]
        assert dialog != c.context.history and problem.lower() != kinds[c.id].lower()
    # role breaks speak as the seeker or as an AI, and the reward's rules catch the AI
    ai = [b["role_break"] for b in made if "AI" in b["role_break"]]
    assert ai and all("broke_character" in penalties(t, [], s) for t in ai)
    assert any("AI" not in b["role_break"] for b in made)
    assert suite_version().startswith("bad-replies-")


def test_heart_cases_have_the_human_reply() -> None:
    if not HEART.is_file():
        pytest.skip(f"the shared HEART data is not here ({HEART})")
    pool = Pool()
    cases = heart_cases(HEART.resolve(), "regular", 40, pool)
    assert len(cases) > 100
    assert all(c.real and c.context.turns[-1].speaker == "user" for c in cases)
    # the subset is the option's, not the file name's: the same file read as adversarial histories
    again = heart_cases(HEART.resolve(), "adversarial", 40, Pool())
    assert [c.id for c in cases][:2] == ["heart:regular:0", "heart:regular:1"]
    assert [c.id for c in again] == [c.id.replace(":regular:", ":adversarial:") for c in cases]


# -- a run with scripted scorers -----------------------------------------------------------------------


def scorer_model(real_texts: set[str], calls: list[str]) -> ScriptedModel:
    """A scripted model that plays every scorer: the user and the reply card like the real replies (and
    give the rest a low score), the pairwise judge picks the real reply when it is shown first only (a
    position bias: half the pairs split)."""

    def latest(messages: list[Message]) -> str:
        text = messages[-1]["content"]
        m = re.search(r"next message, the one you rate:\nSupporter: (.*?)\n\n", text, re.S)
        if m:
            return m.group(1).strip()
        return messages[0]["content"].rsplit("Supporter:", 1)[-1].strip()

    def reply(messages: list[Message], schema: dict[str, Any] | None) -> str:
        props = (schema or {}).get("properties", {})
        calls.append(next(iter(props), ""))
        if "overall" in props:  # the pairwise judge
            first = props["overall"]["properties"]["winner"]["enum"][0]
            return json.dumps({"overall": {"rationale": "r", "winner": first, "strength": 2}})
        good = latest(messages) in real_texts
        if "helpful" in props:
            return json.dumps({"helpful": 4 if good else 2})
        if "fit" in props:
            return json.dumps({"understood": "u", "needs_met": [], "needs_missed": [], "about_me": good,
                               "disliked": not good, "fit": "good" if good else "poor",
                               "crisis_referral": False})  # fmt: skip
        if "better" in props:
            return json.dumps({"thought": "t", "better": digit(10 if good else -5, 15), "trust": 4})
        raise AssertionError(f"unexpected schema {list(props)}")

    return ScriptedModel(reply)


def run_with(tmp: Path, valid: Path, monkeypatch: pytest.MonkeyPatch, *, limit: int = 3,
             stop_after: int | None = None) -> tuple[list[str], Any]:  # fmt: skip
    cases = esconv_cases(valid, 40, Pool())[:limit]
    calls: list[str] = []
    model = scorer_model({c.real for c in cases}, calls)
    if stop_after is not None:
        inner = model._replies
        assert callable(inner)

        def stopping(messages: list[Message], schema: dict[str, Any] | None) -> str:
            if len(calls) >= stop_after:
                raise KeyboardInterrupt
            return inner(messages, schema)

        model._replies = stopping

    async def build(self: ModelPool, spec: ModelSpec) -> Any:
        return model

    monkeypatch.setattr(ModelPool, "_build", build)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp.parent / "cache"))  # where its calibration record goes
    opts = SensitivityOptions(esconv=[valid], limit=limit, user=ModelSpec(model="scripted"),
                              judge=ModelSpec(model="scripted"), scoring="argmax")  # fmt: skip
    summary = asyncio.run(run_sensitivity(opts, tmp, progress=False, cache_path=None))
    return calls, summary


def test_a_run_scores_every_reply_and_the_table_counts_right(
    tmp_path: Path, valid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, summary = run_with(tmp_path / "s", valid, monkeypatch)
    assert summary.lead == "3 cases, " and summary.units == 3 * (11 * 2 + 20) and summary.errors == 0
    # per case: the user (2 calls) and the reply card on 11 replies, the pairwise judge on 10 pairs x 2 orders
    assert len(calls) == 3 * (11 * 3 + 20)
    store = RunStore.open_existing(tmp_path / "s")
    try:
        data = sensitivity_table(store, n_boot=200)
    finally:
        store.close()
    rows = {r["scorer"]: r for r in data["rows"]}
    assert data["cases"] == 3 and data["kinds"] == list(MAKERS)
    for name in ("user reward", "user reaction", "user fit", "third_party_reply+argmax:scripted (written)"):
        assert rows[name][ALL]["share"] == pytest.approx(1.0), name  # the scripted scorers like the real reply
        assert rows[name]["tie_rate"] == pytest.approx(0.0)
    # the pairwise judge always picks the reply shown first: every pair splits, a tie
    pair = rows["heart_pairwise:scripted"]  # its card is argmax already: the name stays
    assert pair["pairwise"] and pair[ALL]["share"] == pytest.approx(0.5) and pair["tie_rate"] == pytest.approx(1.0)
    # no expected readouts from a scripted backend: the rows are not made up
    assert "user reward (expected)" not in rows
    # the word count: the share is worked out by hand from the stored replies
    store = RunStore.open_existing(tmp_path / "s")
    try:
        cases = {k[0]: d for k, d in store.items("case")}
    finally:
        store.close()
    for kind in ("generic", "generic_long"):
        want = []
        for d in cases.values():
            a, b = len(d["replies"]["real"].split()), len(d["replies"][kind].split())
            want.append(1.0 if a > b else 0.0 if a < b else 0.5)
        assert rows["words"]["cells"][kind]["share"] == pytest.approx(sum(want) / len(want))
    assert rows["words"]["cells"]["generic_long"]["share"] <= 0.5  # padded: length alone does not pass it
    assert rows["user reward"]["cells"]["role_break"]["n"] == 3
    assert rows["user reward"]["usage"]["calls"] == 3 * 11 * 2


def test_a_stopped_run_resumes_without_redoing_work(
    tmp_path: Path, valid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, _ = run_with(tmp_path / "whole", valid, monkeypatch, limit=2)
    with pytest.raises(BaseException):  # noqa: B017 - the scripted model interrupts the run part-way
        run_with(tmp_path / "part", valid, monkeypatch, limit=2, stop_after=60)
    store = RunStore.open_existing(tmp_path / "part")
    try:
        kept = len(store.keys("score")) + len(store.keys("pair"))
    finally:
        store.close()
    assert 0 < kept < 2 * 11 * 2 + 2 * 20
    store = RunStore.open_existing(tmp_path / "part")
    try:  # a stopped run's table holds only the cases every scorer finished: all stand on the same items
        data = sensitivity_table(store, n_boot=50)
    finally:
        store.close()
    assert data["cases"] + data["unfinished"] == 2 and data["unfinished"] >= 1
    # the stopped run left the calibration record of the case it finished (a case is 53 calls here)
    records = [json.loads(f.read_text()) for f in (tmp_path / "cache" / "sensitivity").glob("*.json")]
    part = [r for r in records if r["run"] == str((tmp_path / "part").resolve())]
    assert len(part) == 1 and part[0]["cases"] == data["cases"] == 1
    assert all(c["n"] <= data["cases"] for r in data["rows"] for c in r["cells"].values())
    rest, summary = run_with(tmp_path / "part", valid, monkeypatch, limit=2)
    assert summary.done_now == summary.units - kept
    assert len(rest) < len(whole)  # only what was missing (a unit cut mid-way is asked again)

    def table(folder: Path) -> dict[str, Any]:
        store = RunStore.open_existing(folder)
        try:
            return {r["scorer"]: (r[ALL]["share"], r["pairs"]) for r in sensitivity_table(store, n_boot=50)["rows"]}
        finally:
            store.close()

    assert table(tmp_path / "part") == table(tmp_path / "whole")


def test_outcomes_count_ties_half_and_leave_unscored_out() -> None:
    values = {("a", "real"): 2.0, ("a", "generic"): 1.0, ("b", "real"): 1.0, ("b", "generic"): 1.0,
              ("c", "real"): None, ("c", "generic"): 3.0, ("d", "real"): 0.0}  # fmt: skip
    assert outcomes_of(values, "generic") == {"a": 1.0, "b": 0.5, "c": None}


def test_options_are_checked(valid: Path) -> None:
    with pytest.raises(ConfigError, match="needs cases"):
        SensitivityOptions()
    with pytest.raises(ConfigError, match="no such bad-reply maker"):
        SensitivityOptions(esconv=[valid], bad=["rude"])
    with pytest.raises(ConfigError, match="rates whole conversations"):
        SensitivityOptions(esconv=[valid], judges=["third_party"]).make_judges()
    with pytest.raises(ConfigError, match="no token log-probabilities"):
        SensitivityOptions(esconv=[valid], judge=ModelSpec(model="scripted")).make_judges()
    # adversarial histories alone are cases enough; the record names them only when given (a run made before
    # the option resumes)
    assert SensitivityOptions(heart_adversarial=[valid]).resolved()["heart_adversarial"] == [str(valid.resolve())]
    assert "heart_adversarial" not in SensitivityOptions(esconv=[valid]).resolved()


def scripted_pool(valid: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model of the command is the scripted scorer of the first two cases; the cache in ``tmp_path``."""
    cases = esconv_cases(valid, 40, Pool())[:2]
    model = scorer_model({c.real for c in cases}, [])

    async def build(self: ModelPool, spec: ModelSpec) -> Any:
        return model

    monkeypatch.setattr(ModelPool, "_build", build)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def test_the_command_prints_every_format(tmp_path: Path, valid: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    scripted_pool(valid, tmp_path, monkeypatch)
    base = ["sensitivity", "--esconv", str(valid), "--limit", "2", "--model", "scripted", "--judge",
            "third_party_reply", "--scoring", "argmax", "--bad", "generic", "--bad", "repeats",
            "--run-dir", str(tmp_path / "r"), "--quiet"]  # fmt: skip
    code, out, err = run_main(base, capsys)
    assert code == 0, err
    assert "Sensitivity: 2 cases" in out and "user reward" in out and "generic" in out
    code, out, _ = run_main([*base, "--format", "json"], capsys)
    data = json.loads(out)
    assert data["kinds"] == ["generic", "repeats"] and {r["scorer"] for r in data["rows"]} >= {"words", "user reward"}
    code, out, _ = run_main([*base, "--format", "csv"], capsys)
    assert out.splitlines()[0].startswith("scorer,kind,share,lo,hi,n,ties,unscored")
    code, out, _ = run_main([*base, "--format", "md"], capsys)
    assert "| scorer |" in out
    assert "n too small" in render_sensitivity(data, "text")  # 2 cases: no interval is shown
    code, _, err = run_main([*base[:-3], "--bad", "rude"], capsys)
    assert code != 0 and "no such bad-reply maker" in err


def test_judge_none_scores_the_simulated_user_alone(tmp_path: Path, valid: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    scripted_pool(valid, tmp_path, monkeypatch)
    base = ["sensitivity", "--esconv", str(valid), "--limit", "2", "--bad", "generic", "--judge", "none",
            "--run-dir", str(tmp_path / "r"), "--quiet", "--format", "json"]  # fmt: skip
    code, out, err = run_main([*base, "--model", "scripted"], capsys)
    assert code == 0, err
    scorers = {r["scorer"] for r in json.loads(out)["rows"]}
    assert "user reward" in scorers and not any("third_party_reply" in s or "heart" in s for s in scorers)
    code, _, err = run_main([*base, "--model", "none", "--judge-model", "scripted"], capsys)
    assert code == 2 and "no scorer: with --model none and --judge none nothing is left to score" in err


async def test_cases_from_a_run_folder_are_its_supporters_next_turns(tmp_path: Path) -> None:
    from emoharbor.sensitivity.cases import run_cases
    from emoharbor.simulate.conversation import Conversation
    from emoharbor.testing.fake_server import FakeOpenAIServer
    from report_helpers import small_run

    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv)
    pool = Pool()
    cases = run_cases(run, pool)
    store = RunStore.open_existing(run)
    try:
        convs = {c.id: c for c in (Conversation.model_validate(d) for _, d in store.items("conversation"))}
    finally:
        store.close()
    assert cases and len(cases) <= len(convs)  # one cut per talk, at its second user turn or later
    for c in cases:
        conv = convs[c.context.history]
        n = len(c.context.turns)
        assert c.source == "run" and c.context.turn >= 1 and c.context.turns == conv.turns[:n]
        assert c.real == conv.turns[n].text and conv.turns[n].speaker == "supporter"
    assert pool.replies  # the run's other talks lend the off-target replies
