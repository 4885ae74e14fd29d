"""The model stages of a HEART run, each resumable in the run store.

Store layout (table -> key): ``history`` -> history id; ``load_report`` -> source name; ``candidate`` ->
"{history_id}|{competitor}"; ``comparison`` -> "{history_id}|{a}|{b}|{judge}|{order}" (order "ab": a's
reply shown first); ``strategy`` -> "{history_id}|{competitor}"; ``human_judgment`` ->
"{history_id}|{a}|{b}|{rater}|{dimension}"; ``human_import`` -> the file; ``stage`` -> stage name (its counts);
``reply_score`` -> (history, competitor, judge): a card of one reply (``reply_scores``). A run imported from
replies rated by people (``heart import-rated``, ``HeartConfig.rated_source``) has no model candidates: its
histories hold the file's replies and ratings, and its human judgments are the pairs the ratings imply.

Every stage reads the run's plan (``heart.plan.HeartPlan``: its config, its judges' cards and, for a new run,
its histories and candidates' system prompts, each read once by the command); a run folder's plan is
``stored_run``'s.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

from ...assess.judge import check_logprobs
from ...config import SupporterSpec
from ...errors import EmoharborError
from ...models.pool import GetModel, LazyModels, ModelPool
from ...store import record
from ...store.keys import Key
from ...store.run_store import RunStore, call_sink
from ...store.units import Events, StageDone, Work, run_stage
from ..analysis.humans import ImportReport, human_key
from ..config import HUMAN, HeartConfig, HistorySource, JudgeSpec, parse_heart_config, resolve_path
from ..histories import History, LoadReport
from ..plan import HeartPlan
from ..rated_pairs import rated_judgments
from .candidates import given_candidate, model_candidate
from .judging import Shown, judge_pair, neutral_ids
from .strategies import label_reply, load_strategies

KIND = "heart"


# the prompt files a HEART run's units read (the judges' are in their cards)
PROMPTS = ("heart_candidate_system", "heart_candidate_user", "heart_judge_system", "heart_strategy",
           "supporter_default", "supporter_personal")  # fmt: skip


def inputs(config: HeartConfig, base_dir: Path) -> list[Path]:
    """The files a HEART run reads: its history sources, the strategy table, candidates' prompt files."""
    paths = [resolve_path(base_dir, h.path) for h in config.histories]
    if config.strategy_file:
        paths.append(resolve_path(base_dir, config.strategy_file))
    prompts = [c.system_prompt for c in config.candidates if c.system_prompt and c.system_prompt.startswith("@")]
    return paths + [resolve_path(base_dir, p[1:]) for p in prompts]


def open_run(folder: Path, plan: HeartPlan) -> RunStore:
    store = record.open_run(folder, KIND, plan.record, prompts=PROMPTS, inputs=inputs(plan.cfg, plan.base))
    store.set_meta("heart_config_dir", str(plan.base))
    return store


def stored_run(folder: Path) -> tuple[RunStore, HeartPlan]:
    """The run in ``folder`` and its plan, made of the stored config (its judges' cards must be the versions
    the run started with)."""
    store, stored = record.read_run(folder, KIND)
    try:
        cards = stored.pop("judge_cards", {})
        config = parse_heart_config(stored, f"{folder} (stored config)")
        base = Path(store.meta().get("heart_config_dir", "."))
        return store, HeartPlan.stored(config, base, str(folder), cards)
    except BaseException:
        store.close()
        raise


def read_run(folder: Path) -> tuple[RunStore, HeartConfig, Path]:
    """``stored_run``'s store, config and the folder its relative paths are read from."""
    store, plan = stored_run(folder)
    return store, plan.cfg, plan.base


async def generate_run(folder: Path, plan: HeartPlan, *, progress: bool = True) -> dict[str, Any]:
    """``generate`` in ``folder`` (a new run, or one to resume), its models from a pool of its own."""
    store = open_run(folder, plan)
    try:
        async with ModelPool(cache_path=True, sink=call_sink(store)) as pool:
            return await generate(store, plan, pool.get, progress=progress)
    finally:
        store.close()


def given(result: tuple[dict[str, Any], Events]) -> Work:
    """A unit whose record is made without a model (a reply the file gives)."""

    async def work() -> tuple[dict[str, Any], Events]:
        return result

    return work


def histories(store: RunStore) -> dict[str, History]:
    return {h.id: h for h in (History.from_dict(d) for _, d in store.items("history"))}


def candidates(store: RunStore) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["history_id"], d["competitor"]): d for _, d in store.items("candidate")}


