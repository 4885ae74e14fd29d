"""The three HEART reports as plain data (dicts and lists), read from a run store. Rendering is elsewhere
(render.py), so an HTML report can reuse these."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ...assess.judge_forms import PairForm, card_form
from ...store import records
from ...store.run_store import RunStore
from ..config import HeartConfig, JudgeSpec, resolve_path
from ..dimensions import LEXICON_NOTE, OVERALL, load_lexicon
from ..stages.judging import verdict_keys
from ..stages.pipeline import histories
from ..stages.strategies import load_strategies, strategy_profiles
from .agreement import alphas, human_ceiling, human_verdicts, judge_human
from .bias import bias_table, rationale_focus
from .humans import ImportReport, human_key, read_human_judgments
from .people import pair_table, rating_table
from .ratings import compute_ratings
from .verdicts import PairVerdict, combine_orders

# a candidate reply that opens with the seeker's label: the model wrote the seeker's turn, not the
# supporter's (kept as written, so the judges see it; counted here)
SEEKER_LABEL = re.compile(r"^\s*\**\s*(?:seeker|user|help-seeker)\s*\**\s*:", re.I)


def run_name(store: RunStore, config: HeartConfig) -> str:
    """The run as the reports' titles name it: its folder's name, after the configured name where the folder's
    name does not start with it."""
    folder = store.folder.name or str(store.folder)
    return folder if folder.startswith(config.name) else f"{config.name} (folder {folder})"


def _by(pairs: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """(who, status) pairs as {who: {status: count}}, in the order first seen."""
    out: dict[str, Counter[str]] = {}
    for who, status in pairs:
        out.setdefault(who, Counter())[status] += 1
    return {who: dict(c) for who, c in out.items()}


def overview(store: RunStore) -> dict[str, Any]:
    """What was loaded, skipped, generated, judged and counted in this run."""
    replies = records.candidates(store).values()
    cands = _by([(c.competitor, c.status + (f" ({c.reason})" if c.reason else "")) for c in replies])
    judged = _by([(c.judge, c.status) for c in records.comparisons(store)])
    as_seeker = Counter(c.competitor for c in replies if SEEKER_LABEL.match(c.text))
    return {
        "histories": dict(Counter(d["subset"] for _, d in store.items("history"))),
        "speakers_inferred": sum(1 for _, d in store.items("history") if d["speakers_inferred"]),
        "sources": [d for _, d in store.items("load_report")],
        "stages": {k[0]: d for k, d in store.items("stage")},  # by stage name, the key's one part
        "candidates": cands,
        "candidates_written_as_the_seeker": dict(as_seeker),
        "judgements": judged,
        "events": store.event_counts(),
        "usage_by_role": store.usage_by_role(),
    }


def reply_words(store: RunStore) -> dict[tuple[str, str], int]:
    """Each candidate reply's word count, by (history, competitor)."""
    return {key: c.words for key, c in records.candidates(store).items()}


def people(store: RunStore) -> tuple[list[dict[str, Any]], list[PairVerdict]]:
    """The run's human judgment rows, and them as pair verdicts."""
    rows = [d for _, d in store.items("human_judgment")]
    subsets = {h.id: h.subset for h in histories(store).values()}
    return rows, human_verdicts(rows, subsets, reply_words(store))


def ratings_report(store: RunStore, config: HeartConfig, *, bootstrap: int | None = None) -> dict[str, Any]:
    comparisons = records.comparisons(store)
    data = compute_ratings(
        comparisons,
        config.competitors(),
        [j.name for j in config.judges],
        verdict_keys(config.dimensions),
        prior=config.bt_prior,
        reps=config.bootstrap if bootstrap is None else bootstrap,
        seed=config.seed,
        people=people(store)[1],
    )
    return {"run": run_name(store, config), **data, "overview": overview(store)}


def _endpoint(spec: Any) -> tuple[str, tuple[str, ...]]:
    return spec.model, tuple(spec.endpoint_urls()) if spec.backend == "openai" else ()


def own_models(config: HeartConfig) -> dict[str, list[str]]:
    """For each judge, the candidates served by the same model (same name and endpoints)."""
    return {j.name: [c.name for c in config.candidates if _endpoint(c) == _endpoint(j)] for j in config.judges}


