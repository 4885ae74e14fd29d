"""The stages put together: build pairs with a model (resumable, in a run store), and the whole
run, M0 by SFT then ``rounds`` x (refine with M(t), DPO into M(t+1)), each stage skipped when its
output is already there.

Layout of a run folder: ``m0/``, ``round1/refine/`` (run store), ``round1/pairs.jsonl``, ``m1/``, ...,
``summary.json``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..assess.cards import JudgeCard, load_card
from ..assess.judge_forms import PairForm
from ..errors import ConfigError, EmoharborError
from ..models.adapters import load_lora_adapter
from ..models.base import ChatModel
from ..models.folder import ADAPTER_CONFIG, MODEL_CARD
from ..models.hf import HFChatModel, load_hf, read_model_card, resolve_hf
from ..models.pool import LazyModels, ModelPool
from ..models.spec import ModelSpec
from ..profiles.loader import profile_inputs
from ..profiles.schema import PERSONA
from ..simulate.supporter import supporter_prompt
from ..store.keys import Key
from ..store.record import open_run
from ..store.run_store import call_sink
from ..store.units import Work, run_stage
from .config import EvolveConfig
from .data import ChatExample, esconv_contexts
from .guard import load_guard
from .pairs import PreferencePair, write_pairs
from .personal import PROMPT as PERSONAL_PROMPT
from .personal import Personal, shown_record
from .profile_contexts import profile_contexts, profile_id, training_profiles
from .reflect import PERSON_PROMPT, PairJudge, load_principles, refine_context
from .trainer import Log, main_log, peak_rss_mb, placement, processes, release_memory

KIND = "evolve_refine"
PROMPTS = ("evolve_reflect", "evolve_refine")  # the refine stage reads these (principles and system: below)


def pair_judge_card(cfg: EvolveConfig) -> JudgeCard | None:
    """The card of the judge check (``refine.judge_check``), or None when it is off."""
    if not cfg.refine.judge_check:
        return None
    card = load_card(cfg.refine.judge_card)
    if not isinstance(card.judge_form(), PairForm):
        ref = cfg.refine.judge_card
        raise ConfigError(f"refine.judge_card {ref!r} is a {card.kind} card: give one of a form that compares two "
                          "replies (heart_pairwise)")  # fmt: skip
    return card


def refine_contexts(cfg: EvolveConfig, round_no: int) -> list[ChatExample]:
    """A round's contexts, a new seeded sample each round: ``refine.profile_count()`` profiles' openings
    (``profile_contexts.py``), the rest of ``refine.contexts`` from the ESConv files."""
    system = supporter_prompt(cfg.system_prompt).text.strip()
    guard = load_guard(cfg.holdout)
    r = cfg.refine
    seed, personal = cfg.seed + 1000 * round_no, Personal(r.personal_share, cfg.seed)
    n_profiles = r.profile_count()
    out: list[ChatExample] = []
    if r.contexts > n_profiles:
        out = esconv_contexts(cfg.data_of("refine"), system, r.contexts - n_profiles, seed, r.max_context_turns, guard,
                              personal)  # fmt: skip
    if n_profiles:
        out += profile_contexts(training_profiles(r.profiles, guard), system, n_profiles, seed, personal)
    return out


async def build_pairs(model: ChatModel, contexts: list[ChatExample], cfg: EvolveConfig, folder: Path, *,
                      round_no: int, model_id: str, progress: bool = True) -> dict[str, Any]:  # fmt: skip
    """Refine every context into ``folder`` (a run store; resumable) and write ``pairs.jsonl`` beside it."""
    principles = load_principles(cfg.refine.principles)
    system = supporter_prompt(cfg.system_prompt)
    resolved = {"round": round_no, "model": model_id, "refine": cfg.refine.model_dump(mode="json"),
                "principles": principles.version, "system": system.version,
                "contexts": [c.id for c in contexts]}  # fmt: skip
    r = cfg.refine
    files = [*(Path(p) for p in [*r.data, *cfg.holdout]), *profile_inputs(r.profiles)]
    me = processes()  # under accelerate launch, each process refines its share of the contexts
    if not me.main:
        barrier()  # the main process writes the run record first
    prompts = (*PROMPTS, *([PERSONAL_PROMPT] if r.personal_share > 0 else []),
               *([PERSON_PROMPT, PERSONA] if r.profiles else []))  # fmt: skip
    store = open_run(folder, KIND, resolved, prompts=prompts, inputs=files)
    if me.main:
        barrier()
    started = time.monotonic()
    card = pair_judge_card(cfg)
    reflector = r.reflector.model if r.reflector is not None else None  # None: the policy itself
    try:
        async with ModelPool(sink=call_sink(store)) as pool:
            judges = LazyModels(pool.get)  # started only if a context is refined now (the reflector too)
            units: list[tuple[Key, Work]] = []
            for i, ex in enumerate(contexts):

                async def work(ex: ChatExample = ex, i: int = i) -> tuple[dict[str, Any], list[tuple[str, str]]]:
                    judge = None if card is None else PairJudge(await judges.get("judge", r.judge, "judge"), card)
                    teacher = None if r.reflector is None else await judges.get("reflector", r.reflector, "reflector")
                    rec, events = await refine_context(model, ex, principles, r, seed=cfg.seed + i,
                                                       system_version=system.version, judge=judge,
                                                       reflector=teacher)  # fmt: skip
                    return {**rec, "process": me.rank, "reflector": reflector}, events

                if i % me.world_size == me.rank:
                    units.append(((ex.id,), work))
            await run_stage(store, KIND, units, workers=r.concurrency, progress=progress and me.main, label="refine")
        barrier()  # every share refined
        if not me.main:
            barrier()  # the main process writes the pairs
            return dict(store.get("stage", ("summary",)) or {})
        records = [r for _, r in store.items(KIND)]
        reasons = Counter(r["reason"] for r in records if r["status"] != "ok")
        pairs = round_pairs(records, contexts, round_no, model_id)
        write_pairs(folder.parent / "pairs.jsonl", pairs)
        summary = {"contexts": len(records), "kept": len(pairs), "dropped": dict(sorted(reasons.items())),
                   "plain_truncated": sum(r.get("rejected_finish") == "length" for r in records),
                   "sources": sources(contexts),
                   "shown": shown_record(cfg.refine.personal_share, [c.personal for c in contexts]),
                   "reflector": reflector,
                   "wall_s": time.monotonic() - started, "events": store.event_counts()}  # fmt: skip
        store.put("stage", ("summary",), summary)
        barrier()
        return summary
    finally:
        store.close()


def round_pairs(records: list[dict[str, Any]], contexts: list[ChatExample], round_no: int, model_id: str) -> list[
        PreferencePair]:  # fmt: skip
    """The pairs of the contexts refined "ok", each with its provenance: the context, whether it was shown the
    seeker's situation, the profile it was drawn from (None: an ESConv one), the reflection and who wrote it."""
    personal = {c.id for c in contexts if c.personal}  # contexts shown the seeker's situation
    return [PreferencePair(r["prompt"], r["chosen"], r["rejected"], f"self_refine:r{round_no}:{r['id']}", "self_refine",
                           {"round": round_no, "model": model_id, "context": r["id"], "principles": r["principles"],
                            "reflection": r["reflection"], "personal": r["id"] in personal,
                            "profile_id": profile_id(r["id"]), "reflector": r.get("reflector")})
            for r in records if r["status"] == "ok"]  # fmt: skip