async def generate(store: RunStore, plan: HeartPlan, get_model: GetModel, *, progress: bool = True) -> dict[str, Any]:
    """Keep the plan's histories in the store, then write every competitor's candidate reply. From a file of
    rated replies (``rated_source``), the replies are its own, no model is asked, and the pairs its ratings
    imply are the run's human judgments, stored with the histories in one transaction."""
    config, base_dir, loaded, reports = plan.cfg, plan.base, plan.histories, plan.reports
    records: list[tuple[str, Key, dict[str, Any]]] = [("history", (h.id,), h.to_dict()) for h in loaded
                                                      if not store.has("history", (h.id,))]  # fmt: skip
    records += [("load_report", (r.name,), r.to_dict()) for r in reports]
    rated = config.rated_source()
    judgments: list[dict[str, Any]] = []
    if rated is not None:
        judgments = rated_judgments(loaded, config.competitors(), rated.rated_pairing())
        records += [("human_judgment", human_key(row), row) for row in judgments]
        path = resolve_path(base_dir, rated.path)
        records.append(("human_import", (str(path.resolve()),), rated_import(path, loaded, judgments, rated)))
    store.put_many(records)
    if rated is not None:
        return await import_given(store, config, loaded, reports, judgments, progress=progress)
    models = LazyModels(get_model)
    systems = plan.systems

    def model_work(h: History, spec: SupporterSpec) -> Work:
        async def work() -> tuple[dict[str, Any], Events]:
            model = await models.get(spec.name, spec, "supporter")
            return await model_candidate(
                model, spec, h, systems[spec.name], show_situation=config.show_situation, seed=config.seed
            )

        return work

    units: list[tuple[Key, Work]] = []
    for h in loaded:
        if config.include_human:
            units.append(((h.id, HUMAN), given(given_candidate(h, HUMAN, h.human_reply, "human"))))
        units.extend(((h.id, spec.name), model_work(h, spec)) for spec in config.candidates)
    done = await run_stage(store, "candidate", units, workers=config.concurrency, progress=progress)
    skipped = {r.name: dict(r.skipped) for r in reports if r.skipped}
    return stage_summary(store, "generate", done, "candidates_by_status", histories=len(loaded),
                         items_skipped=skipped, units=len(units))  # fmt: skip


def rated_import(path: Path, loaded: list[History], judgments: list[dict[str, Any]], src: HistorySource) -> dict[
        str, Any]:  # fmt: skip
    """The import record of a file of rated replies, as ``heart agreement`` lists its imports."""
    ratings = sum(len(h.ratings) for h in loaded)
    ties = sum(1 for j in judgments if j["winner"] == "tie")
    note = (f"pairs implied by {ratings} ratings ({src.rated_pairing()}): {len(judgments)} judgments, {ties} of them "
            f"ties, on {len(loaded)} histories")  # fmt: skip
    return ImportReport(source=str(path), rows=ratings, imported=len(judgments), notes=[note]).to_dict()


async def import_given(store: RunStore, config: HeartConfig, loaded: list[History], reports: list[LoadReport],
                       judgments: list[dict[str, Any]], *, progress: bool) -> dict[str, Any]:  # fmt: skip
    """The replies of a file of rated replies as every competitor's candidates (a competitor without a reply
    to a history is ``missing`` there)."""
    units = [((h.id, c), given(given_candidate(h, c, h.replies.get(c), "rated"))) for h in loaded
             for c in config.competitors()]  # fmt: skip
    done = await run_stage(store, "candidate", units, workers=config.concurrency, progress=progress)
    ties = sum(1 for j in judgments if j["winner"] == "tie")
    return stage_summary(store, "import", done, "candidates_by_status", histories=len(loaded), units=len(units),
                         human_judgments=len(judgments), human_ties=ties,
                         items_skipped={r.name: dict(r.skipped) for r in reports if r.skipped})  # fmt: skip


def stage_summary(store: RunStore, stage: str, done: StageDone, by_status: str, **counts: Any) -> dict[str, Any]:
    """A stage's counts with what the runner did (done now, resumed, units by status), stored and returned."""
    summary = {**counts, "done_now": done.done_now, "resumed": done.resumed, by_status: done.statuses}
    store.put("stage", (stage,), summary)
    return summary


