"""An EmoHarbor run's plan is built once: one `emoharbor run` loads each judge card once and resolves the
profiles once (bench/plan_counts.py has the figures), and the run keeps its profiles, so the report and the
export read them from the store even after the profile file is gone."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_helpers import run_main
from emoharbor.assess import cards
from emoharbor.config import load_config
from emoharbor.errors import DataError
from emoharbor.evaluate import Plan
from emoharbor.evaluate import plan as plan_module
from emoharbor.models.pool import ModelPool
from emoharbor.models.scripted import ScriptedModel
from emoharbor.profiles.loader import builtin_profiles
from emoharbor.report.runs import load_run
from emoharbor.testing.fake_server import default_reply


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every model answered in this process by the fake server's reply function (valid JSON for a schema)."""

    async def build(self: ModelPool, spec: Any) -> ScriptedModel:
        return ScriptedModel(default_reply)

    monkeypatch.setattr(ModelPool, "_build", build)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def write_config(folder: Path, profiles: list[str]) -> Path:
    cfg = {"name": "t", "profiles": profiles, "max_turns": 2, "min_turns": 1,
           "roles": {"supporter": [{"name": "plain", "model": "scripted"},
                                   {"name": "personal", "model": "scripted", "system_prompt": "builtin:personal"}],
                     "user": "scripted", "judge": "scripted"}}  # fmt: skip
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_one_run_loads_each_card_once_and_resolves_the_profiles_once(
    scripted: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    counts: Counter[str] = Counter()

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(cards, "load_card", counted("load_card", cards.load_card))
    monkeypatch.setattr(plan_module, "resolve_profiles", counted("resolve_profiles", plan_module.resolve_profiles))
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, ["builtin:p00[1-2]*"])
    code, out, err = run_main(["run", str(config), "--quiet"], capsys)  # the default folder: runs/t-HASH
    assert code == 0, err
    assert "4 conversations (4 new, 0 already done" in err and "Leaderboard (judge: user" in out
    assert counts == {"load_card": 2, "resolve_profiles": 1}  # the user-judge's card and the third party's
    (folder,) = (tmp_path / "runs").iterdir()
    code, _, err = run_main(["run", str(config), "--quiet"], capsys)  # resumed: the same once more
    assert code == 0 and "(0 new, 4 already done" in err
    assert counts == {"load_card": 4, "resolve_profiles": 2}
    assert folder.name.startswith("t-")


def test_the_report_and_export_read_the_profiles_the_run_kept(
    scripted: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = builtin_profiles()[:2]
    profile_file = tmp_path / "mine.yaml"
    profile_file.write_text(yaml.safe_dump([p.model_dump(mode="json") for p in mine]), encoding="utf-8")
    config = write_config(tmp_path, [str(profile_file)])
    code, _, err = run_main(["run", str(config), "--run-dir", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 0, err
    profile_file.unlink()  # the run no longer needs the user's file

    view = load_run(tmp_path / "r")
    assert view.profiles == {p.id: p for p in mine} and not view.notes
    code, _, err = run_main(["export", str(tmp_path / "r"), "--format", "csv"], capsys)
    assert code == 0, err
    with (tmp_path / "r" / "export" / "results.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and {r["problem_type"] for r in rows} == {p.situation.problem_type for p in mine}
    with pytest.raises(DataError, match=r"run\.yaml: field 'profiles'"):  # a new plan reads the files again
        Plan.of(load_config(config), str(config))