def barrier() -> None:
    """All the processes of an ``accelerate launch`` wait here for each other; one process: nothing."""
    if processes().world_size > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


async def _served(cfg: EvolveConfig, spec: ModelSpec, contexts: list[ChatExample], folder: Path, round_no: int,
                  progress: bool) -> dict[str, Any]:  # fmt: skip
    """Pairs from M(t) served elsewhere (``refine.generator``: vLLM or SGLang, the round's adapter loaded)."""
    async with ModelPool() as pool:
        model = await pool.get(spec, "generator")
        ident = f"{spec.model}@{','.join(spec.endpoint_urls())}"
        return await build_pairs(model, contexts, cfg, folder, round_no=round_no, model_id=ident, progress=progress)


def adapter_name(model_dir: Path, round_no: int) -> str:
    """The name a round's adapter is served under: M(t) and a hash of its weights, so a changed adapter is never
    mistaken for the one loaded before (nor answered from the cache)."""
    h = hashlib.sha256()
    for w in sorted(model_dir.glob("adapter_model.*")):
        h.update(w.read_bytes())
    return f"emoharbor-m{round_no - 1}-{h.hexdigest()[:12]}"


def served_generator(cfg: EvolveConfig, model_dir: Path, round_no: int, *, log: Log) -> ModelSpec:
    """``refine.generator``, serving M(t): with ``refine.load_adapter``, the adapter in ``model_dir`` is loaded
    into the server first (``/v1/load_lora_adapter``) and asked for by its name."""
    spec = cfg.refine.generator
    assert spec is not None
    if not cfg.refine.load_adapter:
        return spec
    if not (model_dir / ADAPTER_CONFIG).is_file():
        raise EmoharborError(f"{model_dir}: no adapter_config.json, so there is no adapter to load into {spec.model}")
    name = adapter_name(model_dir, round_no)
    urls = asyncio.run(load_lora_adapter(spec, name, model_dir))
    log(f"refine: adapter {model_dir} loaded as {name} on {', '.join(urls)}")
    return spec.model_copy(update={"model": name})


