"""The tidy results table: one row per (unit, judge, dimension) with the supporter and the profile's attributes
(HEART: per history, pair, order, judge, dimension), written by `emoharbor export --format parquet|csv` and read
by `emoharbor.load_results`, pandas and `datasets`."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from emoharbor import load_results
from emoharbor.cli import cli
from emoharbor.testing.fake_server import FakeOpenAIServer
from report_helpers import small_run

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


async def test_an_emoharbor_run_as_one_tidy_table(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv)
    df = load_results(run)
    assert {"run", "unit", "supporter", "repeat", "profile_id", "age_group", "problem_type", "hidden_need_type",
            "openness", "neuroticism", "disclosure_pace", "risk_level", "judge", "dimension", "score",
            "score_expected", "scored", "status"} <= set(df.columns)  # fmt: skip
    user = df[df["judge"] == "user"]
    assert len(user) == 4 * 10  # 2 profiles x 2 supporters, the 10 dimensions of the user-judge
    assert set(user["supporter"]) == {"plain", "personal"} and user["score"].between(1, 5).all()
    assert user.groupby("supporter")["score"].mean().notna().all()  # the table a paper needs, in one line
    # the profile's attributes are on every row: no join with the profiles
    one = user[user["profile_id"] == user["profile_id"].iloc[0]]
    assert one["problem_type"].nunique() == 1
    assert one["age_group"].iloc[0] in ("under 18", "18-24", "25-39", "40-59", "60-74", "75+")

    r = CliRunner().invoke(cli, ["export", str(run), "--format", "parquet", "--out", str(tmp_path / "pq")])
    assert r.exit_code == 0, r.output
    parquet = tmp_path / "pq" / "results.parquet"
    assert r.output.split() == [str(parquet)]
    back = pd.read_parquet(parquet)
    assert len(back) == len(df) and list(back.columns) == list(df.columns)
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_parquet(str(parquet))
    assert ds.num_rows == len(df) and "score" in ds.column_names

    r = CliRunner().invoke(cli, ["export", str(run), "--format", "csv", "--out", str(tmp_path / "csv")])
    assert r.exit_code == 0, r.output
    with (tmp_path / "csv" / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(df) and rows[0]["dimension"] and "conversation.csv" in r.output


async def test_a_heart_run_as_one_tidy_table(tmp_path: Path) -> None:
    from heart_helpers import preferring, run_all, scripted

    store, _ = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    store.close()
    df = load_results(tmp_path / "run")
    assert {"history_id", "subset", "a", "b", "order", "first", "judge", "dimension", "winner", "strength",
            "strength_expected", "status"} <= set(df.columns)  # fmt: skip
    scored = df[df["status"] == "ok"]
    assert len(scored) and set(scored["order"]) == {"ab", "ba"} and scored["winner"].notna().all()


async def test_the_example_notebook_reproduces_the_leaderboard_means(tmp_path: Path) -> None:
    import subprocess
    import sys

    with FakeOpenAIServer() as srv:
        run = await small_run(tmp_path / "eh", srv, "builtin:p00[1-3]*")
    script = Path(__file__).resolve().parents[1] / "examples" / "analyse_results.py"
    done = subprocess.run([sys.executable, str(script), str(run)], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # 2 supporters x (10 dimensions + overall, generic, personal), every one equal to the leaderboard's
    assert "leaderboard means reproduced from the parquet: 26 of 26 equal" in done.stdout
    assert "personal-dimension mean by hidden_need_type" in done.stdout
