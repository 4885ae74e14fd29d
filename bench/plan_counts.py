"""Measurement: how often one `emoharbor run` of the demo config (src/emoharbor/demo.yaml) builds the same things
again, on the scripted backend (every model of the demo answered by the fake server's reply function, in
this process: no model is started or reached).

    python bench/plan_counts.py

Counts, for a fresh run, a resume of the finished run and a resume with work left (half the conversations
and their assessments deleted from the store first): ``load_card`` calls, profile resolutions
(``resolve_profiles``), input hashing (``input_hashes``), and per stored record JSON decodes (records the
store's ``get`` and ``items`` return; ``RunStore.field`` reads one field in SQLite and decodes no record) of
conversations and assessments and object decodes (``Conversation.model_validate``) of conversations. Then, for a
scripted ``emoharbor validate`` and ``emoharbor sensitivity`` of a few made-up ESConv records (fresh and resumed
when finished): ``load_card`` calls and ESConv file loads (``load_esconv``). Run it against another checkout's
code with PYTHONPATH=that/src to compare.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from emoharbor.cli import main
from emoharbor.models.pool import ModelPool
from emoharbor.models.scripted import ScriptedModel
from emoharbor.simulate.conversation import Conversation
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import default_reply

# the modules that bind the counted names, imported before they are replaced (one a checkout lacks is skipped)
MODULES = ("emoharbor.evaluate.run", "emoharbor.evaluate.plan", "emoharbor.preflight", "emoharbor.commands.evaluate",
           "emoharbor.commands.runs", "emoharbor.report.runs", "emoharbor.results", "emoharbor.validate.run",
           "emoharbor.validate.kind", "emoharbor.sensitivity.run", "emoharbor.sensitivity.cases",
           "emoharbor.sensitivity.kind", "emoharbor.commands.report", "emoharbor.commands.sensitivity")  # fmt: skip
COUNTED = {"load_card": "emoharbor.assess.cards", "resolve_profiles": "emoharbor.profiles.loader",
           "input_hashes": "emoharbor.store.record", "load_esconv": "emoharbor.data.esconv"}  # fmt: skip
counts: Counter[str] = Counter()


def counting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return fn(*args, **kwargs)

    return wrapper


def count_calls(counted: dict[str, str], modules: tuple[str, ...]) -> None:
    """Every module's binding of the ``counted`` functions (name -> its home module; ``from .cards import
    load_card`` copies the name) replaced by a counting one, once ``modules`` are imported (one a checkout
    lacks is skipped)."""
    for name in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    originals: dict[str, Callable[..., Any]] = {
        name: getattr(sys.modules[home], name) for name, home in counted.items()
    }
    for mod in [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("emoharbor")]:
        for name, original in originals.items():
            if getattr(mod, name, None) is original:
                setattr(mod, name, counting(name, original))


@contextlib.contextmanager
def counters() -> Iterator[None]:
    """``count_calls`` of ``COUNTED``; the store's record readers (``get``, ``items``: one JSON decode per record
    returned) and ``Conversation.model_validate`` likewise; every model scripted."""
    count_calls(COUNTED, MODULES)
    get, items = RunStore.get, RunStore.items

    def counted_get(self: RunStore, kind: str, key: Any) -> dict[str, Any] | None:
        found = get(self, kind, key)
        counts[f"decode:{kind}"] += found is not None
        return found

    def counted_items(self: RunStore, kind: str) -> Iterator[tuple[Any, dict[str, Any]]]:
        for pair in items(self, kind):
            counts[f"decode:{kind}"] += 1
            yield pair

    RunStore.get, RunStore.items = counted_get, counted_items  # type: ignore[method-assign]
    validate = Conversation.model_validate

    def counted_validate(obj: Any, *args: Any, **kwargs: Any) -> Conversation:
        counts["Conversation.model_validate"] += 1
        return validate(obj, *args, **kwargs)

    Conversation.model_validate = counted_validate  # type: ignore[assignment,method-assign]

    script_models()
    yield


def script_models() -> None:
    """Every model a pool builds answered by the fake server's reply function, in this process."""

    async def scripted(self: ModelPool, spec: Any) -> ScriptedModel:
        return ScriptedModel(default_reply)

    ModelPool._build = scripted  # type: ignore[method-assign]