def sources(contexts: list[ChatExample]) -> dict[str, int]:
    """How many contexts came from each source (``esconv``, ``profile``), by name."""
    return dict(sorted(Counter(c.source for c in contexts).items()))


def counted(contexts: list[ChatExample]) -> str:
    """``12 contexts (esconv 8, profile 4)``: how many, and from where."""
    return f"{len(contexts)} contexts ({', '.join(f'{k} {v}' for k, v in sources(contexts).items())})"


def refine_with_model_dir(cfg: EvolveConfig, model_dir: Path, folder: Path, round_no: int, *, log: Log,
                          progress: bool = True, hold: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Pairs from M(t) in ``model_dir``, generated in this process (batched); or, when ``refine.generator`` is
    set, by that server with M(t)'s adapter loaded (``served_generator``)."""
    contexts = refine_contexts(cfg, round_no)
    if cfg.refine.generator is not None:
        spec = served_generator(cfg, model_dir, round_no, log=log)
        log(f"refine: round {round_no}, {counted(contexts)}, served model {spec.model}")
        summary = asyncio.run(_served(cfg, spec, contexts, folder, round_no, progress))
    else:
        src = resolve_hf(str(model_dir))
        if hold and "model" in hold:  # M(t) as the stage before left it in memory
            model, tok = hold["model"], hold["tokenizer"]
        else:  # under accelerate launch, each process generates on its own GPU
            device = "cpu" if placement(cfg).cpu else f"cuda:{processes().local_rank}"
            model, tok = load_hf(src, device=device, dtype=cfg.dtype)
        chat = HFChatModel.from_loaded(model, tok, name=f"M{round_no - 1}", temperature=cfg.refine.temperature,
                                       max_tokens=cfg.refine.max_new_tokens,
                                       repetition_penalty=cfg.refine.repetition_penalty,
                                       batch_size=cfg.refine.batch_size)  # fmt: skip
        teacher = f", reflections by {cfg.refine.reflector.model}" if cfg.refine.reflector else ""
        log(f"refine: round {round_no}, {counted(contexts)}, model {model_dir}{teacher}")
        summary = asyncio.run(build_pairs(chat, contexts, cfg, folder, round_no=round_no, model_id=src.identity,
                                          progress=progress))  # fmt: skip
    log(f"refine: {summary['kept']} pairs kept, dropped {summary['dropped']} ({summary['wall_s']:.0f}s)")
    return summary


def _done(folder: Path) -> bool:
    return (folder / MODEL_CARD).is_file()


def run_all(cfg: EvolveConfig, out: Path, *, log: Log, progress: bool = True) -> dict[str, Any]:
    """Every stage in turn, each skipped when its output is there. Under ``accelerate launch`` SFT and DPO
    train across the processes and each process refines its share of the contexts."""
    from .dpo import run_dpo
    from .sft import run_sft

    log = main_log(log)

    if cfg.rounds and cfg.refine.generator is not None and not cfg.refine.load_adapter:
        raise EmoharborError(
            "refine.generator with load_adapter: false serves one model, but each round must be refined by M(t): "
            "set refine.load_adapter: true (the server loads each round's adapter), or run the stages one by one"
        )
    if cfg.rounds and cfg.refine.profiles:
        training_profiles(cfg.refine.profiles)  # one marked evaluation_only is refused before SFT, not after it
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    summary: dict[str, Any] = {"config": cfg.resolved(), "stages": []}
    hold: dict[str, Any] = {}  # the current model, kept in memory from one stage to the next
    m0 = out / "m0"
    if _done(m0):
        log(f"sft: {m0} is there, skipped")
        summary["stages"].append(read_model_card(m0) | {"skipped": True})
    else:
        summary["stages"].append(run_sft(cfg, m0, log=log, hold=hold))
        release_memory()
    extra = [Path(p) for p in cfg.dpo.extra_pairs]
    for t in range(1, cfg.rounds + 1):
        prev, nxt, rdir = out / f"m{t - 1}", out / f"m{t}", out / f"round{t}"
        if _done(nxt):
            log(f"round {t}: {nxt} is there, skipped")
            hold.clear()  # what is in memory (if anything) is not M(t) any more
            continue
        refine = refine_with_model_dir(cfg, prev, rdir / "refine", t, log=log, progress=progress, hold=hold)
        summary["stages"].append({"stage": "refine", "round": t, **refine})
        release_memory()
        if refine["kept"] == 0 and not extra:
            raise EmoharborError(f"round {t}: no pair was kept ({refine['dropped']}): see {rdir / 'refine'}")
        summary["stages"].append(run_dpo(cfg, prev, [rdir / "pairs.jsonl", *extra], nxt, log=log, hold=hold))
        release_memory()
    summary["wall_s"] = time.monotonic() - started
    summary["peak_rss_mb"] = peak_rss_mb()
    if processes().main:
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary
