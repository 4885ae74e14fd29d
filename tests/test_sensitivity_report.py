"""A sensitivity run in the commands that read any run (report, leaderboard, export, judges), the simulated
user's measured record and the run-health line that quotes it, and HEART's length-controlled columns in
the report. Scripted scorers only (test_sensitivity's), no model."""

from __future__ import annotations

import asyncio
import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from emoharbor import kinds, measurements
from emoharbor.cli import cli
from emoharbor.heart.section import _rating, _win_rate, heart_html
from emoharbor.report.build import build_html
from emoharbor.report.health import health_html
from emoharbor.report.judges_table import header, judges_table, table_cells
from emoharbor.report.runs import load_run
from emoharbor.results import load_results, tidy_rows
from emoharbor.run_view import RunView
from emoharbor.scoring.judges import row_judge
from emoharbor.sensitivity.analysis import sensitivity_table
from emoharbor.sensitivity.bad import MAKERS
from emoharbor.sensitivity.kind import tidy
from emoharbor.sensitivity.names import ALL
from emoharbor.sensitivity.record import line, record
from emoharbor.simulate.chain_user import REACTION_PROMPTS
from emoharbor.store.run_store import RunStore
from evolve_helpers import esconv_file
from report_helpers import make_runs
from test_sensitivity import run_with

PAIRWISE = "heart_pairwise:scripted"
CARD = "third_party_reply+argmax:scripted"


def _suite(factory: pytest.TempPathFactory, name: str, limit: int) -> Path:
    folder = factory.mktemp(name) / "s"
    with pytest.MonkeyPatch.context() as mp:
        run_with(folder, esconv_file("valid.jsonl"), mp, limit=limit)
    return folder


@pytest.fixture(scope="module")
def sens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sensitivity run of 6 cases (enough for intervals) with the scripted scorers of test_sensitivity."""
    return _suite(tmp_path_factory, "sens", 6)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same with 3 cases: under the small-n rule."""
    return _suite(tmp_path_factory, "small", 3)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return asyncio.run(make_runs(tmp_path_factory.mktemp("runs")))


def table_of(folder: Path, seed: int = 0) -> dict[str, Any]:
    store = RunStore.open_existing(folder)
    try:
        return sensitivity_table(store, seed=seed)
    finally:
        store.close()


def test_the_kind_is_registered_with_its_parts() -> None:
    assert kinds.title("sensitivity") == "a sensitivity run (emoharbor sensitivity)"
    for part in ("board", "view", "html", "export", "tidy", "check", "execute"):
        assert kinds.has("sensitivity", part), part
    assert not kinds.has("sensitivity", "rejudge")
    assert "sensitivity" in kinds.with_part("board") and "sensitivity" in kinds.with_part("tidy")


def test_the_report_shows_the_table_as_a_heat_map(sens: Path) -> None:
    data = table_of(sens)
    html = build_html([sens])
    part = html[html.index("Does each scorer prefer the real reply?") :]
    assert 'class="data sortable sensitivity"' in part and 'id="run0-s-sensitivity"' in part
    assert "6 cases" in part and "simulated user <b>scripted</b>" in part and "Run health" in part
    body = part[part.index("<tbody>") : part.index("</tbody>")]
    rows = re.findall(r"<tr>(.*?)</tr>", body)
    assert len(rows) == len(data["rows"])
    for r, tr in zip(data["rows"], rows, strict=True):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr)
        assert cells[0].startswith(r["scorer"].replace("&", "&amp;"))
        assert len(cells) == 1 + len(data["kinds"]) + 6
        for k, cell in zip(data["kinds"], cells[1:], strict=False):
            share = r["cells"][k]["share"]
            got = re.search(r'data-sort="([0-9.]+)"', cell)
            assert got is not None and float(got.group(1)) == pytest.approx(share, abs=1e-6)
        whole = r[ALL]
        assert f"{100 * whole['share']:.0f}%" in cells[1 + len(data["kinds"])]
        if whole["lo"] is not None:
            assert f"[{100 * whole['lo']:.0f}, {100 * whole['hi']:.0f}]" in cells[1 + len(data["kinds"])]
        assert cells[-4] == str(r["pairs"])
    by = {r["scorer"]: r for r in data["rows"]}
    assert by["user reward"][ALL]["share"] == pytest.approx(1.0) and by["user reward"][ALL]["lo"] is not None
    # the scripted user likes the real reply every time: its cells are green; the pairwise judge's ties white
    user_tr = next(tr for tr in rows if tr.startswith("<td>user reward</td>"))
    assert "rgba(0,255,0,0.55)" in user_tr
    pair_tr = next(tr for tr in rows if PAIRWISE in tr)
    assert "(pairwise)" in pair_tr and "rgba(255,255,255,0.55)" in pair_tr and "ties 60" in pair_tr


