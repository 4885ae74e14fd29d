"""``emoharbor ladder``: the figures of a scorer against a known order (shares, tau, resolution), the rungs (their
texts matched in length to the default rung's replies, the off-target rung's replies to another seeker), the run
end to end against the fake OpenAI server (a judge that knows the rungs orders them, tau 1; a judge that scores
at random does not), every format, the report, the export, the judges table, the record other runs' health
quotes, bad input as one line, and a run SIGKILLed mid-way resumed without losing or redoing a talk."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_helpers import emoharbor, killed_midway, run_main, written
from emoharbor import measurements
from emoharbor.assess.dimensions import keys as dimension_keys
from emoharbor.errors import ConfigError
from emoharbor.ladder import rungs as R
from emoharbor.ladder.analysis import empathy_share
from emoharbor.ladder.figures import ladder_figures, taus
from emoharbor.profiles.loader import resolve_profiles

RUNGS = list(R.BUILT_IN)
PROFILES = 6


def test_a_scorer_in_the_known_order_has_tau_1_and_resolves_the_closest_pair() -> None:
    scores = np.tile(np.array([5.0, 4.0, 3.0, 2.0, 1.0]), (8, 1))
    f = ladder_figures(scores, RUNGS, n_boot=200)
    assert f["tau"]["value"] == pytest.approx(1.0) and f["tau"]["lo"] == pytest.approx(1.0)
    assert all(p["value"] == pytest.approx(1.0) for p in f["pairs"]) and len(f["pairs"]) == 10
    assert f["resolution"] == {"above": "knows", "below": "default", "gap": 1}
    reversed_ = ladder_figures(scores[:, ::-1], RUNGS, n_boot=200)
    assert reversed_["tau"]["value"] == pytest.approx(-1.0) and reversed_["resolution"] is None


def test_ties_count_half_missing_scores_are_left_out_and_few_profiles_have_no_interval() -> None:
    tied = np.full((6, 5), 3.0)
    f = ladder_figures(tied, RUNGS, n_boot=100)
    assert f["tau"]["value"] == pytest.approx(0.0) and all(p["value"] == pytest.approx(0.5) for p in f["pairs"])
    holes = np.tile(np.array([5.0, 4.0, 3.0, 2.0, 1.0]), (6, 1))
    holes[0, 4] = holes[1, :] = np.nan  # one missing score; one profile with none
    g = ladder_figures(holes, RUNGS, n_boot=100)
    assert g["profiles"] == 5 and {p["n"] for p in g["pairs"]} == {4, 5}
    assert taus(holes)[0] == pytest.approx(1.0) and np.isnan(taus(holes)[1])
    few = ladder_figures(holes[:4], RUNGS, n_boot=100)
    assert few["tau"]["lo"] is None and few["resolution"] is None


def test_a_scorer_at_random_has_intervals_around_the_middle() -> None:
    rng = np.random.default_rng(3)
    f = ladder_figures(rng.integers(1, 6, size=(40, 5)).astype(float), RUNGS, n_boot=500)
    assert f["tau"]["lo"] < 0 < f["tau"]["hi"]
    assert sum(p["lo"] < 0.5 < p["hi"] for p in f["pairs"]) >= 9


def test_scripted_rungs_match_the_default_replies_length_and_off_target_replays_another_seekers_talk() -> None:
    import asyncio

    from emoharbor.simulate.conversation import Turn

    reference = ["You sound exhausted after nineteen years there, Darnell; what hit hardest this week?"] * 2
    donor = ["Losing your grandmother so suddenly must leave a huge hole."]
    turns = [Turn(speaker="user", text="hi")]
    for rung in ("generic", "dismissive"):
        text, _ = asyncio.run(R.ScriptedSupporter(rung, "p1", reference).reply(turns, seed=0))
        longest = max(R.words(t) for t in R.texts()[rung])
        assert abs(R.words(text) - R.words(reference[0])) <= longest / 2 + 1  # the nearest a sum of its texts gets
        assert "Darnell" not in text and "nineteen" not in text
    off, _ = asyncio.run(R.ScriptedSupporter("off_target", "p1", reference, donor).reply(turns, seed=0))
    assert off == donor[0]
    with pytest.raises(ValueError, match="default rung's replies"):
        R.ScriptedSupporter("off_target", "p1", reference, None)
    profiles = resolve_profiles(["builtin:p00*"])
    d = R.donors(profiles)
    assert all(d[p.id] != p.id for p in profiles)
    by = {p.id: p for p in profiles}
    assert all(by[d[p.id]].situation.problem_type != p.situation.problem_type for p in profiles)


def test_padding_is_as_often_shorter_than_the_default_reply_as_longer() -> None:
    for rung in ("generic", "dismissive"):
        diffs = [R.words(R.padded(rung, t, random.Random(t))) - t for t in range(10, 90)]
        assert abs(float(np.mean(diffs))) < 3 and min(diffs) < 0 < max(diffs), rung


def test_the_knows_rung_is_told_the_person_and_the_default_rung_is_not() -> None:
    [p] = resolve_profiles(["builtin:p001*"])
    knows, default = (R.RUNGS[n].system_prompt(p) for n in ("knows", "default"))
    assert p.name in knows.text and p.needs.hidden_need in knows.text and "$" not in knows.text
    assert p.name not in default.text and knows.text.startswith(default.text.strip().splitlines()[0])


def test_the_empathy_lexicon_counts_words_and_stems() -> None:
    assert empathy_share("I'm so sorry, that sounds overwhelming") == pytest.approx(3 / 6)
    assert empathy_share("Did you watch the game?") == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("order", "own", "said"),
    [
        (["default"], {}, "at least two rungs"),
        (["default", "default"], {}, "default named twice"),
        (["default", "kind"], {}, "no rung 'kind'"),
        (["knows", "generic"], {}, "put default in the ladder too"),
        (["default", "dismissive"], {"warm": "be warm"}, "--rung warm: not in --rungs"),
        (["default", "generic"], {"generic": "be warm"}, "generic is a built-in rung"),
        (["warm", "default"], {"warm": "builtin:nope"}, "--rung warm: no built-in supporter prompt 'nope'"),
    ],
)
def test_rungs_refused_with_one_reason(order: list[str], own: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        R.rungs_of(order, own)


# the fake endpoint: the seeker says who they are, the rungs on the model mark themselves, and the judge
# either knows each rung by its marks (and scores it by its place) or scores at random


def _name(text: str) -> str | None:
    m = re.search(r"You are ([A-Z][a-z]+ [A-Z][A-Za-z'-]+),", text)
    return m.group(1) if m else None


def rung_of(transcript: str) -> int:
    """The place of a talk's rung (0 best), read off its supporter's replies."""
    if "KNOWS" in transcript:
        return 0
    said = re.search(r"I am ([^.]+)\.", transcript)
    helped = re.search(r"DEFAULT for ([^.]+)\.", transcript)
    if helped:
        return 1 if said and helped.group(1) == said.group(1) else 3
    return 2 if any(t in transcript for t in R.texts()["generic"]) else 4


def judged(messages: list[dict[str, Any]], schema: dict[str, Any], score: int) -> str:
    props = schema["properties"]
    return json.dumps({k: {"score": score, "evidence": "x"} if v.get("type") == "object" else score
                       for k, v in props.items()})  # fmt: skip


def make_reply(judge: str) -> Any:
    from emoharbor.testing.fake_server import default_reply

    def reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
        text = "\n".join(m["content"] for m in messages)
        if schema is not None:
            if not set(schema.get("properties", {})) <= {*dimension_keys(), "overall"}:
                return default_reply(messages, schema)
            if judge == "knows":
                talk = text[text.find("I am ") :]  # the talk, after the persona a user judge is shown
                return judged(messages, schema, 5 - rung_of(talk))
            rng = random.Random(hashlib.sha256(text.encode()).digest())
            return judged(messages, schema, rng.randint(1, 5))
        system = messages[0]["content"]
        if system.startswith("You are a supportive listener"):
            if "The person: " in system:
                return "KNOWS you well."
            said = re.search(r"I am ([^.]+)\.", messages[1]["content"] if len(messages) > 1 else "")
            return f"DEFAULT for {said.group(1) if said else 'you'}."
        return f"I am {_name(text) or 'someone'}. It is hard."

    return reply


def command(run: Path, url: str, *more: str) -> list[str]:
    return ["ladder", "--model", "fake", "--base-url", url, "--limit", str(PROFILES), "--turns", "2", "--run-dir",
            str(run), "--quiet", *more]  # fmt: skip


def test_the_command_orders_a_ladder_a_judge_knows_and_shows_it_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.testing.fake_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with FakeOpenAIServer(reply=make_reply("knows")) as srv:
        code, out, err = run_main([*command(run, srv.base_url), "--format", "json"], capsys)
    assert code == 0, err
    assert f"{PROFILES} profiles x 5 rungs, 0 talks waiting on another: {PROFILES * 5} talks" in err
    data = json.loads(out)
    rows = {(r["group"], r["scorer"]): r for r in data["rows"]}
    assert data["complete_profiles"] == PROFILES and data["rungs"] == RUNGS
    for judge in ("user", "third_party:fake", "profile_aware:fake"):
        r = rows[(judge, "overall")]
        assert r["tau"]["value"] == pytest.approx(1.0) and r["resolution"]["gap"] == 1, judge
        assert r["means"] == pytest.approx({"knows": 5.0, "default": 4.0, "generic": 3.0, "off_target": 2.0,
                                            "dismissive": 1.0})  # fmt: skip
    assert data["spread"]["user"]["distinct"] == pytest.approx(1)  # this judge gives one score to every dimension
    words = rows[("baseline (no model)", "words per reply")]
    assert abs(words["means"]["generic"] - words["means"]["default"]) <= 10  # length-matched
    verdicts = {g["goal"].split(" in ")[0].split(" (mean")[0]: g["verdict"] for g in data["goals"]}
    assert list(verdicts.values()).count("met") >= 5, verdicts

    # every format, the report, the export, the judges table
    code, text, _ = run_main(["leaderboard", str(run)], capsys)
    assert code == 0 and "Known order, best first: knows > default > generic > off_target > dismissive" in text
    assert "user: overall" in text and "baseline (no model): empathy words" in text
    code, md, _ = run_main(["report", str(run), "--format", "md"], capsys)
    assert code == 0 and "| user: overall |" in md
    code, csv, _ = run_main(["report", str(run), "--format", "csv"], capsys)
    assert code == 0 and csv.splitlines()[0] == "group,scorer,above,below,value,lo,hi,profiles"
    html = tmp_path / "report.html"
    code, _, err = run_main(["report", str(run), "--out", str(html)], capsys)
    assert code == 0, err
    assert "Ladder: supporters of known quality, in order?" in html.read_text(encoding="utf-8")
    code, _, err = run_main(["export", str(run), "--out", str(tmp_path / "export")], capsys)
    assert code == 0, err
    assert (tmp_path / "export" / "ladder.jsonl").is_file() and (tmp_path / "export" / "results.jsonl").is_file()
    code, table, err = run_main(["judges", str(run)], capsys)
    assert code == 0 and "orders the ladder" in table and "tau 1.00" in table, err

    # more judges on the same talks: their rows join the table
    with FakeOpenAIServer(reply=make_reply("knows")) as srv:
        more = ["--judge-model", "fake", "--base-url", srv.base_url]
        code, said, err = run_main(["assess", str(run), "--judge", "third_party_overall", *more], capsys)
    assert code == 0 and f"made {PROFILES * 5} assessments" in said, err
    code, out, _ = run_main(["report", str(run), "--format", "json"], capsys)
    again = {(r["group"], r["scorer"]): r for r in json.loads(out)["rows"]}
    assert again[("third_party_overall:fake", "overall")]["tau"]["value"] == pytest.approx(1.0)
    assert ("third_party_overall:fake", "overall (expected)") in again

    # the record other runs quote: for a user that reads the same prompts with the same model
    [path] = (tmp_path / "cache" / "ladder").glob("fake-*.json")
    rec = json.loads(path.read_text(encoding="utf-8"))
    assert rec["size"] == PROFILES and "user_system" in rec["prompt_versions"]
    lines = measurements.health_lines("fake", {**rec["prompt_versions"], "supporter_default": "x"})
    assert any(line.startswith("Ladder of supporters of known quality (emoharbor ladder, chain user, 6 profiles")
               and "its final intensity" in line for line in lines)  # fmt: skip
    assert not any("Ladder" in line for line in measurements.health_lines("other", rec["prompt_versions"]))


def test_a_judge_at_random_does_not_order_the_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.testing.fake_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(reply=make_reply("random")) as srv:
        code, out, err = run_main([*command(tmp_path / "run", srv.base_url, "--limit", "10", "--judge",
                                            "third_party"), "--format", "json"], capsys)  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    r = next(r for r in data["rows"] if r["group"] == "third_party:fake" and r["scorer"] == "overall")
    assert r["tau"]["lo"] < 0 < r["tau"]["hi"]
    pair = next(p for p in r["pairs"] if (p["above"], p["below"]) == ("default", "dismissive"))
    assert pair["lo"] < 0.5 < pair["hi"]


@pytest.mark.parametrize(
    ("more", "said"),
    [
        (["--rungs", "default"], "--rungs default: a ladder needs at least two rungs"),
        (["--rung", "warm"], "--rung warm: give NAME=PROMPT"),
        (["--profiles", "missing.yaml"], "--profiles: "),
        (["--limit", "1"], "--profiles: 1 profile"),
        (["--judge", "nope"], "--judge: "),
        (["--turns", "0"], "--turns must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], more: list[str], said: str
) -> None:
    run = tmp_path / "r"
    code, _, err = run_main(["ladder", "--model", "scripted", "--run-dir", str(run), *more], capsys)
    assert code != 0 and said in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and not run.exists()


def test_a_killed_run_resumes_without_losing_or_redoing_a_talk(tmp_path: Path) -> None:
    from emoharbor.testing.fake_server import FakeOpenAIServer

    run = tmp_path / "run"
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": "x"}
    total = PROFILES * 5
    with FakeOpenAIServer(reply=make_reply("knows"), latency_s=0.02) as srv:
        args = [*command(run, srv.base_url, "--concurrency", "1")]
        before = killed_midway(args, env, run, "conversation", 4)
        assert 4 <= len(before) < total, "the kill should land mid-run"
        again = emoharbor(*args, env=env)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"{total} talks ({total - len(before)} new, {len(before)} already done, 0 ended in error)" in err
    after = written(run, "conversation")
    assert len(after) == total and all(after[k] == v for k, v in before.items())
    assert "user: overall" in out