def import_human_judgments(store: RunStore, config: HeartConfig, path: Path) -> ImportReport:
    """Read a CSV/JSONL of human judgments into the run store (idempotent: a row replaces its earlier copy)."""
    rows, report = read_human_judgments(path, {k[0] for k in store.keys("history")}, config.competitors())
    for row in rows:
        store.put("human_judgment", human_key(row), row)
    store.put("human_import", (str(path.resolve()),), report.to_dict())
    return report


def agreement_report(store: RunStore, config: HeartConfig, base_dir: Path) -> dict[str, Any]:
    keys = verdict_keys(config.dimensions)
    judges = [j.name for j in config.judges]
    comparisons = records.comparisons(store)
    judge_vs, singles, counts = combine_orders(comparisons)
    human_rows, human_vs = people(store)
    words = reply_words(store)
    lexicon = load_lexicon(resolve_path(base_dir, config.lexicon_file) if config.lexicon_file else None)
    return {
        "run": run_name(store, config),
        "judges": judges,
        "dimensions": keys,
        "human_imports": [d for _, d in store.items("human_import")],
        "human_judgments": len(human_rows),
        "human_raters": len({r["rater"] for r in human_rows}),
        "judge_human": judge_human(judge_vs, human_vs, judges, keys),
        "human_human": human_ceiling(human_vs, keys),
        "alpha": alphas(judge_vs, human_vs, judges, keys),
        "bias": bias_table(
            judges, judge_vs, singles, human_vs, human_rows, words, own_models(config), prior=config.bt_prior
        ),
        "rationale_focus": rationale_focus(comparisons, human_rows, lexicon, config.dimensions),
        **with_people(store, config, comparisons, human_rows, words),
        "notes": [
            LEXICON_NOTE,
            "judge verdicts combine both orders (a winner that flips is a tie); "
            "a pair scored in one order only is left out",
        ],
        "counts": dict(counts),
    }


def judge_answers(judge: JudgeSpec, config: HeartConfig) -> frozenset[str]:
    """The dimensions a judge's verdicts hold: overall alone for a form that chooses, else the run's and overall."""
    chooses = card_form(judge.judge_card(), PairForm).chooses
    return frozenset([OVERALL] if chooses else verdict_keys(config.dimensions))


def with_people(store: RunStore, config: HeartConfig, comparisons: list[records.Comparison],
                human_rows: list[dict[str, Any]], words: dict[tuple[str, str], int]) -> dict[str, Any]:  # fmt: skip
    """Every scorer against the people's pairs and, on a run of rated replies, against their ratings
    (``people.py``), with intervals from ``bootstrap`` resamples of histories."""
    scores = [d for _, d in store.items("reply_score")]
    judges = {j.name: judge_answers(j, config) for j in config.judges}
    got = pair_table(human_rows, comparisons, judges, scores, words, seed=config.seed, n_boot=config.bootstrap)
    hs = list(histories(store).values())
    return {"people_pairs": got["rows"], "people_ties": got["people_ties"], "people_decided": got["decided"],
            "people_ratings": rating_table(hs, scores, words, seed=config.seed, n_boot=config.bootstrap)}  # fmt: skip


def strategies_report(store: RunStore, config: HeartConfig, base_dir: Path) -> dict[str, Any]:
    strategies = load_strategies(resolve_path(base_dir, config.strategy_file) if config.strategy_file else None)
    records = [d for _, d in store.items("strategy")]
    names = list(strategies)
    return {
        "run": run_name(store, config),
        "strategies": names,
        "labeller": config.labeller_spec().model,
        "profiles": strategy_profiles(records, config.competitors(), names),
        "replies_by_status": dict(Counter(r["status"] for r in records)),
        "sentences": sum(len(r["sentences"]) for r in records),
        "unlabelled_sentences": sum(1 for r in records for lab in r["labels"] if lab is None),
        "stage": store.get("stage", ("strategies",)),
        "events": {k: v for k, v in store.event_counts().items() if k.startswith(("strategy", "sentences"))},
    }
