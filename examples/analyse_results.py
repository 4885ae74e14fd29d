"""A notebook in a script: an EmoHarbor run's tidy results (parquet) with pandas, the leaderboard's means
reproduced from them exactly, then the tables a paper wants.

    python examples/analyse_results.py runs/demo-HASH [--judge user]

Needs the analysis extra (pip install -e '.[analysis]'). Each step is a cell: run them one by one in Jupyter.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import pandas as pd

from emoharbor.assess.dimensions import group_keys
from emoharbor.assess.leaderboard import RunResults, leaderboard
from emoharbor.results import write_results
from emoharbor.store.run_store import RunStore

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("run", type=Path)
parser.add_argument("--judge", default="user")
args = parser.parse_args()

# %% 1. the run's tidy table, written as parquet (what `emoharbor export RUN --format parquet` writes) and read back
store = RunStore.open_existing(args.run)
out = Path(tempfile.mkdtemp())
df = pd.read_parquet(write_results(store, out, "parquet"))
print(f"{len(df)} rows: {df['unit'].nunique()} conversations, judges {sorted(df['judge'].unique())}")

# %% 2. the scored rows of one judge; a conversation's score over a set of dimensions is the mean of its scored ones
mine = df[(df["judge"] == args.judge) & df["scored"]]


def conversation_means(rows: pd.DataFrame, dims: list[str] | None = None) -> pd.DataFrame:
    rows = rows if dims is None else rows[rows["dimension"].isin(dims)]
    return rows.groupby(["supporter", "unit"], as_index=False)["score"].mean()


per_dimension = mine.pivot_table(index="dimension", columns="supporter", values="score", aggfunc="mean")
groups = {
    "overall": conversation_means(mine),
    "generic": conversation_means(mine, group_keys("generic")),
    "personal": conversation_means(mine, group_keys("personal")),
}
group_means = pd.DataFrame({g: c.groupby("supporter")["score"].mean() for g, c in groups.items()})

# %% 3. the same means from the leaderboard, compared number by number
board = leaderboard(RunResults.read(store), args.judge)
checked = mismatched = 0
for row in board["rows"]:
    sup = row["supporter"]
    pairs = [(row["dimensions"][d]["mean"], per_dimension.get(sup, {}).get(d)) for d in board["dimension_keys"]]
    pairs += [(row[g]["mean"], group_means[g].get(sup)) for g in groups]
    for theirs, ours in pairs:
        if theirs is None and (ours is None or (isinstance(ours, float) and math.isnan(ours))):
            continue
        checked += 1
        mismatched += theirs is None or ours is None or abs(theirs - ours) > 1e-12
print(
    f"leaderboard means reproduced from the parquet: {checked - mismatched} of {checked} equal"
    + ("" if not mismatched else f", {mismatched} DIFFER")
)

# %% 4. the paper's table: each supporter's mean per dimension, then the group means
print("\nmean score per dimension (1-5), judge:", args.judge)
print(pd.concat([per_dimension, group_means.T]).round(2).to_string())

# %% 5. who is failed: the personal mean per kind of person (conversations, not rows, are the unit)
personal = groups["personal"].merge(df[["unit", "hidden_need_type", "disclosure_pace"]].drop_duplicates(), on="unit")
for attribute in ("hidden_need_type", "disclosure_pace"):
    table = personal.pivot_table(index=attribute, columns="supporter", values="score", aggfunc=["mean", "count"])
    print(f"\npersonal-dimension mean by {attribute} (count = conversations)")
    print(table.round(2).to_string())
store.close()
raise SystemExit(1 if mismatched else 0)
