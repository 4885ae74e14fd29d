"""Is the strategy labeller any good? ESConv's supporter messages carry their annotators' strategy labels.
The HEART labeller labels the messages (the same prompt and code as for HEART replies), the annotators'
labels are mapped onto HEART's strategies by the strategy file's ``esconv:`` table, and the label of each
message's first sentence is compared with them: accuracy and Cohen's kappa with bootstrap intervals,
beside the majority-class baseline, the two label distributions and the confusion table.

A check is a run folder of its own (kind ``heart_strategy_check``), resumable like the HEART stages:
``esconv_label`` -> "{record id}#{turn}" (the 0-based turn among the record's non-empty turns), the
labeller's record plus the annotators' label; ``stage`` -> "strategy_check".
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...data.esconv import EsconvDialog
from ...errors import DataError
from ...models.pool import GetModel, LazyModels
from ...models.spec import ModelSpec
from ...stats.bootstrap import Estimate, bootstrap_ci
from ...store.record import open_run, record_hash, run_record
from ...store.run_store import RunStore
from ...store.units import Events, Work, run_stage
from ...tables import cell, interval, md_table, nothing_measured
from ..analysis.ratings import number
from ..analysis.render import dict_table
from ..analysis.stats import cohen_kappa
from ..config import HUMAN, HeartConfig
from ..histories import SEEKER, History, Turn
from .strategies import StrategyFile, label_patterns, label_reply

KIND = "heart_strategy_check"
PROMPTS = ("heart_strategy",)
UNIT = "esconv_label"
UNSCORED = "no message got a first-sentence label: see the unscored ones in the counts"  # why its tables can be empty
DEFAULTS = HeartConfig.model_fields  # max_sentences, label_retries, concurrency: as in a HEART run


@dataclass(frozen=True)
class Item:
    """One annotated supporter message of ESConv."""

    key: str
    where: str  # "FILE: record N, turn M", for messages
    seeker_text: str  # the seeker's message(s) just before it
    text: str
    label: str  # the annotators' label, as the file spells it
    esconv: str  # that label as the table spells it
    strategy: str | None  # the HEART strategy it maps to; None: no counterpart


@dataclass(frozen=True)
class CheckSettings:
    labeller: ModelSpec
    seed: int = 0
    max_sentences: int = DEFAULTS["max_sentences"].default
    retries: int = DEFAULTS["label_retries"].default
    concurrency: int = DEFAULTS["concurrency"].default
    bootstrap: int = 2000


def heart_strategy(table: StrategyFile, label: str, where: str) -> tuple[str, str | None]:
    """The table's spelling of an ESConv label and the HEART strategy it maps to (None: none fits)."""
    name = label.strip().removeprefix("[").removesuffix("]").strip()
    name = table.esconv_spellings.get(name, name)
    if name not in table.esconv:
        raise DataError(
            f"{where}: ESConv strategy {label!r} is not in the esconv table of {table.where} "
            f"(it has {sorted(table.esconv)}): add it there, mapped to a strategy or to null"
        )
    return name, table.esconv[name]


def esconv_items(dialogs: list[EsconvDialog], table: StrategyFile) -> tuple[list[Item], dict[str, Any]]:
    """Every annotated supporter message that answers a seeker message, and what was left out and why."""
    if not table.esconv:
        raise DataError(f"{table.where} has no esconv: table mapping ESConv's strategies to its own")
    items: list[Item] = []
    left_out: Counter[str] = Counter()
    no_counterpart: Counter[str] = Counter()
    for d in dialogs:
        for i, t in enumerate(d.turns):
            if t.speaker != "supporter":
                continue
            where = f"{d.source}: record {d.index + 1}, turn {i + 1}"
            if t.strategy is None:
                left_out["no_esconv_label"] += 1
                continue
            name, target = heart_strategy(table, t.strategy, where)
            before = replace(d, turns=d.turns[:i]).merged_turns()
            seeker = next((b.text for b in reversed(before) if b.speaker == "seeker"), None)
            if seeker is None:
                left_out["before_the_first_seeker_message"] += 1
            elif target is None:
                no_counterpart[name] += 1
            else:
                items.append(Item(f"{d.id}#{i}", where, seeker, t.text, t.strategy, name, target))
    counts = {
        "supporter_messages": len(items) + left_out.total() + no_counterpart.total(),
        **left_out,
        "no_heart_counterpart": dict(no_counterpart),
        "eligible": len(items),
    }
    return items, counts


def select(items: list[Item], limit: int | None, seed: int) -> list[Item]:
    """A seeded sample of ``limit`` items (all without a limit); a larger limit keeps the smaller one's."""
    order = list(items)
    random.Random(seed).shuffle(order)
    return order[:limit] if limit is not None else order


