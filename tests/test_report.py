"""`emoharbor report`: the HTML report over EmoHarbor, validate and HEART runs, and the leaderboard formats."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from emoharbor.cli import cli
from emoharbor.report.build import build_html
from emoharbor.report.svg import Series, trajectories
from emoharbor.store.run_store import RunStore
from report_helpers import make_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return asyncio.run(make_runs(tmp_path_factory.mktemp("runs")))


def test_html_report_of_an_emoharbor_run_has_every_part(runs: dict[str, Path]) -> None:
    html = build_html([runs["eh"]])
    assert "<script src" not in html and "<link " not in html and "http://" not in html and "https://" not in html
    assert html.count('class="chart dots"') == 2  # per judge: every supporter per dimension on one axis
    assert html.count('class="chart dots forest"') == 2  # per judge: the paired differences
    assert html.count('class="data sortable differences"') == 2  # per judge: personal minus plain
    assert "Paired differences: each supporter minus plain" in html and "n too small" in html  # 2 pairs only
    assert html.count('class="chart traj"') == 3  # all supporters' means, then one per supporter
    assert html.count('<details class="conv"') == 4  # 2 profiles x 2 supporters
    assert 'id="run0-eh-lb-user"' in html and "third_party:fake" in html
    assert "Where personalisation fails" in html and "problem type" in html and "hidden need" in html
    for part in ("How conversations ended", "Scoring", "Tokens, cost, retries and errors per role", "Events"):
        assert part in html
    assert html.count('class="inner"') >= 4  # inner records beside the user's turns
    assert "<q>" in html  # evidence quotes
    assert "$" not in re.sub(r"<script>.*?</script>", "", html, flags=re.S).replace("cost USD", "")


def test_validate_run_report_and_several_runs_side_by_side(runs: dict[str, Path]) -> None:
    html = build_html([runs["eh"], runs["val"]])
    assert 'id="runs-compared"' in html and "Runs side by side" in html
    assert "Agreement with real help-seekers" in html and 'id="run1-val-validation"' in html
    assert "rho vs seeker empathy" in html and "AUROC success vs failed" in html
    assert "seeker's survey: empathy" in html  # the real ratings beside each replayed conversation
    assert html.count('class="chart scatter"') == 2  # one per judge: its score against the seeker's rating
    assert html.count('class="dot"') == 8  # 4 conversations, each scored by both judges
    assert "mine:3: seeker empathy 5, relevance 5, user overall 5.00" in html
    assert html.count('<details class="conv"') == 8


async def test_heart_and_unknown_runs_get_a_short_section(tmp_path: Path, runs: dict[str, Path]) -> None:
    from emoharbor.heart.stages import pipeline
    from heart_helpers import models, plan_of, preferring, run_all, scripted
    from test_heart_strategies import labeller

    store, config = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    await pipeline.label(store, plan_of(config, tmp_path), models({"scripted": scripted(labeller)}), progress=False)
    store.close()
    other = RunStore.create_or_resume(tmp_path / "other", "evolve", {}, "h")
    other.close()
    html = build_html([runs["eh"], tmp_path / "run", tmp_path / "other"])
    assert "not an EmoHarbor run" in html
    assert "holds a &#x27;evolve&#x27; run" in html
    heart = html[html.index("A HEART run") :]
    assert "over 50 bootstrap resamples" in heart  # the run's own setting, as `heart ratings` uses
    assert heart.count('class="data sortable heart-ratings"') == 6  # 2 variants x (all, regular, adversarial)
    assert "overall W-T-L" in heart and "Order consistency" in heart
    winrates = heart[heart.index("heart-winrates") : heart.index("</table>", heart.index("heart-winrates"))]
    assert "<td>kind</td>" in winrates and "<td>blunt</td>" in winrates and "n=2" in winrates
    assert "Judge biases" in heart and "first_shown_wins" in heart and "No human judgments imported" in heart
    assert heart.count('class="data sortable heart-strategies"') == 3  # all, adversarial, regular
    assert "Chit Chat" in heart and "candidate replies by status: " in heart


def test_report_command_writes_html_and_leaderboard_formats(runs: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "r.html"
    r = runner.invoke(cli, ["report", str(runs["eh"]), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == str(out) and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    js = json.loads(runner.invoke(cli, ["report", str(runs["eh"]), "--format", "json"]).output)
    assert {row["supporter"] for row in js["rows"]} == {"plain", "personal"}
    assert js["baseline"] == "plain" and js["differences"]["personal"]["overall"]["n"] == 2
    md = runner.invoke(cli, ["report", str(runs["eh"]), "--format", "md"]).output
    assert md.startswith("## Leaderboard (judge: user")
    both = runner.invoke(cli, ["report", str(runs["eh"]), str(runs["val"]), "--format", "csv"]).output
    rows = list(csv.reader(io.StringIO(both)))
    assert rows[0][0] == "run" and {r[0] for r in rows[1:]} == {str(runs["eh"]), str(runs["val"])}
    diffs = [r for r in rows if r[0] == str(runs["eh"]) and r[2].startswith("diff:")]
    # 10 dimensions, the 3 group means and the supporter's words a message
    assert len(diffs) == 14 and {r[1] for r in diffs} == {"personal"} and {r[7] for r in diffs} == {"plain"}
    bad = runner.invoke(cli, ["report", str(tmp_path)])
    assert bad.exit_code != 0 and "not a run folder" in str(bad.exception or bad.output)


def test_charts_are_well_formed_svg_with_missing_values() -> None:
    import xml.etree.ElementTree as ET

    fig = trajectories([Series("s", "#111", [50.0, 40.0, None], [45.0, 30.0, None], [55.0, 50.0, None], [2, 2, 0],
                               [("c1", [50, 40]), ("c2", [50])])], title="x")  # fmt: skip
    ET.fromstring(fig)
    assert fig.count("<polyline") == 2  # one conversation line (c2 has one point) and the mean
