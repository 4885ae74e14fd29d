"""``emoharbor heart ...`` on scripted models: every stage, every output format, bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from emoharbor.cli import cli, main
from heart_helpers import preferring, run_all, scripted, write_histories


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def write_config(folder: Path, **extra: object) -> Path:
    write_histories(folder)
    cfg = {
        "name": "t",
        "histories": [{"path": "regular.json"}, {"path": "adversarial.json", "subset": "adversarial"}],
        "candidates": [{"model": "scripted", "name": "echo", "replies": ["I hear you."]}],
        # a judge whose reply never names one of the two ids: every judgement is unscored
        "judges": [{"model": "scripted", "name": "mute", "replies": ['{"overall": {"winner": "nobody"}}']}],
        "bootstrap": 20,
        **extra,
    }
    path = folder / "heart.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_cli_stages_with_an_unscoring_judge(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    run = tmp_path / "run"
    r = CliRunner().invoke(cli, ["heart", "generate", str(cfg), "--run", str(run), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "generated 10 candidates (7 ok, 3 unscored, 0 errors) for 5 histories; 10 done now" in r.output
    assert f"run folder: {run}" in r.output and "skipped 1 (1 ends on supporter;" in r.output
    r = CliRunner().invoke(cli, ["heart", "judge", str(run), "--quiet"])
    assert r.exit_code == 0, r.output
    # echo-human on regular:0 and :1, two orders
    assert "judged 2 pairs in both orders by every judge: 4 judgements (0 ok, 4 unscored, 0 errors)" in r.output
    assert "pairs left out: 3 with an unusable candidate" in r.output and "{" not in r.output
    r = CliRunner().invoke(cli, ["heart", "ratings", str(run)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("# HEART ratings: t (folder run)\n")
    assert "nothing to rate" in r.output and "- judgements by status: mute: 4 unscored" in r.output
    assert "- events: 3 human reply missing, 4 judge retried, 4 judge unscored" in r.output
    assert "- stage judge: judged 2 pairs" in r.output and "{" not in r.output.split("## Counts")[1]


async def test_report_formats(tmp_path: Path) -> None:
    store, _ = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    store.close()
    run = str(tmp_path / "run")
    runner = CliRunner()
    md = runner.invoke(cli, ["heart", "ratings", run, "--bootstrap", "30"])
    assert md.exit_code == 0, md.output
    assert "## plain — judge: fair, histories: all" in md.output and "## strength" in md.output
    assert "Order consistency" in md.output and "| kind |" in md.output
    js = json.loads(runner.invoke(cli, ["heart", "ratings", run, "--format", "json", "--bootstrap", "0"]).output)
    assert {"ratings", "win_rates_vs_human", "order_consistency", "overview"} <= set(js)
    out = runner.invoke(cli, ["heart", "ratings", run, "--format", "csv", "--table", "order_consistency"]).output
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["judge"] == "fair" and rows[0]["rate"] == "1.0"
    agr = runner.invoke(cli, ["heart", "agreement", run])
    assert agr.exit_code == 0 and "Judge biases" in agr.output and "keyword lexicon" in agr.output
    strat = runner.invoke(cli, ["heart", "strategies", run, "--no-label", "--format", "csv"])
    assert strat.exit_code == 0 and strat.output.strip() == ""  # nothing labelled yet: an empty table
    outfile = tmp_path / "r.md"
    assert runner.invoke(cli, ["heart", "ratings", run, "--out", str(outfile)]).exit_code == 0
    assert outfile.read_text(encoding="utf-8").startswith("# HEART ratings")


def test_user_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_config(tmp_path, dimensions=["warmth"])
    with pytest.raises(SystemExit) as e:
        main(["heart", "generate", str(bad), "--run", str(tmp_path / "x")])
    assert e.value.code == 2
    assert "unknown dimensions ['warmth']" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("histories: [\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["heart", "generate", str(broken)])
    assert "not valid YAML" in capsys.readouterr().err
    cfg = write_config(tmp_path)
    (tmp_path / "regular.json").write_text("[{", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["heart", "generate", str(cfg), "--run", str(tmp_path / "y"), "--quiet"])
    assert "regular.json: not valid JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["heart", "ratings", str(tmp_path / "nowhere")])
    assert "is not a run folder" in capsys.readouterr().err


async def test_csv_unknown_table_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    store.close()
    with pytest.raises(SystemExit):
        main(["heart", "ratings", str(tmp_path / "run"), "--format", "csv", "--table", "nope"])
    assert "choose one of ratings, win_rates_vs_human, order_consistency" in capsys.readouterr().err


async def test_one_subset_is_shown_once_and_reports_are_titled_by_the_run(tmp_path: Path) -> None:
    from emoharbor.heart.analysis import reports
    from emoharbor.heart.section import heart_html
    from emoharbor.heart.stages import pipeline
    from heart_helpers import blunt_reply, kind_reply, make_config, models, plan_of
    from test_heart_strategies import labeller

    full = make_config(tmp_path)
    config = full.model_copy(update={"histories": full.histories[:1], "name": "solo"})  # regular histories only
    table = {"kind": scripted(kind_reply), "blunt": scripted(blunt_reply), "fair": scripted(preferring("here for"))}
    store = pipeline.open_run(tmp_path / "solo-1234", plan_of(config, tmp_path))
    await pipeline.generate(store, plan_of(config, tmp_path), models(table), progress=False)
    await pipeline.judge(store, plan_of(config, tmp_path), models(table), progress=False)
    await pipeline.label(store, plan_of(config, tmp_path), models({"scripted": scripted(labeller)}), progress=False)
    data = reports.ratings_report(store, config)
    assert {r["subset"] for r in data["ratings"] + data["win_rates_vs_human"]} == {"all"}
    assert {r["subset"] for r in reports.strategies_report(store, config, tmp_path)["profiles"]} == {"all"}
    store.close()
    run = str(tmp_path / "solo-1234")
    md = CliRunner().invoke(cli, ["heart", "ratings", run]).output
    assert md.startswith("# HEART ratings: solo-1234\n")
    assert md.count("## plain — judge: fair") == 1 and md.count("## strength — judge: fair") == 1
    assert "- histories used: 3 regular" in md
    agreement = CliRunner().invoke(cli, ["heart", "agreement", run]).output
    assert agreement.startswith("# HEART agreement and judge biases: solo-1234\n")
    strategies = CliRunner().invoke(cli, ["heart", "strategies", run, "--no-label"]).output
    assert strategies.startswith("# HEART support strategies: solo-1234\n") and strategies.count("## histories:") == 1
    html = heart_html(tmp_path / "solo-1234")
    assert html.count("<h4>plain: judge fair") == 1 and html.count("<p>histories: ") == 1
    assert "<li>stage judge: judged " in html and "{" not in html.split("<h4>Counts</h4>")[1]
