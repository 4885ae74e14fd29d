"""A run's results as one tidy table, for a notebook or a paper table; each kind of run gives its own rows
(``RunKind.tidy``). A run of judged units has one row per (run, unit, judge, dimension) with the score (and the
probability-weighted score where there is one), whether it was scored, the supporter, the repeat and the
profile's attributes (``assessment_rows``, which such kinds share); a HEART run one row per (history, pair,
order, judge, dimension) with the winner and the strength; a sensitivity run one row per (case, bad reply's
maker, scorer) with both replies' scores and the outcome. ``load_results(RUN)`` gives it as a pandas
DataFrame; ``emoharbor export --format parquet|csv`` writes it as ``results.parquet`` / ``results.csv``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import kinds
from .errors import EmoharborError
from .profiles.schema import Profile
from .profiles.stats import TRAITS, age_group
from .store import records
from .store.run_store import RunStore


def profile_columns(p: Profile | None) -> dict[str, Any]:
    """The attributes of a profile that results are broken down by (None: the columns, empty)."""
    if p is None:
        return dict.fromkeys(["age_group", "gender", "culture", "problem_type", "hidden_need_type", *TRAITS,
                              "disclosure_pace", "risk_level"])  # fmt: skip
    return {
        "age_group": age_group(p.age),
        "gender": p.gender or None,
        "culture": p.culture or None,
        "problem_type": p.situation.problem_type,
        "hidden_need_type": p.needs.hidden_need_type,
        **{t: float(getattr(p.personality, t)) for t in TRAITS},
        "disclosure_pace": p.disclosure_pace,
        "risk_level": p.risk_level,
    }


def assessment_rows(store: RunStore, convs: dict[str, dict[str, Any]], profiles: dict[str, Profile]) -> list[
        dict[str, Any]]:  # fmt: skip
    """One row per assessment and dimension of the conversations (or replays) ``convs``."""
    run = store.folder.name
    out = []
    for a in records.assessments(store):
        conv = convs.get(a.conversation)
        if conv is None:
            continue
        base = {"run": run, "unit": a.conversation, "supporter": conv.get("supporter"), "repeat": conv.get("repeat", 0),
                "profile_id": conv.get("profile_id"), **profile_columns(profiles.get(str(conv.get("profile_id")))),
                "judge": a.judge, "status": a.status}  # fmt: skip
        for dim, score in (a.scores or {}).items():
            expected = (a.expected or {}).get(dim)
            out.append({**base, "dimension": dim, "score": None if score is None else float(score),
                        "score_expected": expected, "scored": a.scored and score is not None})  # fmt: skip
    return out


def conversation_rows(store: RunStore) -> list[dict[str, Any]]:
    """``assessment_rows`` of a run whose units are conversations (an EmoHarbor run, a ladder): every stored one,
    with the profiles the run stored."""
    convs = {d["id"]: d for _, d in store.items("conversation")}
    return assessment_rows(store, convs, records.stored_profiles(store))


def tidy_rows(store: RunStore) -> list[dict[str, Any]]:
    """The tidy table of a run of any kind that has one (``RunKind.tidy``)."""
    kind = store.meta()["kind"]
    if not kinds.has(kind, "tidy"):
        raise EmoharborError(f"{store.folder} holds {kinds.title(kind)}, which has no table of results")
    return kinds.of(kind).tidy(store)


def write_results(store: RunStore, out: Path, fmt: str) -> Path | None:
    """``results.FMT`` in ``out`` (parquet, csv or jsonl) for a kind of run that has a tidy table; None else."""
    if not kinds.has(store.meta()["kind"], "tidy"):
        return None
    rows = tidy_rows(store)
    if fmt != "parquet":
        from .store.export import write_rows

        return write_rows(out / f"results.{fmt}", rows, fmt)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise EmoharborError("--format parquet needs pyarrow: pip install pyarrow") from None
    path = out / "results.parquet"
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    tmp.replace(path)
    return path


def load_results(run: str | Path) -> Any:
    """The tidy results of the run folder ``run`` as a pandas DataFrame (``pip install pandas``)."""
    try:
        import pandas as pd
    except ImportError:
        raise EmoharborError("load_results needs pandas: pip install pandas (or the analysis extra)") from None
    store, _ = kinds.open_run(Path(run), "tidy")
    try:
        return pd.DataFrame(tidy_rows(store))
    finally:
        store.close()