def demo_config(folder: Path) -> Path:
    """The demo config, its models swapped for ``scripted``."""
    raw = yaml.safe_load(resources.files("emoharbor").joinpath("demo.yaml").read_text("utf-8"))
    for s in raw["roles"]["supporter"]:
        s["model"] = "scripted"
    raw["roles"]["user"] = raw["roles"]["judge"] = "scripted"
    path = folder / "demo.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def one_run(config: Path) -> tuple[Path, dict[str, float]]:
    """``emoharbor run CONFIG`` as a user types it (the default run folder, under runs/ here)."""
    counts.clear()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["run", str(config), "--quiet"])
    (run_dir,) = Path("runs").iterdir()
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        stored = dict(db.execute("SELECT kind, COUNT(*) FROM results GROUP BY kind").fetchall())
    convs, assessments = stored.get("conversation", 0), stored.get("assessment", 0)
    return run_dir, {
        "load_card calls": counts["load_card"],
        "profile resolutions": counts["resolve_profiles"],
        "input hashings": counts["input_hashes"],
        "conversation JSON decodes per record": counts["decode:conversation"] / max(convs, 1),
        "conversation object decodes per record": counts["Conversation.model_validate"] / max(convs, 1),
        "assessment JSON decodes per record": counts["decode:assessment"] / max(assessments, 1),
    }


def drop_half(run_dir: Path) -> None:
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        keys = [k for (k,) in db.execute("SELECT key FROM results WHERE kind='conversation' ORDER BY key")]
        for k in keys[: len(keys) // 2]:
            db.execute("DELETE FROM results WHERE kind='conversation' AND key=?", (k,))
            db.execute("DELETE FROM results WHERE kind='assessment' AND key LIKE ?", (k[:-1] + ",%",))


def invented_esconv(folder: Path, n: int = 3) -> Path:
    """``n`` made-up conversations in the ESConv layout (three exchanges each, the seeker's survey), long enough
    to make sensitivity cases."""
    survey = {"initial_emotion_intensity": "5", "final_emotion_intensity": "3", "empathy": "4", "relevance": "4"}
    records = [{"experience_type": "Current Experience", "emotion_type": "anxiety", "problem_type": "job crisis",
                "situation": "My manager said my team may be cut. I cannot sleep.", "survey_score": {"seeker": survey},
                "dialog": [t for d in range(3) for t in (
                    {"speaker": "usr", "text": f"I keep worrying about my job and my rent, day {d} of {i}."},
                    {"speaker": "sys", "text": "That sounds hard; what has been the hardest part of it?"})]}
               for i in range(n)]  # fmt: skip
    path = folder / "esconv.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def command(argv: list[str], named: dict[str, tuple[str, ...]]) -> dict[str, float]:
    """``emoharbor ARGV`` as a user types it; the ``named`` counts it made."""
    counts.clear()
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            main(argv)
    except SystemExit as e:
        if e.code:
            raise SystemExit(f"emoharbor {' '.join(argv)} failed:\n{err.getvalue()}") from None
    return {name: sum(counts[f] for f in functions) for name, functions in named.items()}


def one_command(argv: list[str]) -> dict[str, float]:
    """A command that makes a run, as a user types it: its ``load_card`` calls and ESConv file loads."""
    return command(argv, {"load_card calls": ("load_card",), "ESConv file loads": ("load_esconv",)})


def main_() -> None:
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp), counters():
        os.environ["EMOHARBOR_CACHE_DIR"] = str(Path(tmp) / "cache")  # its calls and records stay here
        config = demo_config(Path(tmp))
        run_dir, fresh = one_run(config)
        finished = one_run(config)[1]
        drop_half(run_dir)
        left = one_run(config)[1]
        esconv = str(invented_esconv(Path(tmp)))
        scripted = ["--model", "scripted", "--scoring", "argmax"]
        validate = ["validate", "--esconv", esconv, *scripted, "--run-dir", "v", "--quiet"]  # 3 cards
        sensitivity = ["sensitivity", "--esconv", esconv, *scripted, "--run-dir", "s", "--quiet"]  # 2 cards
        commands = {"validate (3 cards, 1 file)": validate, "sensitivity (2 cards, 1 file)": sensitivity}
        others = {name: (one_command(argv), one_command(argv)) for name, argv in commands.items()}
    print(f"emoharbor run, the demo config\n{'':42} {'fresh':>8} {'resume, done':>13} {'resume, work left':>18}")
    for name in fresh:
        print(f"{name:42} {fresh[name]:8.2f} {finished[name]:13.2f} {left[name]:18.2f}")
    for command, (new, again) in others.items():
        print(f"\nemoharbor {command}\n{'':42} {'fresh':>8} {'resume, done':>13}")
        for name in new:
            print(f"{name:42} {new[name]:8.2f} {again[name]:13.2f}")


if __name__ == "__main__":
    main_()