def check_config(esconv: Path, table: StrategyFile, settings: CheckSettings) -> dict[str, Any]:
    """What the labels depend on: the run's config (the limit and the mapping are not: a rerun may change
    them and keep the labels it has)."""
    return {
        "esconv": str(esconv.resolve()),
        "labeller": settings.labeller.model_dump(mode="json"),
        "strategies": table.strategies,
        "max_sentences": settings.max_sentences,
        "retries": settings.retries,
        "seed": settings.seed,
    }


def default_folder(config: dict[str, Any]) -> Path:
    return Path("runs") / f"strategy-check-{record_hash(run_record(config, PROMPTS, [Path(config['esconv'])]))[:8]}"


def open_check(folder: Path, config: dict[str, Any]) -> RunStore:
    return open_run(folder, KIND, config, prompts=PROMPTS, inputs=[Path(config["esconv"])])


async def label_items(
    store: RunStore,
    items: list[Item],
    table: StrategyFile,
    settings: CheckSettings,
    get_model: GetModel,
    *,
    progress: bool = True,
) -> dict[str, Any]:
    """Label every item not labelled yet (a failed model call is tried again)."""
    models = LazyModels(get_model)

    def work_for(item: Item) -> Work:
        async def work() -> tuple[dict[str, Any], Events]:
            model = await models.get("labeller", settings.labeller, "labeller")
            history = History(item.key, "esconv", item.where, [Turn(SEEKER, item.seeker_text)])
            rec, events = await label_reply(
                model,
                history,
                {"text": item.text, "competitor": HUMAN},
                table.strategies,
                max_sentences=settings.max_sentences,
                retries=settings.retries,
                seed=settings.seed,
            )
            return {**rec, "esconv_label": item.label}, events

        return work

    units = [((item.key,), work_for(item)) for item in items]
    done = await run_stage(store, UNIT, units, workers=settings.concurrency, progress=progress)
    summary = {"messages": len(units), "done_now": done.done_now, "resumed": done.resumed}
    store.put("stage", ("strategy_check",), summary)
    return summary


def _estimate(e: Estimate) -> dict[str, Any]:
    return {"value": number(e.value), "low": number(e.lo), "high": number(e.hi)}


