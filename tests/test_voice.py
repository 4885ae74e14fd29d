"""The seeker's own chat (``simulate.voice``): where the private note goes, how a written message is trimmed,
the length the profile sets; and what the demo prints of its simulated user's measured records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor import measurements
from emoharbor.commands.evaluate import print_conversation
from emoharbor.profiles.loader import load_profile_file
from emoharbor.prompts import load_prompt
from emoharbor.simulate import voice
from emoharbor.simulate.conversation import Conversation, Turn
from emoharbor.store.run_store import RunStore

PROFILE = load_profile_file(Path(__file__).parent.parent / "examples" / "profile.yaml")[0]


def test_the_note_goes_just_before_the_supporters_last_message() -> None:
    head = voice.system(load_prompt("user_voice"), PROFILE)
    assert head["role"] == "system" and PROFILE.situation.story[:40] in head["content"]
    assert f"about {voice.words_target(PROFILE)} words" in head["content"] and "$" not in head["content"]
    turns = [Turn(speaker="user", text="hi"), Turn(speaker="supporter", text="Hello, what's up?")]
    msgs = voice.chat(head, turns, "(note)")
    assert [m["role"] for m in msgs] == ["system", "assistant", "system", "user"]
    assert msgs[2]["content"] == "(note)" and msgs[-1]["content"] == "Hello, what's up?"
    assert voice.chat(head, [], "(open)")[-1] == {"role": "system", "content": "(open)"}  # the opening's note
    assert voice.chat(head, turns) == [head, msgs[1], msgs[3]]  # the simple user: no note
    # a window of the talk: the last two supporter turns and what the seeker said between them
    talk = [Turn(speaker="user" if i % 2 == 0 else "supporter", text=f"m{i}") for i in range(6)]
    shown = voice.chat(head, talk, "(note)", window=2)
    assert shown[0] == head and [m["content"] for m in shown[1:]] == ["m3", "m4", "(note)", "m5"]
    assert voice.chat(head, talk, window=9) == voice.chat(head, talk)  # fewer turns than the window: all
    # framed: each supporter message marked as the listener's words, the seeker's own and the note as they are
    framed = voice.chat(head, turns, "(note)", framing="quoted")
    assert framed[-1] == {"role": "user", "content": "The listener wrote: Hello, what's up?"}
    assert framed[:3] == msgs[:3]


def test_a_written_message_is_trimmed_as_sent() -> None:
    assert voice.trim('You: "I lost my job."', cut=False) == "I lost my job."
    assert voice.trim("I lost my job.\nSupporter: That is hard.\nYou: yes", cut=False) == "I lost my job."
    assert voice.trim("I lost my job. I keep thinking that maybe", cut=True) == "I lost my job."
    assert voice.trim("I keep thinking that maybe", cut=True) == "I keep thinking that maybe"  # nothing to keep
    assert voice.trim("  so   tired\n today  ", cut=False) == "so tired today"


def test_the_length_follows_the_profile() -> None:
    terse = PROFILE.model_copy(update={"communication_style": PROFILE.communication_style.model_copy(
        update={"verbosity": "terse"})})  # fmt: skip
    assert voice.words_target(terse) == 8 and voice.message_tokens(terse, 0) == 32
    assert voice.message_tokens(terse, 50) == 50
    assert voice.feeling(85, "anxiety") == "overwhelmed (anxiety)" and voice.feeling(10, "unspecified") == "mostly calm"
    assert voice.trusting(20).startswith("you do not trust") and voice.landed(None) == ""


def test_shipped_records_are_quoted_after_the_users_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(measurements, "SHIPPED", tmp_path / "shipped")
    versions = {"user_voice": "user_voice@1", "user_system": "user_system@1"}
    rec = {"user_model": "local:qwen1.5b", "prompt_versions": versions, "size": 60, "line": "shipped line",
           "date": "2026-12-06"}  # fmt: skip
    (tmp_path / "shipped" / "realism").mkdir(parents=True)
    (tmp_path / "shipped" / "realism" / "local_qwen1.5b-a.json").write_text(json.dumps(rec), encoding="utf-8")
    run = {**versions, "supporter_default": "x"}
    assert measurements.quoted("local:qwen1.5b", run) == [("realism", rec)]
    assert measurements.quoted("local:qwen1.5b", {**run, "user_voice": "user_voice@2"}) == []
    own = {**rec, "size": 4, "line": "my own line"}  # the user's own record comes first, however small
    measurements.write("realism", "local:qwen1.5b", versions, {**own, "run": "my-run"})
    assert [r["line"] for _, r in measurements.quoted("local:qwen1.5b", run)] == ["my own line"]


def test_a_record_is_quoted_only_for_the_settings_it_was_measured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(measurements, "SHIPPED", tmp_path / "none")
    versions = {"user_voice": "user_voice@1"}
    grounded = {"agent": "chain", "endings": "grounded", "intensity_step": 6}
    rec = {"user_model": "local:qwen1.5b", "prompt_versions": versions, "size": 40, "line": "measured grounded",
           "user_settings": grounded}  # fmt: skip
    measurements.write("realism", "local:qwen1.5b", versions, {**rec, "run": "r"})
    assert [r["line"] for _, r in measurements.quoted("local:qwen1.5b", versions, grounded)] == ["measured grounded"]
    assert measurements.quoted("local:qwen1.5b", versions, {**grounded, "endings": "model"}) == []
    # a setting added after the record was written reads there as its default: the same user at the default,
    # another one when the run sets it otherwise
    now = {**grounded, "framing": "chat", "window": 0}
    assert len(measurements.quoted("local:qwen1.5b", versions, now)) == 1
    assert measurements.quoted("local:qwen1.5b", versions, {**now, "framing": "quoted"}) == []
    # a run that does not say its settings, or a record that does not, is matched on the model and prompts alone
    assert len(measurements.quoted("local:qwen1.5b", versions)) == 1
    measurements.write("realism", "local:qwen1.5b", versions, {**rec, "user_settings": None, "run": "old", "size": 60})
    assert [r["run"] for _, r in measurements.quoted("local:qwen1.5b", versions, {"agent": "simple"})] == ["old"]


def test_the_demo_prints_what_is_measured_of_its_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(measurements, "SHIPPED", tmp_path / "none")
    versions = {p: f"{p}@1" for p in (*measurements.PROMPTS, "user_voice")}
    cfg = {"roles": {"user": {"model": "local:qwen1.5b"}}, "prompt_versions": versions}
    store = RunStore.create_or_resume(tmp_path / "run", "emoharbor", cfg, "h")
    try:
        conv = Conversation(id="c", profile_id="p", supporter="s", turns=[Turn(speaker="user", text="hi")])
        store.put("conversation", ("p", "s", "0"), {**conv.model_dump(mode="json"), "status": "ok"}, attempt="",
                  events=[])  # fmt: skip
        measurements.write("realism", "local:qwen1.5b", {"user_voice": "user_voice@1"},
                          {"user_model": "local:qwen1.5b", "prompt_versions": {"user_voice": "user_voice@1"},
                           "size": 60, "line": "Simulated user's measured realism (...)", "run": "r"})  # fmt: skip
        print_conversation(store)
    finally:
        store.close()
    out = capsys.readouterr().out
    assert "USER: hi" in out
    assert "# The simulated user's sensitivity has not been measured for local:qwen1.5b" in out
    assert "# Simulated user's measured realism (...)" in out


def test_real_seekers_messages_as_examples_nearest_the_story(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers")
    from emoharbor.simulate.chain_user import ChainSettings, ChainUser
    from emoharbor.simulate.examples import examples_text, same_talks
    from emoharbor.simulate.simple_user import SimpleSettings, SimpleUser
    from seekers_helpers import raw_record, write_raw

    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))

    def talk(situation: str, said: str) -> dict[str, object]:
        turns = [("seeker", "hi", None), ("supporter", "Hello", None), ("seeker", said, None)]
        return {**raw_record(turns), "situation": situation}  # type: ignore[arg-type]

    bank = write_raw(tmp_path / "train_mine.json", [
        talk("I lost my job at the factory and cannot pay rent.", "the rent is due friday and i have nothing"),
        talk("My cat died last week and I miss her.", "i keep looking for her on the couch"),
        talk("I am a nurse and made a mistake at work; I want to quit.", "one mistake and now i dread every shift"),
    ])  # fmt: skip
    text = examples_text(str(bank), PROFILE, 1)  # the profile: a nurse written up after an error on a night shift
    assert text.startswith("How other people have written") and text.endswith(
        "\n- one mistake and now i dread every shift"
    )
    assert examples_text(str(bank), PROFILE, 3).count("\n- ") == 3
    assert examples_text(None, PROFILE, 2) == "" and examples_text(str(bank), PROFILE, 0) == ""
    chain = ChainUser(None, PROFILE, ChainSettings(examples=str(bank), examples_k=1))  # type: ignore[arg-type]
    assert "dread every shift" in chain.voice["content"] and "rent is due" not in chain.voice["content"]
    simple = SimpleUser(None, PROFILE, SimpleSettings(agent="simple", examples=str(bank)))  # type: ignore[arg-type]
    assert "dread every shift" in simple.head["content"] and simple.head["content"].endswith("[END].")
    # off by default: the voice is as it was
    assert "other people" not in ChainUser(None, PROFILE).voice["content"]  # type: ignore[arg-type]
    # a talk being evaluated is found in the examples file by its messages
    from emoharbor.data.esconv import load_esconv

    evaluated = write_raw(tmp_path / "valid_mine.json", [talk("x", "i keep looking for her on the couch")])
    assert same_talks(str(bank), load_esconv(evaluated)) == ["valid_mine:0"]


async def test_the_simple_user_is_asked_again_when_it_slips_as_the_chain_is() -> None:
    from emoharbor.models.scripted import ScriptedModel
    from emoharbor.simulate.simple_user import SimpleUser

    said = ["I'm sorry to hear that. Let me know if you need anything.", "my shifts start at six [END]"]
    model = ScriptedModel(said)
    step = await SimpleUser(model, PROFILE).react([Turn(speaker="supporter", text="How are you?")], seed=1)
    assert step.text == "my shifts start at six" and step.decision == "end_satisfied"
    assert step.events == [("user_broke_character_retried", f"{said[0]} => {said[1]}")]
    assert model.calls[1][:-1] == model.calls[0] and "sounded like the supporter" in model.calls[1][-1]["content"]


def test_the_shipped_records_say_the_user_they_measured() -> None:
    """A shipped record is quoted only for the user it measured: the ladder's (measured before endings were grounded)
    not for today's default user, the realism record's for it."""
    from emoharbor.simulate.agents import default_user, same_user

    default = default_user().model_dump(mode="json")
    said = {p.parent.name: json.loads(p.read_text(encoding="utf-8")).get("user_settings")
            for p in measurements.SHIPPED.glob("*/*.json")}  # fmt: skip
    assert not same_user(said["ladder"], default) and same_user(said["ladder"], {**default, "endings": "model"})
    assert same_user(said["realism"], default)
