"""``emoharbor realism``: the cuts and talks read from ESConv, the message features, the figures beside real
seekers (their intervals, goals and verdicts, the discriminator and its real-vs-real floor, the similarity),
the run end to end against the fake OpenAI server (every format, the report, the export, the record other
runs' health quotes), bad input, and a run SIGKILLed mid-way resumed without losing or redoing a message."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_helpers import emoharbor, killed_midway, run_main, written
from emoharbor import measurements
from emoharbor.data.esconv import load_esconv
from emoharbor.errors import DataError
from emoharbor.realism.analysis import false_stops, reask
from emoharbor.realism.cuts import file_talks, talk_cuts, talk_shape
from emoharbor.realism.figures import Message, Table
from emoharbor.realism.text import distinct_2, features, words
from realism_helpers import job_talk, risky_later, talk_files
from seekers_helpers import raw_record, write_raw

CUTS, TALKS = 12, 6  # talk_files(3) with --cuts 2: two of each talk's three cuts


def test_cuts_start_at_the_seekers_third_turn_and_draft_the_profile_from_the_talk_so_far(tmp_path: Path) -> None:
    raw, lines = talk_files(tmp_path, talks=1)
    for path in (raw, lines):
        [dialog] = load_esconv(path)
        cuts = talk_cuts(dialog)
        assert [c.real for c in cuts] == [
            "yeah my rent is due and I keep checking my bank app",
            "my sister knows but she is far away. I feel like such a failure",
            "Thanks, I will try that tomorrow. Bye.",
        ]
        first = cuts[0]
        assert first.turns[-1].speaker == "supporter" and first.turns[-1].text == "I am sorry. That is a lot to carry."
        k = 0 if path == raw else 10
        assert first.earlier == ["hi", f"not great honestly. I lost my job at the warehouse {k} weeks ago."]
        story = "I was let go" if path == raw else "My partner moved out"
        assert first.profile.evaluation_only and first.profile.situation.story.startswith(story)
    # a risk word only after the cut does not reach the cut's profile; the whole talk's profile has it
    [dialog] = load_esconv(risky_later(tmp_path))
    assert {c.profile.risk_level for c in talk_cuts(dialog)[:2]} == {"none"}
    assert talk_shape(dialog).profile.risk_level == "elevated"
    shape = talk_shape(dialog)
    assert len(shape.seeker) == 5 and shape.supporter_turns == 5 and (shape.initial, shape.final) == (4, 2)


def test_message_features() -> None:
    assert words("I can't sleep, honestly.") == 4
    said = features("Thanks so much. Is it normal to feel this way?", [])
    assert said["gratitude"] and said["question"] and not said["voice"] and not said["narrates"]
    assert features("I'm sorry to hear that. It's important to take care of yourself.", [])["voice"]
    assert features("I feel a little better and trust the supporter more after the message.", [])["narrates"]
    assert features("my trust in you went up a bit", [])["narrates"]
    assert not features("I trust my sister more than my mom", [])["narrates"]
    assert features("I just feel stuck at work.", ["i just feel stuck at work"])["repeat"]
    assert distinct_2(["a b c", "a b d"]) == pytest.approx(3 / 4)
    assert distinct_2(["one"]) is None


def test_the_reask_is_counted_mended_still_wrong_or_wrong_in_a_new_way(tmp_path: Path) -> None:
    [dialog] = load_esconv(talk_files(tmp_path, talks=1)[0])
    cut = talk_cuts(dialog)[0]
    slip, own = "Let me know if you need anything.", "my rent is due next week"
    narrated = "I trust the supporter more after the message."

    def done(first: str, kept: str) -> tuple[Any, dict[str, Any]]:
        return cut, {"text": kept, "events": [["user_broke_character_retried", f"{first} => {kept}"]]}

    got = reask([done(slip, own), done(slip, slip), done(slip, narrated), (cut, {"text": own, "events": []})])
    assert got == {"asked": 3, "mended": 1, "still": 2, "worse": 1}


def messages(texts: dict[str, list[str]]) -> list[Message]:
    return [Message(talk, t) for talk, ts in texts.items() for t in ts]


def test_figures_beside_people_with_goals_and_verdicts() -> None:
    talks = [f"t{i}" for i in range(8)]
    real = messages({t: ["my rent is due and I am scared", "no I have not told anyone yet"] for t in talks})
    sim = messages({t: ["Thank you so much for your support, I really appreciate it and feel better now, thanks",
                        "I'm here for you, let me know if you need anything"] for t in talks})  # fmt: skip
    rows = {r["figure"]: r for r in Table(sim, real, n_boot=200).rows()}
    assert rows["words"]["sim"]["value"] == pytest.approx(13.5) and rows["words"]["real"]["value"] == pytest.approx(7.5)
    assert rows["words"]["vs_real"]["value"] == pytest.approx(13.5 / 7.5) and rows["words"]["verdict"] == "not met"
    assert rows["gratitude"]["sim"]["value"] == pytest.approx(0.5) and rows["gratitude"]["real"]["value"] == 0
    assert rows["gratitude"]["verdict"] == "not met" and rows["voice"]["verdict"] == "not met"
    assert rows["voice"]["vs_real"]["value"] == pytest.approx(0.5) and rows["narrates"]["verdict"] == "met"
    # every talk alike: the interval of a share is the share itself
    assert rows["gratitude"]["sim"]["lo"] == pytest.approx(0.5) and rows["gratitude"]["sim"]["hi"] == pytest.approx(0.5)
    assert rows["distinct_2"]["sim"]["lo"] is None and rows["distinct_2"]["vs_real"]["lo"] is not None
    same = {r["figure"]: r["verdict"] for r in Table(real, real, n_boot=200).rows()}
    assert set(same.values()) == {"met"}  # people meet every goal set against people
    # under five talks: values without intervals
    few = {r["figure"]: r for r in Table(sim[:4], real[:4], n_boot=50).rows()}
    assert few["words"]["sim"]["lo"] is None and few["words"]["sim"]["value"] is not None


def test_the_discriminator_and_its_floor_and_the_similarity() -> None:
    rng = np.random.default_rng(0)
    talks = [f"t{i}" for i in range(30)]
    sim, real = messages({t: ["s"] for t in talks}), messages({t: ["r"] for t in talks})
    table = Table(sim, real, n_boot=200)

    def unit(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    real_vec = unit(rng.normal(size=(30, 8)))
    apart = unit(real_vec + np.r_[4.0, np.zeros(7)])  # one direction tells them apart
    alike = unit(rng.normal(size=(30, 8)))  # drawn as the real ones are
    d = table.discriminator(apart, real_vec, alike)
    assert d["sim_vs_real"]["value"] > 0.95 and d["verdict"] == "not met"
    assert 0.2 < d["real_vs_real"]["value"] < 0.8  # nothing to find between two draws of one kind
    assert table.discriminator(alike, real_vec, alike)["verdict"] == "met"
    close = unit(real_vec + 0.3 * rng.normal(size=(30, 8)))  # each near its own real next message
    s = table.similarity(close, real_vec)
    assert s["next"]["value"] > 0.6 > 0.2 > s["other"]["value"] and s["verdict"] == "met"
    assert table.similarity(alike, real_vec)["verdict"] in ("not met", "met")


def command(files: tuple[Path, Path], run: Path, url: str, *more: str) -> list[str]:
    return ["realism", *map(str, files), "--model", "fake", "--base-url", url, "--run-dir", str(run), "--cuts",
            "2", "--whole", "2", "--turns", "2", "--quiet", *more]  # fmt: skip


def chat_reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    """A fake model: the chain's inner steps answer their schemas; a seeker's message thanks on every other talk;
    a supporter asks."""
    from emoharbor.testing.fake_server import default_reply

    if schema is not None:
        return default_reply(messages, schema)
    if "volunteer listener" in messages[0]["content"]:
        last = messages[-1]["content"]
        return "Thanks, that helps a lot." if "3" in last or "1" in last else "my rent is due and I keep worrying"
    return "How long has this been going on?"


def test_the_command_runs_against_an_endpoint_and_shows_it_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.testing.fake_server import FakeOpenAIServer

    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    files, run = talk_files(tmp_path), tmp_path / "run"
    with FakeOpenAIServer(reply=chat_reply) as srv:
        code, out, err = run_main(command(files, run, srv.base_url), capsys)
        assert code == 0, err
        assert f"{CUTS} cuts of {TALKS} talks, 2 whole talks: {CUTS + 2} messages ({CUTS + 2} new" in err
        assert f"Next message: {CUTS} cuts of {TALKS} talks (0 unscored)" in out
        rows = (
            "words per message (median)",
            "thanks or appreciation",
            "offers help / the supporter's voice",
            "narrates the inner state",
            "told apart from people (AUROC)",
            "similarity to the real next",
        )
        for row in rows:
            assert f"\n{row} " in out, row
        assert "Whole talks: 2 of 2 simulated" in out and "relief per supporter turn" in out
        code, out, _ = run_main(command(files, run, srv.base_url, "--format", "json"), capsys)
    data = json.loads(out)
    rows = {r["figure"]: r for r in data["next"]["rows"]}
    assert data["next"]["cuts"] == CUTS and data["next"]["unfinished"] == 0
    assert rows["words"]["real"]["value"] is not None and rows["gratitude"]["verdict"] in ("met", "not met")
    assert data["next"]["discriminator"]["real_vs_real"]["value"] is not None
    whole = data["whole"]
    assert whole["talks"] == 2 and whole["seeker_turns"]["sim"]["value"] == pytest.approx(3)
    # people's five seeker turns, cut where the simulated talks stop (two supporter turns): three, as the simulated
    turns = whole["seeker_turns"]
    assert turns["real"]["value"] == pytest.approx(5) and turns["real_at_cap"]["value"] == pytest.approx(3)
    assert turns["verdict"] == "n/a"  # two talks: no interval to be within
    assert whole["relief"]["real"]["value"] == pytest.approx((2 * 20 / 5 + 1 * 20 / 5) / 2)  # survey 4->2, 3->2
    # a finished run is reprinted with no model: the server is gone
    code, out, err = run_main(command(files, run, srv.base_url, "--format", "md"), capsys)
    assert code == 0, err and f"(0 new, {CUTS + 2} already done" in err
    assert "| words per message (median) |" in out

    code, _, err = run_main(["report", str(run), "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Realism: the simulated seeker beside real seekers" in page and '-realism-next"' in page
    code, out, err = run_main(["judges", str(run), "--format", "json"], capsys)
    assert code == 0, err
    [user] = [r for r in json.loads(out) if r["judge"] == "user"]
    assert user["realism_n"] == CUTS and user["realism"].startswith("chain user: AUROC ")
    code, _, err = run_main(["export", str(run), "--format", "csv", "--out", str(tmp_path / "x")], capsys)
    assert code == 0, err
    assert (tmp_path / "x" / "realism.csv").exists() and (tmp_path / "x" / "realism_messages.csv").exists()

    # the record other runs quote: only for a user that reads the same prompts with the same model
    [path] = (tmp_path / "cache" / "realism").glob("fake-*.json")
    rec = json.loads(path.read_text(encoding="utf-8"))
    assert rec["size"] == CUTS and rec["user_agent"] == "chain" and "user_voice" in rec["prompt_versions"]
    versions = dict(rec["prompt_versions"])
    lines = measurements.health_lines("fake", {**versions, "supporter_default": "x"})
    assert any(line.startswith("Simulated user's measured realism (emoharbor realism, chain user, 12 cuts")
               for line in lines)  # fmt: skip
    assert not any("realism" in line for line in measurements.health_lines("fake", {**versions, "user_voice": "v2"}))
    assert not any("realism" in line for line in measurements.health_lines("other", versions))


def test_a_killed_run_resumes_without_losing_or_redoing_a_message(tmp_path: Path) -> None:
    from emoharbor.testing.fake_server import FakeOpenAIServer

    files, run = talk_files(tmp_path), tmp_path / "run"
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(reply=chat_reply, latency_s=0.05) as srv:
        args = [*command(files, run, srv.base_url, "--concurrency", "1"), "--whole", "0"]
        before = killed_midway(args, env, run, "next", 3)
        assert 3 <= len(before) < CUTS, "the kill should land mid-run"
        again = emoharbor(*args, env=env)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"{CUTS} messages ({CUTS - len(before)} new, {len(before)} already done, 0 ended in error)" in err
    after = written(run, "next")
    assert len(after) == CUTS and all(after[k] == v for k, v in before.items())
    assert f"Next message: {CUTS} cuts of {TALKS} talks" in out


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"dialog": "nope"}, "record 1: field 'dialog' must be a list of turns"),
        ({"dialog": [{"speaker": "bot", "text": "hi"}]}, "record 1: dialog turn 1: field 'speaker': unknown speaker"),
        ({"dialog": [{"speaker": "usr", "text": 3}]}, "record 1: dialog turn 1: field 'text' must be a string"),
        (raw_record(job_talk(0)) | {"survey_score": {"seeker": {"initial_emotion_intensity": "9"}}},
         "field 'survey_score.seeker.initial_emotion_intensity': 9 is not a rating from 1 to 5"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_naming_file_record_and_field_and_leaves_no_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: dict[str, Any], said: str
) -> None:
    bad = write_raw(tmp_path / "bad.json", [record])
    code, _, err = run_main(["realism", str(bad), "--user-model", "scripted", "--run-dir", str(tmp_path / "r")], capsys)
    assert code != 0 and said in err and str(bad) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_a_file_without_a_cut_and_bad_options_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    short = write_raw(tmp_path / "short.json", [raw_record(job_talk(0)[:4])])
    with pytest.raises(DataError, match="no talk has a supporter turn before the seeker's third turn"):
        file_talks(short)
    files = talk_files(tmp_path)
    for extra, said in ((["--cuts", "0", "--whole", "0"], "nothing to simulate"), (["--cuts", "-1"],
                        "--cuts must be at least 0"), (["--limit", "1", "--sample", "1"], "not both"),
                        (["--user-agent", "nobody"], "--user-agent nobody")):  # fmt: skip
        code, _, err = run_main(["realism", *map(str, files), "--user-model", "scripted", *extra], capsys)
        assert code != 0 and said in err, err
    # examples drawn from the talks being evaluated are refused
    code, _, err = run_main(["realism", str(files[0]), "--user-model", "scripted", "--set",
                             f"user_agent.examples={files[0]}", "--run-dir", str(tmp_path / "r")], capsys)  # fmt: skip
    assert code != 0 and "it holds 3 of the talks being evaluated (failed_mine:0" in err, err
    assert not (tmp_path / "r").exists()


def test_a_run_resumed_after_the_persona_card_changed_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.profiles import schema
    from emoharbor.prompts import Prompt, load_prompt
    from emoharbor.store import record

    files, run = talk_files(tmp_path, talks=1), tmp_path / "run"
    args = ["realism", *map(str, files), "--user-model", "scripted", "--user-agent", "simple", "--whole", "0",
            "--run-dir", str(run), "--quiet", "--format", "json"]  # fmt: skip
    code, _, err = run_main(args, capsys)
    assert code == 0, err
    reworded = Prompt("persona_card", load_prompt("persona_card").text.replace("You feel", "You are feeling"))

    def edited(name: str) -> Prompt:
        return reworded if name == "persona_card" else load_prompt(name)

    for module in (schema, record):
        monkeypatch.setattr(module, "load_prompt", edited)
    assert "You are feeling" in talk_cuts(load_esconv(files[0])[0])[0].profile.persona_card()
    code, _, err = run_main(args, capsys)
    assert code != 0 and "prompt_versions.persona_card" in err and "Traceback" not in err, err


def test_whole_talks_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = talk_files(tmp_path)
    args = ["realism", *map(str, files), "--user-model", "scripted", "--user-agent", "simple", "--cuts", "0",
            "--whole", "2", "--turns", "2", "--run-dir", str(tmp_path / "run"), "--quiet"]  # fmt: skip
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    assert "0 cuts of" in err and "2 whole talks" in err
    assert "Next message: no cut asked for (--cuts 0)" in out and "no cut is scored yet" not in out
    assert "Whole talks: 2 of 2 simulated" in out
    code, _, err = run_main(["report", str(tmp_path / "run")], capsys)
    assert code == 0, err
    assert "Whole talks" in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")


def test_a_stop_where_the_real_seeker_went_on_is_a_false_stop(tmp_path: Path) -> None:
    raw, _ = talk_files(tmp_path, talks=6)
    cuts = [c for d in file_talks(raw) for c in talk_cuts(d)[:2]]  # two cuts of each of six talks
    said = ["continue", "end_satisfied", "continue", "disengage"] + ["continue"] * 8
    done = [(c, {"decision": d}) for c, d in zip(cuts, said, strict=True)]
    f = false_stops(done, seed=0, n_boot=200)
    s = f["sim"]
    assert s["value"] == pytest.approx(2 / 12) and f["verdict"] == "not met" and s["lo"] <= s["value"] <= s["hi"]
    calm = false_stops([(c, {"decision": "continue"}) for c in cuts], seed=0, n_boot=200)
    assert calm["sim"]["value"] == pytest.approx(0.0) and calm["verdict"] == "met"
