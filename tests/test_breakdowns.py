"""Breakdowns by profile attribute: cell values against a hand computation, the small-n rule (no interval,
no colour, never cited), the text renderings, and ``emoharbor leaderboard RUN --by``."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from emoharbor.assess.dimensions import keys
from emoharbor.cli import cli, main
from emoharbor.profiles.loader import resolve_profiles
from emoharbor.profiles.schema import Profile
from emoharbor.report.breakdowns import ATTRIBUTES, attribute_names, breakdown, breakdowns_html, render_breakdown
from emoharbor.run_view import RunView
from emoharbor.simulate.conversation import Conversation
from emoharbor.stats.bootstrap import MIN_N, bootstrap_ci
from emoharbor.store.records import Assessment
from emoharbor.testing.fake_server import FakeOpenAIServer
from report_helpers import small_run

BASE = resolve_profiles(["builtin:p001*"])[0].model_dump()
# supporter a talks to ten people: five with high openness (scores 5 5 4 5 5), five with low (1 2 1 2 1); the
# first four have a job crisis, the other six a breakup. Supporter b talks to three of them only.
A_SCORES = [5, 5, 4, 5, 5, 1, 2, 1, 2, 1]
B_SCORES = {0: 3, 5: 2, 6: 4}


def profile(i: int) -> Profile:
    d = {**BASE, "id": f"p{i}"}
    traits = {t: 0.5 for t in ("conscientiousness", "extraversion", "agreeableness", "neuroticism")}
    d["personality"] = {**BASE["personality"], **traits, "openness": 0.9 if i < 5 else 0.1}
    d["situation"] = {**BASE["situation"], "problem_type": "job crisis" if i < 4 else "breakup"}
    return Profile.model_validate(d)


def view() -> RunView:
    v = RunView(folder=Path("x"), kind="emoharbor", meta={})
    v.profiles = {f"p{i}": profile(i) for i in range(10)}
    talks = [("a", i, s) for i, s in enumerate(A_SCORES)] + [("b", i, s) for i, s in B_SCORES.items()]
    for sup, i, score in talks:
        cid = f"{sup}{i}"
        v.conversations.append(Conversation(id=cid, profile_id=f"p{i}", supporter=sup))
        v.assessments[cid] = {"user": Assessment(cid, "user", "ok", {k: score for k in keys()})}
    unscored = Conversation(id="a-x", profile_id="p0", supporter="a")  # left out of every cell
    v.conversations.append(unscored)
    v.assessments["a-x"] = {"user": Assessment("a-x", "user", "unscored")}
    return v


def row(data: dict[str, Any], attribute: str, value: str) -> dict[str, Any]:
    return next(r["cells"] for r in data["rows"] if (r["attribute"], r["value"]) == (attribute, value))


def test_cells_match_a_hand_computation() -> None:
    data = breakdown(view())
    assert data["supporters"] == ["a", "b"] and data["min_n"] == MIN_N == 5
    assert data["baseline"]["a"]["mean"] == pytest.approx(31 / 10) and data["baseline"]["a"]["n"] == 10
    high, low = row(data, "openness", "high")["a"], row(data, "openness", "low")["a"]
    assert (high["mean"], high["n"]) == (pytest.approx(24 / 5), 5)
    assert (low["mean"], low["n"]) == (pytest.approx(7 / 5), 5)
    ci = bootstrap_ci([1, 2, 1, 2, 1])
    assert (low["lo"], low["hi"]) == (ci.lo, ci.hi) and 1.0 <= low["lo"] < 1.4 < low["hi"] <= 2.0
    assert low["difference"] == pytest.approx(1.4 - 3.1) and low["side"] == "below"
    assert high["difference"] == pytest.approx(4.8 - 3.1) and high["side"] == "above"
    breakup = row(data, "problem_type", "breakup")["a"]
    assert breakup["n"] == 6 and breakup["mean"] == pytest.approx(np.mean([5, 1, 2, 1, 2, 1]))
    # everyone shares the disclosure pace: the cell is the supporter's average, its interval holds it
    pace = row(data, "disclosure_pace", "medium")["a"]
    assert pace["n"] == 10 and pace["difference"] == pytest.approx(0.0) and pace["side"] is None
    # moderate traits are left out; only attributes with values show up
    assert not [r for r in data["rows"] if r["attribute"] == "neuroticism"]
    assert {r["attribute"] for r in data["rows"]} >= {"problem_type", "hidden_need_type", "age_group", "gender"}


def test_small_n_has_no_interval_no_difference_no_colour_and_is_never_cited() -> None:
    data = breakdown(view())
    crisis = row(data, "problem_type", "job crisis")["a"]  # n = 4 < MIN_N
    assert crisis == {"mean": pytest.approx(19 / 4), "lo": None, "hi": None, "n": 4, "difference": None, "side": None}
    b = row(data, "openness", "low")["b"]
    assert b["n"] == 2 and b["lo"] is None and b["side"] is None
    html = breakdowns_html(view())
    cells = html.split("<tbody>")[1].split("</tbody>")[0].split("<td")
    small = [c for c in cells if "n too small" in c]
    assert small and all("background" not in c and "[" not in c for c in small)
    coloured = [c for c in cells if "background" in c]
    assert len(coloured) == 2 and all("n=5" in c for c in coloured)  # openness high and low of supporter a
    worst_a, worst_b = html.split("<li>")[1:]
    assert "openness: low" in worst_a and "problem type: breakup" in worst_a and "job crisis" not in worst_a
    assert f"no attribute value with n &gt;= {MIN_N} below its average" in worst_b


def test_text_markdown_csv_and_json() -> None:
    data = breakdown(view(), attributes=["openness", "problem type"])
    assert data["attributes"] == ["problem_type", "openness"]
    text = render_breakdown(data, "text")
    assert "## openness" in text and "## problem type" in text and "disclosure" not in text
    assert "1.40 [" in text and "n=5 -1.70 (worse)" in text and "4.75 n=4 (n too small)" in text
    assert "- b: no attribute value with n >= 5 below its average" in text
    assert "| value | a | b |" in render_breakdown(data, "md")
    rows = list(csv.DictReader(io.StringIO(render_breakdown(data, "csv"))))
    assert {(r["attribute"], r["value"], r["supporter"]) for r in rows} >= {("openness", "low", "b")}
    assert next(r for r in rows if r["value"] == "job crisis" and r["supporter"] == "a")["lo"] == ""
    assert json.loads(render_breakdown(data, "json")) == json.loads(json.dumps(data))


def test_attribute_names() -> None:
    assert attribute_names(["all"]) == list(ATTRIBUTES) == attribute_names([])
    assert attribute_names(["Disclosure-pace", "age group"]) == ["disclosure_pace", "age_group"]
    with pytest.raises(ValueError, match="no profile attribute pace: choose from all, problem_type, hidden_need_type"):
        attribute_names(["pace"])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with FakeOpenAIServer() as srv:
        return asyncio.run(small_run(tmp_path_factory.mktemp("bd") / "run", srv))


def test_leaderboard_by_attribute(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["leaderboard", str(run), "--by", "problem_type", "--by", "risk_level"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("# Breakdowns by profile attribute (judge: user")
    assert "## problem type" in r.output and "## risk level" in r.output and "## openness" not in r.output
    assert "n too small" in r.output and "[" not in r.output.split("## problem type")[1]  # one talk per cell
    js = json.loads(runner.invoke(cli, ["leaderboard", str(run), "--by", "all", "--format", "json"]).output)
    assert js["attributes"] == list(ATTRIBUTES) and set(js["supporters"]) == {"plain", "personal"}
    md = runner.invoke(cli, ["leaderboard", str(run), "--by", "gender", "--format", "md"]).output
    assert md.startswith("## Breakdowns") and "### gender" in md
    with pytest.raises(SystemExit) as e:
        main(["leaderboard", str(run), "--by", "pace"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--by" in err and "no profile attribute pace: choose from all, problem_type" in err
    assert "disclosure_pace" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["leaderboard", str(run), "--by", "all", "--judge", "nobody"])
    assert "--judge nobody: no such judge" in capsys.readouterr().err