def agreement_scores(pairs: list[tuple[str, str]], *, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Accuracy and Cohen's kappa of (annotators' label, labeller's label) pairs, each with a percentile
    bootstrap interval over the pairs; the majority-class baseline (always the annotators' most frequent
    label: its accuracy, kappa 0 by definition); and the labeller's accuracy minus the baseline's."""
    golds = Counter(g for g, _ in pairs)
    majority = golds.most_common(1)[0][0] if pairs else None
    hits = [float(g == p) for g, p in pairs]
    base = [float(g == majority) for g, _ in pairs]

    def kappa(idx: np.ndarray) -> float:
        k = cohen_kappa([pairs[int(i)] for i in idx])
        return float("nan") if k is None else k

    def ci(values: list[float], stat: Any = np.mean) -> dict[str, float | None]:
        return _estimate(bootstrap_ci(values, stat, n_boot=n_boot, seed=seed))

    return {
        "scored": len(pairs),
        "accuracy": ci(hits),
        "kappa": ci([float(i) for i in range(len(pairs))], kappa),
        "baseline": {"label": majority, "accuracy": ci(base), "kappa": 0.0 if pairs else None},
        "accuracy_minus_baseline": ci([h - b for h, b in zip(hits, base, strict=True)]),
    }


def verdict(scores: dict[str, Any]) -> str:
    """In words: does the labeller beat the majority-class baseline, and its kappa chance?"""
    acc, base, diff, kappa = (scores[k] for k in ("accuracy", "baseline", "accuracy_minus_baseline", "kappa"))
    if acc["value"] is None:
        return "Nothing was scored, so nothing can be said about the labeller."
    versus = (
        f"accuracy {cell(acc['value'])} against {cell(base['accuracy']['value'])} for always saying "
        f"{base['label']!r} (difference {_interval(diff)})"
    )
    if diff["value"] <= 0:
        out = f"The labeller does NOT beat the majority-class baseline: {versus}."
    elif diff["low"] is None or diff["low"] <= 0:
        out = f"The labeller is not clearly better than the majority-class baseline (the interval holds 0): {versus}."
    else:
        out = f"The labeller beats the majority-class baseline: {versus}."
    if kappa["value"] is None or kappa["low"] is None or kappa["low"] <= 0:
        out += f" Its Cohen's kappa, {_interval(kappa)}, is not clearly above chance (0)."
    return out


def check_report(
    store: RunStore,
    esconv: Path,
    items: list[Item],
    counts: dict[str, Any],
    table: StrategyFile,
    settings: CheckSettings,
) -> dict[str, Any]:
    """The check's figures for the selected items, from the labels stored so far."""
    names = list(table.strategies)
    records: list[dict[str, Any]] = []
    status: Counter[str] = Counter()
    scored: list[tuple[Item, str]] = []
    for item in items:
        rec = store.get(UNIT, (item.key,))
        if rec is None:
            status["not_labelled_yet"] += 1
            continue
        records.append(rec)
        first = rec["labels"][0] if rec["status"] == "ok" else None
        status["scored" if first is not None else rec.get("reason") or rec["status"]] += 1
        if first is not None:
            scored.append((item, first))
    pairs = [(item.strategy or "", first) for item, first in scored]
    scores = agreement_scores(pairs, n_boot=settings.bootstrap, seed=settings.seed)
    gold, pred = Counter(g for g, _ in pairs), Counter(p for _, p in pairs)
    shown = [n for n in names if gold[n] or pred[n]]
    confusion = [
        {
            "esconv": lab,
            "heart": target,
            "n": sum(1 for item, _ in scored if item.esconv == lab),
            **{n: sum(1 for item, p in scored if item.esconv == lab and p == n) for n in names if pred[n]},
        }
        for lab, target in table.esconv.items()
        if target is not None
    ]
    return {
        "esconv_file": str(esconv),
        "labeller": settings.labeller.model,
        "strategy_file": table.where,
        "mapping": table.esconv,
        "messages": {**counts, "selected": len(items), **status},
        **scores,
        "verdict": verdict(scores),
        "distribution": [{"strategy": n, "annotators": gold[n], "labeller": pred[n]} for n in shown],
        "confusion": confusion,
        "patterns": label_patterns(records, names),
        "stage": store.get("stage", ("strategy_check",)),
    }


def _interval(e: dict[str, float | None]) -> str:
    return interval(e["value"], e["low"], e["high"], digits=3)


def patterns_md(p: dict[str, Any]) -> str:
    """The degenerate-labelling section, in Markdown."""
    if not p["labelled_sentences"]:
        return "\n## Degenerate labelling\n\n" + nothing_measured("no sentence got a label") + "\n"
    lines = [
        "",
        "## Degenerate labelling",
        "",
        f"- most common label of first sentences: {p['most_common_first']!r}, "
        f"{cell(p['most_common_first_share'])} of {p['first_sentences']}",
        f"- most common label of all sentences: {p['most_common']!r}, "
        f"{cell(p['most_common_share'])} of {p['labelled_sentences']}",
        f"- adjacent sentences labelled with the next strategy of the list: {cell(p['next_in_list_share'])} "
        f"of {p['adjacent_pairs']} (by chance about {cell(p['next_in_list_by_chance'])})",
    ]
    lines += [f"- **warning: {w}**" for w in p["warnings"]]
    return "\n".join(lines) + "\n"


def check_md(data: dict[str, Any]) -> str:
    b = data["baseline"]
    rows = [
        ["labeller: accuracy", _interval(data["accuracy"])],
        ["labeller: Cohen's kappa", _interval(data["kappa"])],
        [f"majority baseline (always {b['label']!r}): accuracy", _interval(b["accuracy"])],
        ["majority baseline: Cohen's kappa", "0 (by definition)"],
        ["accuracy minus the baseline's", _interval(data["accuracy_minus_baseline"])],
    ]
    m = data["messages"]
    unscored = {k: m[k] for k in ("unlabelled", "error", "no_sentences", "not_labelled_yet") if m.get(k)}
    left_out = {k: m[k] for k in ("no_esconv_label", "before_the_first_seeker_message") if m.get(k)}
    parts = [
        "# HEART strategy labeller against ESConv's annotators",
        "",
        f"Labeller {data['labeller']}; ESConv file {data['esconv_file']}; mapping: the esconv table of "
        f"{data['strategy_file']}. The label of each supporter message's first sentence against the "
        "annotators' label of the message, mapped onto HEART's strategies; 95% bootstrap intervals.",
        "",
        f"**{data['verdict']}**",
        "",
        md_table(["", "value [95% interval]"], rows if data["scored"] else [], UNSCORED),
        "",
        f"Scored {data['scored']} of {m['selected']} messages selected; unscored (never guessed): "
        f"{unscored or 'none'}. Supporter messages {m['supporter_messages']}, eligible {m['eligible']}; "
        f"left out: {left_out or 'none'}; with no HEART counterpart: {m['no_heart_counterpart'] or 'none'}.",
        patterns_md(data["patterns"]).rstrip("\n"),
        "",
        "## Label distribution (scored messages)",
        "",
        dict_table(data["distribution"], UNSCORED),
        "",
        "## Confusion (rows: the annotators' label; columns: the labeller's, first sentence)",
        "",
        dict_table(data["confusion"] if data["scored"] else [], UNSCORED),
    ]
    return "\n".join(parts) + "\n"