def test_under_min_n_the_section_says_n_too_small(small: Path) -> None:
    html = build_html([small])
    part = html[html.index("Does each scorer prefer the real reply?") :]
    assert "n too small" in part and "rgba(" not in part.split("</table>")[0]  # nothing coloured


def test_leaderboard_report_format_and_export(sens: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["leaderboard", str(sens)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("Sensitivity: 6 cases") and "user reward" in r.output
    data = json.loads(runner.invoke(cli, ["report", str(sens), "--format", "json"]).output)
    want = table_of(sens)
    assert data["cases"] == 6 and [x["scorer"] for x in data["rows"]] == [x["scorer"] for x in want["rows"]]
    assert data["rows"][0][ALL]["share"] == pytest.approx(want["rows"][0][ALL]["share"])
    md = runner.invoke(cli, ["report", str(sens), "--format", "md"]).output
    assert "| scorer |" in md
    out = tmp_path / "exp"
    r = runner.invoke(cli, ["export", str(sens), "--format", "csv", "--out", str(out)])
    assert r.exit_code == 0, r.output
    names = {Path(p).name for p in r.output.split()}
    assert {"sensitivity.csv", "results.csv", "case.csv", "score.csv", "pair.csv", "calls.csv"} <= names
    with (out / "sensitivity.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(want["rows"]) * (len(want["kinds"]) + 1)
    got = next(x for x in rows if x["scorer"] == "words" and x["kind"] == "generic")
    assert float(got["share"]) == pytest.approx(next(x for x in want["rows"] if x["scorer"] == "words")["cells"]
                                                ["generic"]["share"])  # fmt: skip


def test_the_tidy_table_reproduces_the_shares(sens: Path) -> None:
    store = RunStore.open_existing(sens)
    try:
        rows = tidy_rows(store)
        assert rows == tidy(store)
    finally:
        store.close()
    want = table_of(sens)
    for r in want["rows"]:
        for kind in MAKERS:
            mine = [x["outcome"] for x in rows if x["scorer"] == r["scorer"] and x["kind"] == kind]
            scored = [o for o in mine if o is not None]
            assert len(mine) == 6, (r["scorer"], kind)
            assert sum(scored) / len(scored) == pytest.approx(r["cells"][kind]["share"]), (r["scorer"], kind)
    assert {x["pairwise"] for x in rows if x["scorer"] == PAIRWISE} == {True}
    pytest.importorskip("pandas")
    df = load_results(sens)
    assert len(df) == len(rows)


# -- emoharbor judges ----------------------------------------------------------------------------------


def test_sensitivity_rows_map_to_judges() -> None:
    assert row_judge("user reward", False) == ("user", "argmax")
    assert row_judge("user reward (expected)", False) == ("user", "expected")
    assert row_judge("third_party_reply:m (written)", False) == ("third_party_reply:m", "argmax")
    assert row_judge("third_party_reply:m (expected)", False) == ("third_party_reply:m", "expected")
    assert row_judge("heart_pairwise:m", True) == ("heart_pairwise:m", "argmax")
    for other in ("words", "user reaction", "user fit (expected)", "user trust"):
        assert row_judge(other, False) is None


def test_the_judges_table_reads_sensitivity_runs(sens: Path, small: Path, runs: dict[str, Path]) -> None:
    data = table_of(sens)
    by = {r["scorer"]: r for r in data["rows"]}
    rows = {(r["judge"], r["scoring"]): r for r in judges_table([small, sens, runs["val"]])}
    for (judge, scoring), scorer in [(("user", "argmax"), "user reward"), ((CARD, "argmax"), f"{CARD} (written)"),
                                     ((PAIRWISE, "argmax"), PAIRWISE)]:  # fmt: skip
        row = rows[(judge, scoring)]
        assert row["sensitivity_run"] == str(sens) and row["sensitivity_n"] == 6  # the run with most cases
        c = by[scorer][ALL]
        assert row["sensitivity"]["value"] == pytest.approx(c["share"])
        assert row["sensitivity"]["lo"] == pytest.approx(c["lo"]) and row["sensitivity"]["hi"] == pytest.approx(c["hi"])
        assert row["sensitivity_ties"] == pytest.approx(by[scorer]["tie_rate"])
    # the simulated user's reward and the validate run's user-judge share a row; its other columns stay
    user = rows[("user", "argmax")]
    assert user["validate_n"] == 4 and user["auroc"] is not None
    assert user["judgments"] == 4 + (6 + 3) * 11  # 4 replays; 11 replies in each case of both runs
    pair = rows[(PAIRWISE, "argmax")]
    assert pair["judgments"] == (6 + 3) * 10 * 2 and pair["unscored_rate"] == 0 and pair["card"].startswith("heart")
    assert pair["sensitivity_ties"] == pytest.approx(1.0)  # the scripted judge always picks the first shown
    assert ("words", "argmax") not in rows and (CARD, "expected") not in rows
    col = header().index("prefers the real reply")
    assert table_cells([user])[0][col].startswith("100% [100%, 100%] n=6, ties 0%")
    assert table_cells([pair])[0][col] == "50% [50%, 50%] n=6, ties 100%"
    r = CliRunner().invoke(cli, ["judges", str(sens), "--format", "md"])
    assert r.exit_code == 0, r.output
    assert "prefers the real reply" in r.output and "ties 100%" in r.output


# -- the measured record and the run health ---------------------------------------------------------


def test_the_prompt_names_match_the_run() -> None:
    assert measurements.PROMPTS == REACTION_PROMPTS


def test_a_record_is_written_looked_up_and_quoted(sens: Path, runs: dict[str, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(measurements, "SHIPPED", tmp_path / "none")  # the records emoharbor ships are not looked at
    store = RunStore.open_existing(sens)
    try:
        versions = store.config()["prompt_versions"]
        path = record(store, sensitivity_table, ALL)
    finally:
        store.close()
    assert path is not None and path.parent == tmp_path / "cache" / "sensitivity"
    assert path.name.startswith("scripted-")
    rec = json.loads(path.read_text(encoding="utf-8"))
    want = {r["scorer"]: r for r in table_of(sens)["rows"]}["user reward"]
    assert rec["user_model"] == "scripted" and rec["cases"] == 6 and rec["prompt_versions"] == versions
    assert rec["run"] == str(sens.resolve()) and rec["headline"] == "user reward"
    got = rec["rows"]["user reward"]
    assert got["share"] == pytest.approx(want[ALL]["share"]) and got["lo"] == pytest.approx(want[ALL]["lo"])
    assert got["tie_rate"] == pytest.approx(want["tie_rate"])
    assert got["kinds"]["generic"] == pytest.approx(want["cells"]["generic"]["share"])
    assert set(rec["rows"]) == {"user reward", "user reaction", "user fit", "user relief", "user trust"}
    # looked up by model and the user's prompts (a run's may name more), not by other prompts
    assert measurements.lookup("scripted", {**versions, "supporter_default": "x"}) == rec
    assert measurements.lookup("scripted", {**versions, "user_feel": "other"}) is None
    assert measurements.lookup("other-model", versions) is None
    assert measurements.lookup("scripted", {"user_system": versions["user_system"]}) is None
    # of several matching records, the one with the most cases (a later smoke test does not replace it)...
    bigger = {**rec, "date": "2000-01-01T00:00:00+00:00", "cases": 99}
    (path.parent / f"{measurements.key_prefix('scripted', versions)}-big.json").write_text(json.dumps(bigger))
    assert measurements.lookup("scripted", versions)["cases"] == 99  # type: ignore[index]
    # ... and the newest among equals
    newer = {**bigger, "date": "2100-01-01T00:00:00+00:00", "run": "newer"}
    (path.parent / f"{measurements.key_prefix('scripted', versions)}-new.json").write_text(json.dumps(newer))
    assert measurements.lookup("scripted", versions)["run"] == "newer"  # type: ignore[index]
    for extra in ("big", "new"):
        (path.parent / f"{measurements.key_prefix('scripted', versions)}-{extra}.json").unlink()
    # the health of an EmoHarbor run whose user has not been measured (model "fake"): a note
    html = build_html([runs["eh"]])
    assert "The simulated user&#x27;s sensitivity has not been measured for fake with these prompts" in html
    assert "<code>emoharbor sensitivity --esconv FILE --model fake</code>" in html
    view = load_run(runs["eh"])
    assert view.user_model == "fake" and measurements.chain_versions(view.user_prompts) is not None
    # ... and once a record for that model and those prompts is there, the line
    fake = {**rec, "user_model": "fake", "prompt_versions": measurements.chain_versions(view.user_prompts)}
    fake_path = path.parent / f"{measurements.key_prefix('fake', fake['prompt_versions'])}-x.json"
    fake_path.write_text(json.dumps(fake))
    said = (f"Simulated user&#x27;s measured sensitivity (emoharbor sensitivity, 6 cases, {rec['date'][:10]}): "
            "prefers the real reply in 100% [100, 100] of pairs (ties 0%)")  # fmt: skip
    html = build_html([runs["eh"]])
    assert said in html and "has not been measured" not in html
    health = html[html.index("<h3>Run health</h3>") :]
    assert said in health
    # a validate run: its user model from its config, its prompts from the replays that went through the chain
    val = load_run(runs["val"])
    assert val.user_model == "local:qwen1.5b" and measurements.chain_versions(val.user_prompts) is not None
    assert "has not been measured for local:qwen1.5b" in health_html(val)
    val.user_model = "fake"
    assert said in health_html(val)
    # a view without a simulated user's reactions (a simple user): no line at all
    assert "sensitivity" not in health_html(RunView(folder=tmp_path, kind="emoharbor", meta={}))


def test_a_run_without_a_user_writes_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    store = RunStore.create_or_resume(tmp_path / "r", "sensitivity", {"user": None, "prompt_versions": {}}, "h")
    try:
        assert record(store, sensitivity_table, ALL) is None
    finally:
        store.close()
    assert not (tmp_path / "cache" / "sensitivity").exists()


def test_the_sentence_prefers_the_expected_reward_and_says_n_too_small() -> None:
    row = {"share": 0.75, "lo": None, "hi": None, "tie_rate": 0.25}
    rec = {"cases": 3, "date": "2025-02-03T10:00:00+00:00", "headline": "user reward (expected)",
           "rows": {"user reward (expected)": row}}  # fmt: skip
    assert line(rec) == (
        "Simulated user's measured sensitivity (emoharbor sensitivity, 3 cases, 2025-02-03): prefers the real "
        "reply in 75% (n too small) of pairs (ties 25%)"
    )
    assert measurements.HEADLINES[0] == "user reward (expected)"


# -- HEART's length-controlled figures -----------------------------------------------------------------


def test_rating_and_win_rate_cells_show_the_length_controlled_figures() -> None:
    row = {"rating": 1050.0, "low": 1000.0, "high": 1100.0, "histories": 12, "lc_rating": 1010.0,
           "lc_low": 980.0, "lc_high": 1040.0}  # fmt: skip
    cell = _rating(row)
    assert "1050.00</span> <small>[1000.00, 1100.00]</small>" in cell and "length-controlled" in cell
    assert "1010.00</span> <small>[980.00, 1040.00]</small>" in cell
    assert cell.count("data-sort") == 1  # sorts by the raw rating
    small = _rating({**row, "histories": 3, "low": None, "high": None, "lc_low": None, "lc_high": None})
    assert small.count("n too small") == 2 and "[" not in small
    wr = {"win_rate": 0.7, "low": 0.6, "high": 0.8, "histories": 10, "pairs": 10, "lc_win_rate": 0.55,
          "lc_low": 0.45, "lc_high": 0.65}  # fmt: skip
    cell = _win_rate(wr)
    assert "0.700" in cell and "[0.600, 0.800]" in cell
    assert "0.550" in cell and "[0.450, 0.650]" in cell and "n=10" in cell
    small = _win_rate({**wr, "histories": 2, "low": None, "high": None, "lc_low": None, "lc_high": None})
    assert small.count("n too small") == 2


async def test_the_heart_section_has_length_controlled_columns(tmp_path: Path) -> None:
    from emoharbor.heart.analysis.reports import ratings_report
    from emoharbor.heart.stages.pipeline import read_run
    from heart_helpers import preferring, run_all, scripted

    store, _ = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    store.close()
    html = heart_html(tmp_path / "run")
    store, config, _ = read_run(tmp_path / "run")
    try:
        data = ratings_report(store, config)
    finally:
        store.close()
    assert html.count('class="data sortable heart-ratings"') == 6  # as before: 2 variants x 3 subsets
    ratings = html[html.index("heart-ratings") : html.index("heart-winrates")]
    assert "length-controlled" in ratings and "n too small" in ratings  # 2-3 histories: no interval
    row = next(r for r in data["ratings"] if r["lc_rating"] is not None and r["dimension"] == "overall")
    assert f"{row['lc_rating']:.2f}" in ratings
    winrates = html[html.index("heart-winrates") :].split("</table>")[0]
    wr = next(r for r in data["win_rates_vs_human"] if r["lc_win_rate"] is not None)
    assert f"{wr['lc_win_rate']:.3f}" in winrates and "length-controlled" in winrates
    assert "Length term" in html and 'class="data sortable heart-length"' in html


def test_two_sensitivity_runs_are_compared_pairwise_on_the_cases_both_scored(sens: Path, small: Path) -> None:
    # the same scripted scorers on 6 and on the first 3 of those cases: 3 cases in common, no difference
    out = CliRunner().invoke(cli, ["report", str(small), str(sens), "--format", "json"])
    assert out.exit_code == 0, out.output
    paired = json.loads(out.output)["paired"]["comparisons"][0]
    assert (paired["first"], paired["other"]) == (str(small), str(sens))
    user = {r["scorer"]: r for r in paired["rows"]}["user reward"]
    assert user["cases"] == 3 and user["difference"]["mean"] == pytest.approx(0.0)
    table = {r["scorer"]: r for r in table_of(small)["rows"]}
    assert user["first"] == pytest.approx(table["user reward"][ALL]["share"])
    md = CliRunner().invoke(cli, ["report", str(small), str(sens), "--format", "md"]).output
    assert "## Paired" in md and "| user reward | 3 |" in md


def test_the_paired_difference_is_the_later_run_minus_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from emoharbor.sensitivity import compare

    def outcome_rows(store: Any) -> list[dict[str, Any]]:  # case c0: 1 -> 0.5 on both kinds; c1..c5: 1 -> 1
        later = store == "b"
        return [{"scorer": "user reward", "case": f"c{i}", "kind": k, "outcome": 0.5 if later and i == 0 else 1.0}
                for i in range(6) for k in ("generic", "advice")]  # fmt: skip

    monkeypatch.setattr(compare, "tidy", outcome_rows)
    (row,) = compare.paired_rows("a", "b")  # type: ignore[arg-type]
    assert row["cases"] == 6 and row["first"] == pytest.approx(1.0)
    assert row["other"] == pytest.approx(1 - 0.5 / 6) and row["difference"]["mean"] == pytest.approx(-0.5 / 6)
    assert row["difference"]["lo"] <= row["difference"]["mean"] <= row["difference"]["hi"] <= 0