def planned_pairs(config: HeartConfig, human_ok: bool) -> list[tuple[str, str]]:
    """The pairs to judge on one history. ``pairs: all``: every two competitors. ``pairs: with_human``
    (HEART's design): the human against each model where the history has a usable human reply, and
    the models against each other where it has none."""
    every = list(combinations(config.competitors(), 2))
    if config.pairs == "all" or not config.include_human:
        return every
    return [p for p in every if (HUMAN in p) == human_ok]


def pairs_to_judge(
    store: RunStore, config: HeartConfig
) -> tuple[list[tuple[History, str, Shown, Shown]], Counter[str]]:
    """(history, a, a's reply, b's reply) for every planned pair of usable candidates; the rest counted."""
    hs, cands = histories(store), candidates(store)
    counts: Counter[str] = Counter()
    out = []
    for h in hs.values():
        human = cands.get((h.id, HUMAN))
        for a, b in planned_pairs(config, human is not None and human["status"] == "ok"):
            ca, cb = cands.get((h.id, a)), cands.get((h.id, b))
            if ca is None or cb is None:
                counts["pairs_candidate_not_generated"] += 1
            elif ca["status"] != "ok" or cb["status"] != "ok":
                counts["pairs_candidate_unusable"] += 1
            else:
                ida, idb = neutral_ids(h.id, a, b)
                out.append((h, a, Shown(a, ida, ca["text"]), Shown(b, idb, cb["text"])))
    return out, counts


async def judge(store: RunStore, plan: HeartPlan, get_model: GetModel, *, progress: bool = True) -> dict[str, Any]:
    """Every pair of usable candidates on every history, by every judge (the plan's cards), in both orders."""
    if not store.keys("history"):
        raise EmoharborError(f"{store.folder}: no histories yet: run 'emoharbor heart generate' first")
    config, cards = plan.cfg, plan.cards
    pairs, counts = pairs_to_judge(store, config)
    models = LazyModels(get_model)
    for spec in config.judges:  # a card set to scoring: expected needs log-probabilities: found out now
        if cards[spec.name].scoring == "expected":
            await check_logprobs(cards[spec.name], await models.get(spec.name, spec, "judge"))

    def judge_work(spec: JudgeSpec, h: History, a: str, first: Shown, second: Shown, order: str) -> Work:
        async def work() -> tuple[dict[str, Any], Events]:
            model = await models.get(spec.name, spec, "judge")
            return await judge_pair(
                model,
                spec.name,
                h,
                first,
                second,
                a=a,
                order=order,
                dimensions=config.dimensions,
                retries=config.judge_retries,
                seed=config.seed,
                show_situation=config.show_situation,
                card=cards[spec.name],
            )

        return work

    units: list[tuple[Key, Work]] = []  # keyed (history, a, b, judge, order)
    for spec in config.judges:
        for h, a, sa, sb in pairs:
            for order, (first, second) in (("ab", (sa, sb)), ("ba", (sb, sa))):
                units.append(((h.id, a, sb.name, spec.name, order), judge_work(spec, h, a, first, second, order)))
    # one judge's comparisons on one history in a row: they share the history's prompt prefix
    done = await run_stage(store, "comparison", units, workers=config.concurrency, progress=progress,
                           group=lambda k: (k[0], k[3]))  # fmt: skip
    return stage_summary(store, "judge", done, "judgements_by_status", pairs=len(pairs), judgements=len(units),
                         **counts)  # fmt: skip


async def label(store: RunStore, plan: HeartPlan, get_model: GetModel, *, progress: bool = True) -> dict[str, Any]:
    """Strategy labels for every usable candidate reply."""
    config, base_dir = plan.cfg, plan.base
    strategies = load_strategies(resolve_path(base_dir, config.strategy_file) if config.strategy_file else None)
    hs = histories(store)
    models = LazyModels(get_model)

    def label_work(h: History, cand: dict[str, Any]) -> Work:
        async def work() -> tuple[dict[str, Any], Events]:
            model = await models.get("labeller", config.labeller_spec(), "labeller")
            return await label_reply(
                model,
                h,
                cand,
                strategies,
                max_sentences=config.max_sentences,
                retries=config.label_retries,
                seed=config.seed,
            )

        return work

    units: list[tuple[Key, Work]] = []
    unusable = 0
    for (hid, comp), cand in sorted(candidates(store).items()):
        if cand["status"] != "ok" or hid not in hs:
            unusable += 1
        else:
            units.append(((hid, comp), label_work(hs[hid], cand)))
    done = await run_stage(store, "strategy", units, workers=config.concurrency, progress=progress)
    return stage_summary(store, "strategies", done, "replies_by_status", replies=len(units),
                         candidates_unusable=unusable)  # fmt: skip
