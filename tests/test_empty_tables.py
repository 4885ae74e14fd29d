"""A printed table with nothing measured in it (no row, or only rows of n/a) is one line saying what is missing
and what to run: on runs made with the built-in scripted model (its replies never parse, so nothing is scored),
and on the same runs with their finished units taken out (a run stopped before its first unit finished)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from cli_helpers import run_main
from emoharbor.evolve.card import card_markdown
from emoharbor.evolve.evaluate import compare_table
from emoharbor.evolve.grpo_report import report_md
from emoharbor.models.spec import ModelSpec
from emoharbor.realism.render import next_text, whole_text
from emoharbor.tables import RESUME, md_table, text_table
from heart_helpers import write_histories
from report_helpers import invented_record, write_jsonl
from seekers_helpers import rated_files


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def forget(run: Path, *kinds: str) -> None:
    """Take the units of ``kinds`` out of a run: what a run stopped before they finished holds."""
    with sqlite3.connect(run / "run.sqlite") as db:
        db.executemany("DELETE FROM results WHERE kind = ?", [(k,) for k in kinds])


def printed(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    return out


def test_a_table_given_why_prints_one_line_without_rows() -> None:
    why = "no case is finished yet"
    assert text_table(["a", "b"], [], empty=why) == "Nothing measured: no case is finished yet."
    assert text_table(["a", "b"], [], md=True, empty=why) == md_table(["a"], [], why) == f"Nothing measured: {why}."
    assert text_table(["a", "b"], [[1, 2]], empty=why) == text_table(["a", "b"], [[1, 2]])  # rows: as before
    assert text_table(["a", "b"], []) == "a  b\n----"  # no reason given: the bare header, as before


def test_a_leaderboard_says_what_its_judge_did_not_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scripted = {"model": "scripted"}
    cfg = {"name": "t", "profiles": ["builtin:p001*"], "max_turns": 1, "min_turns": 1,
           "roles": {"supporter": [{**scripted, "name": "plain"}, {**scripted, "name": "personal"}],
                     "user": "scripted", "judge": "scripted"}}  # fmt: skip
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    run = tmp_path / "r"
    out = printed(["run", str(tmp_path / "run.yaml"), "--run-dir", str(run), "--quiet"], capsys)
    dims = out.split("# Dimensions\n\n", 1)[1].split("\n\n", 1)[0]
    assert dims == ("Nothing measured: no conversation has scores from the judge 'user' (2 unscored, 0 not assessed): "
                    "`emoharbor assess RUN --judge CARD` rates them.")  # fmt: skip
    assert ("# personal minus plain (paired: the same profiles and repeats)\n\nNothing measured: no profile and "
            "repeat has the judge's scores for both personal and plain.") in out  # fmt: skip
    md = printed(["leaderboard", str(run), "--format", "md"], capsys)
    assert "\nvalidation " not in out and "| validation |" not in md and "## Dimensions\n\nNothing measured: " in md
    assert "# How conversations ended\n\nsupporter" in out  # a table with rows stays
    by = printed(["leaderboard", str(run), "--by", "all"], capsys)
    assert by.strip() == ("Nothing measured: no conversation has scores from the judge 'user': "
                          "`emoharbor assess RUN --judge CARD` rates them.")  # fmt: skip

    forget(run, "conversation", "assessment")
    for fmt in ("text", "md"):
        assert printed(["leaderboard", str(run), "--format", fmt], capsys).strip() == (
            f"Nothing measured: no conversation is finished yet: {RESUME}."
        )
    code, _, err = run_main(["judges", str(run)], capsys)
    assert code != 0 and f"no judgments in {run}: no judge has finished a unit yet: run the command" in err


def test_a_validation_table_of_nothing_but_n_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(e) for e in (1, 2, 4, 5)])
    run = tmp_path / "v"
    out = printed(["validate", "--esconv", str(path), "--model", "scripted", "--judge-model", "scripted",
                   "--max-supporter-turns", "1", "--run-dir", str(run), "--quiet"], capsys)  # fmt: skip
    assert "baseline (all)" in out  # the baselines have figures: the table stays, its judges' rows of n/a too
    length = out.split("controlled for\n\n", 1)[1].split("\n\n", 1)[0]
    assert length == ("Nothing measured: no judge has scored a conversation: `emoharbor assess RUN --judge CARD` "
                      "rates them.")  # fmt: skip

    forget(run, "replay", "assessment")
    out = printed(["leaderboard", str(run), "--format", "md"], capsys)
    assert out.startswith("## Agreement with real help-seekers (ESConv survey)\n\nNothing measured: no conversation "
                          f"is replayed yet: {RESUME}.\n\n- conversations: 0 (none);")  # fmt: skip


def test_a_sensitivity_run_with_no_finished_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    regular, _ = write_histories(tmp_path)
    run = tmp_path / "s"
    out = printed(["sensitivity", "--heart", str(regular), "--model", "scripted", "--judge", "none", "--bad",
                   "generic", "--run-dir", str(run), "--quiet"], capsys)  # fmt: skip
    assert "\nwords " in out and "\nuser reward " in out  # the words scorer has figures: both tables stay
    forget(run, "score")
    out = printed(["leaderboard", str(run)], capsys)
    assert out.splitlines()[0].startswith("Sensitivity: 0 cases (none; 2 cases not finished yet are left out)")
    assert out.splitlines()[1:] == [f"Nothing measured: no case is finished yet: {RESUME}."]


def test_a_seekers_run_with_no_finished_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = rated_files(tmp_path, 2)
    run = tmp_path / "k"
    out = printed(["seekers", *map(str, files), "--user-model", "scripted", "--judge", "none", "--run-dir", str(run),
                   "--quiet"], capsys)  # fmt: skip
    assert "\nwords " in out and "By file (" in out  # the baselines have figures
    forget(run, "score")
    out = printed(["leaderboard", str(run), "--format", "md"], capsys)
    assert out.splitlines()[1:] == [f"Nothing measured: no point is finished yet: {RESUME}."]


def test_the_realism_views_with_nothing_scored() -> None:
    nothing = {"planned": 4, "cuts": 0, "talks": 0, "unscored": 0, "unfinished": 4, "rows": []}
    assert next_text(nothing, md=False)[1:] == [f"Nothing measured: no cut is scored yet: {RESUME}."]
    assert next_text({**nothing, "planned": 0, "unfinished": 0}, md=False) == [
        "Next message: no cut asked for (--cuts 0)"
    ]
    whole = whole_text({"talks": 0, "planned": 2, "unscored": 0, "rows": []}, md=True)
    assert whole == [
        "",
        "Whole talks: 0 of 2 simulated (0 unscored)",
        f"Nothing measured: no talk is scored yet: {RESUME}.",
    ]


def test_the_ladder_with_no_talk_finished(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from emoharbor.ladder.run import KIND, LadderOptions, LadderPlan
    from emoharbor.store.record import open_record

    plan = LadderPlan.of(LadderOptions(limit=2, user=ModelSpec(model="scripted")))
    open_record(tmp_path / "run", KIND, plan.record).close()
    out = printed(["leaderboard", str(tmp_path / "run")], capsys)
    assert out.splitlines()[-1] == f"Nothing measured: no talk is finished yet: {RESUME}."


def test_heart_reports_before_any_judge_or_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    regular, _ = write_histories(tmp_path)
    config = {"histories": [{"path": str(regular)}], "candidates": [{"model": "scripted", "name": "kind"}],
              "judges": [{"model": "scripted", "name": "fair"}], "labeller": "scripted", "bootstrap": 50}  # fmt: skip
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    run = tmp_path / "h"
    code, _, err = run_main(["heart", "generate", str(tmp_path / "h.yaml"), "--run", str(run), "--quiet"], capsys)
    assert code == 0, err
    ratings = printed(["heart", "ratings", str(run)], capsys)
    assert ("## Order consistency (the winner did not flip when the order was swapped)\n\nNothing measured: no pair "
            "was scored in both orders: `emoharbor heart judge RUN` makes the judges' verdicts; see the counts "
            "below.\n") in ratings  # fmt: skip
    strategies = printed(["heart", "strategies", str(run), "--quiet"], capsys)  # the scripted labeller: no label
    assert "## histories: all\n\nNothing measured: none of the " in strategies
    assert " sentences got a label: see the replies by status above.\n" in strategies
    assert "## Degenerate labelling\n\nNothing measured: no sentence got a label.\n" in strategies
    assert "| n/a |" not in strategies

    forget(run, "candidate", "strategy")
    strategies = printed(["heart", "strategies", str(run), "--quiet"], capsys)
    assert f"\n\nNothing measured: no candidate reply is finished yet: {RESUME}.\n" in strategies


def test_a_strategy_check_that_labelled_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(e) for e in (1, 2)])
    out = printed(["heart", "strategy-check", str(path), "--model", "scripted", "--limit", "2", "--run",
                   str(tmp_path / "c"), "--quiet"], capsys)  # fmt: skip
    line = "Nothing measured: no message got a first-sentence label: see the unscored ones in the counts."
    assert out.count(line) == 3 and "| n/a |" not in out  # the figures, the distribution, the confusion


def test_evolve_reports_with_no_step_or_no_judge(tmp_path: Path) -> None:
    summary = {"rewards": {}, "contexts": {}, "train": {"steps": 0, "wall_s": 0.0}, "wall_s": 0.0, "curve": []}
    md = report_md(tmp_path, summary, "")
    assert "## Reward per step\n\nNothing measured: no step logged a reward: `emoharbor evolve grpo` trains" in md
    from emoharbor.store.run_store import RunStore

    RunStore.create_or_resume(tmp_path / "eval", "emoharbor", {"roles": {}}, "h").close()
    assert compare_table(tmp_path / "eval").startswith("Nothing measured: no judge rated a conversation")
    card = card_markdown({"evaluation": {"run": "eval", "reference": "before", "means": {}}})
    assert "Nothing measured: no judge rated a conversation of eval: see `emoharbor leaderboard RUN`." in card
