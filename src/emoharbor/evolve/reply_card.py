"""The reply card of ``evolve eval``: beside the paired EmoHarbor run, every model writes one reply to each of N
held-out ESConv contexts (as the run's supporter: its system prompt and token budget), and a judge card of one
reply (``third_party_reply`` by default, on the run's judge model; read as probabilities where the backend gives
log-probabilities) scores each. Per model: the mean score with its 95% bootstrap interval and the replies' length
in words; the paired difference from the first model over the same contexts, with its interval and P(difference >
0). A reply the judge could not score is counted, never averaged in. Beside the models, the rule-made bad replies of
the sensitivity suite's makers (``--bad MAKER``; by default ``generic_long``, platitudes padded to the real reply's
length) are scored on the same contexts, each a row of its own (``rule-made: MAKER``): a model whose score is no
higher than a padded platitude's has learnt to please the judge, not the seeker.

The contexts come from dialogues no model was trained on: every dialogue of the ESConv files in the models' cards
(``sft.data``, ``refine.data``) is held out (``guard.EvalGuard``: by id and by seeker turns). The run store is
``OUT/replies`` (run kind ``evolve_replies``), resumable: units ``reply`` (context, model) and ``reply_score``
(context, model, judge); ``OUT/reply-card.json`` holds the figures."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..assess.reply_judge import judge_reply
from ..assess.stage import Judge, judges_record, make_judges
from ..config import SupporterSpec
from ..data.esconv import load_esconv
from ..errors import ConfigError, DataError
from ..models.base import ModelCallError
from ..models.folder import MODEL_CARD
from ..models.hf import read_model_card
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..profiles.esconv_import import draft_profile
from ..reward.context import RewardContext, talk
from ..scoring.case import Case
from ..sensitivity.bad import MAKERS, bad_replies
from ..sensitivity.cases import Pool
from ..simulate.agents import ReactionSettings
from ..simulate.conversation import Turn, words
from ..simulate.supporter import make_supporter
from ..stats.bootstrap import bootstrap_ci, paired_difference, shown
from ..store.keys import Key
from ..store.record import open_run
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, Work, run_stage
from ..tables import md_table, num
from .data import ChatExample, esconv_contexts
from .guard import EvalGuard

KIND = "evolve_replies"
FOLDER = "replies"
FIGURES = "reply-card.json"
CONTEXTS = "contexts.txt"  # the contexts' dialogue ids: a holdout file for later training
REPLY, SCORE = "reply", "reply_score"
MAX_TURNS = 8  # a context shows at most this many turns, as refine's
RULE_MADE = "rule-made: "  # a bad reply's row: ``rule-made: generic_long``


def trained_guard(folders: list[Path | str]) -> EvalGuard:
    """Every ESConv dialogue the models in ``folders`` (those with an evolve model card) were trained or refined
    on, held out by id and by its seeker turns."""
    guard = EvalGuard()
    for folder in folders:
        if not (Path(folder) / MODEL_CARD).is_file():
            continue
        cfg = read_model_card(Path(folder)).get("config") or {}
        for stage in ("sft", "refine"):
            for path in (cfg.get(stage) or {}).get("data") or []:
                if not Path(path).is_file():
                    where = f"{Path(folder) / MODEL_CARD}: field 'config.{stage}.data'"
                    raise DataError(f"{where}: {path} not found: the dialogues it trained on must be read to keep "
                                    "them out of the reply card")  # fmt: skip
                for d in load_esconv(path):
                    guard.history_ids.add(d.id)
                    for t in d.turns:
                        if t.speaker == "seeker":
                            guard.add_text(t.text)
    return guard


def held_out_contexts(esconv: list[str], n: int, seed: int, guard: EvalGuard) -> list[ChatExample]:
    """``n`` contexts, each from a different dialogue the guard does not block, ending on the seeker's turn."""
    found = esconv_contexts(esconv, "", n, seed, MAX_TURNS, guard)
    if not found:
        raise DataError(f"{', '.join(esconv)}: no dialogue left for the reply card: every one was trained on by a "
                        "model under test (give another split, e.g. valid.jsonl)")  # fmt: skip
    return found


def turns_of(ex: ChatExample) -> list[Turn]:
    return [Turn(speaker="user" if m["role"] == "user" else "supporter", text=m["content"]) for m in ex.messages
            if m["role"] != "system"]  # fmt: skip


def rule_made(esconv: list[str], contexts: list[ChatExample], makers: list[str]) -> dict[Key, str]:
    """Each context's bad reply of each of ``makers`` (the sensitivity suite's rules, no model), keyed as a reply:
    (context id, ``rule-made: MAKER``). A maker that cannot make one for a context leaves that context out."""
    dialogs = {d.id: d for p in esconv for d in load_esconv(p)}
    pool = Pool()
    for d in dialogs.values():
        pool.add(d.id, d.problem_type, talk(d))
    out: dict[Key, str] = {}
    for ex in contexts:
        d = dialogs[ex.id.partition("#")[0]]
        profile, turns = draft_profile(d, evaluation_only=True), turns_of(ex)
        trust, replies = ReactionSettings().initial_trust, sum(t.speaker == "supporter" for t in turns)
        ctx = RewardContext(ex.id, "esconv", profile, turns, profile.emotional_state.intensity, trust, replies, d.id)
        for maker, text in bad_replies(Case(ex.id, "esconv", ctx, ex.reply, d.problem_type), pool, makers).items():
            out[(ex.id, RULE_MADE + maker)] = text
    return out


def score_value(rec: dict[str, Any]) -> tuple[float | None, str]:
    """A judge record's score: the mean of its probability-weighted scores where it has them all, else of its
    written ones; None when it is not scored. And which was read (``expected`` or ``written``)."""
    if rec.get("status") != "ok":
        return None, ""
    expected = rec.get("expected") or {}
    if expected and None not in expected.values():
        return float(np.mean([float(v) for v in expected.values()])), "expected"
    written = rec.get("scores") or {}
    if not written or None in written.values():
        return None, ""
    return float(np.mean([float(v) for v in written.values()])), "written"


async def write_replies(supporters: list[SupporterSpec], contexts: list[ChatExample], judge: Judge, folder: Path, *,
                        seed: int, workers: int, inputs: list[Path], bad: dict[Key, str],
                        progress: bool = True) -> None:  # fmt: skip
    """Every supporter's reply to every context and the ``bad`` replies (made by rules), then the judge's score of
    each, into the run store in ``folder``."""
    resolved = {"models": [s.model_dump(mode="json", exclude={"api_key_env"}) for s in supporters],
                "judge": judges_record([judge]), "contexts": [c.id for c in contexts], "seed": seed,
                "bad": sorted({k[1] for k in bad})}  # fmt: skip
    store = open_run(folder, KIND, resolved, inputs=inputs)
    try:
        async with ModelPool(sink=call_sink(store)) as pool:
            made = {s.name: make_supporter(await pool.get(s, "supporter"), s) for s in supporters}

            def reply_work(ex: ChatExample, name: str) -> Work:
                async def work() -> tuple[dict[str, Any], Events]:
                    base = {"context": ex.id, "model": name}
                    try:
                        text, events = await made[name].reply(turns_of(ex), seed)
                    except ModelCallError as e:
                        return {**base, "status": "error", "error": str(e)[:500]}, [("model_error", str(e)[:200])]
                    return {**base, "status": "ok", "reply": text, "words": words(text)}, events

                return work

            def made_by_rule(key: Key, text: str) -> Work:
                async def work() -> tuple[dict[str, Any], Events]:
                    return {"context": key[0], "model": key[1], "status": "ok", "reply": text,
                            "words": words(text)}, []  # fmt: skip

                return work

            units: list[tuple[Key, Work]] = [((ex.id, s.name), reply_work(ex, s.name)) for ex in contexts
                                             for s in supporters]  # fmt: skip
            units += [(key, made_by_rule(key, text)) for key, text in bad.items()]
            await run_stage(store, REPLY, units, workers=workers, progress=progress, label="replies")
            model = await pool.get(judge.model, judge.role)
            replies = {k: r for k, r in store.items(REPLY) if r["status"] == "ok"}
            by_id = {c.id: c for c in contexts}

            def score_work(key: Key, rec: dict[str, Any]) -> Work:
                async def work() -> tuple[dict[str, Any], Events]:
                    base = {"context": key[0], "model": key[1], "judge": judge.name, "words": rec["words"]}
                    try:
                        got = await judge_reply(judge.card, model, judge.name, turns_of(by_id[key[0]]), rec["reply"],
                                                seed=seed)  # fmt: skip
                    except ModelCallError as e:
                        return {**base, "status": "error", "error": str(e)[:500]}, [("model_error", str(e)[:200])]
                    value, readout = score_value(got)
                    events: Events = [("unscored", f"{judge.name}: {got['error'][:160]}")] if value is None else []
                    return {**got, **base, "value": value, "readout": readout}, events

                return work

            units = [((*k, judge.name), score_work(k, r)) for k, r in sorted(replies.items()) if k[0] in by_id]
            await run_stage(store, SCORE, units, workers=workers, progress=progress, label="reply scores")
    finally:
        store.close()


def figures(store: RunStore, names: list[str], judge: str, *, seed: int = 0) -> dict[str, Any]:
    """Per model: replies, scored, unscored, the mean score with its interval, the words; each model after the
    first: its paired difference from the first over the contexts both have scored."""
    replies = dict(store.items(REPLY))
    scores = {(k[0], k[1]): r for k, r in store.items(SCORE) if k[2] == judge}
    values: dict[str, dict[str, float]] = {n: {} for n in names}
    words: dict[str, dict[str, int]] = {n: {} for n in names}
    out: dict[str, Any] = {"judge": judge, "contexts": len({k[0] for k in replies}), "reference": names[0],
                           "models": {}}  # fmt: skip
    for (ctx, name), r in scores.items():
        if name in values and r.get("value") is not None:
            values[name][ctx], words[name][ctx] = float(r["value"]), int(r["words"])
    first = values[names[0]]
    for name in names:
        mine = [r for (_, m), r in replies.items() if m == name]
        rated = [r for (_, m), r in scores.items() if m == name]
        row: dict[str, Any] = {
            "replies": sum(r["status"] == "ok" for r in mine), "no_reply": sum(r["status"] != "ok" for r in mine),
            "scored": len(values[name]), "unscored": sum(r.get("value") is None for r in rated),
            "written": sum(r.get("readout") == "written" for r in rated),
            **shown(bootstrap_ci(list(values[name].values()), seed=seed)),
            "words": float(np.mean(list(words[name].values()))) if words[name] else None,
        }  # fmt: skip
        if name != names[0]:
            both = sorted(set(values[name]) & set(first))
            row["minus_first"] = paired_difference([values[name][c] - first[c] for c in both], seed=seed)
            row["words_minus_first"] = (float(np.mean([words[name][c] - words[names[0]][c] for c in both]))
                                        if both else None)  # fmt: skip
        out["models"][name] = row
    return out


def card_table(fig: dict[str, Any]) -> str:
    """The reply card as a Markdown table, with what it measured."""
    ref = fig["reference"]
    rows = []
    for name, r in fig["models"].items():
        d = r.get("minus_first") or {}
        interval = f" [{num(d['lo'], signed=True)}, {num(d['hi'], signed=True)}]" if d.get("lo") is not None else ""
        ci = f" [{num(r['lo'])}, {num(r['hi'])}]" if r.get("lo") is not None else ""
        rows.append([name, r["replies"], r["scored"], r["unscored"] + r["no_reply"], f"{num(r['mean'])}{ci}",
                     num(r["words"], 1), f"{num(d.get('mean'), signed=True)}{interval}" if d else "-",
                     num(d.get("p_above_0")) if d else "-",
                     num(r.get("words_minus_first"), 1, signed=True) if d else "-"])  # fmt: skip
    head = ["model", "replies", "scored", "unscored", "mean [95% CI]", "words", f"minus {ref} [95% CI]",
            "P(> 0)", f"words minus {ref}"]  # fmt: skip
    written = sum(r["written"] for r in fig["models"].values())
    note = (f"reply card: {fig['contexts']} held-out ESConv contexts, one reply per model, scored by {fig['judge']} "
            f"(the mean of its probability-weighted scores; {written} read from the written digits, the backend "
            "giving no log-probabilities); unscored replies are counted, not averaged in; the difference is paired "
            "over the contexts both models have scored")  # fmt: skip
    if any(name.startswith(RULE_MADE) for name in fig["models"]):
        note += (
            f"; the rows {RULE_MADE}MAKER are the sensitivity suite's bad replies on the same contexts, made "
            "by rules with no model: a model scored no higher than one of them pleased the judge, not helped"
        )
    return f"{note}\n{md_table(head, rows, 'no model wrote a reply')}"


@dataclass(frozen=True)
class ReplyCard:
    """What the reply card of an evaluation is made of, checked before anything runs."""

    judge: Judge
    contexts: list[ChatExample]
    esconv: list[str]
    seed: int
    bad: dict[Key, str]  # the rule-made bad replies: (context id, ``rule-made: MAKER``) -> text


def plan_reply_card(esconv: list[str], n: int, *, judge_card: str, judge_model: ModelSpec,
                    trained: list[Path | str], seed: int, bad: list[str]) -> ReplyCard:  # fmt: skip
    """The judge (a card of the form reply on ``judge_model`` unless it names its own), ``n`` contexts of ``esconv``
    that no model in ``trained`` was trained on and their bad replies by the makers ``bad``; one line naming the
    file, the card or the maker when they cannot be had."""
    for p in esconv:
        if not Path(p).is_file():
            raise DataError(f"--esconv {p}: not found")
    unknown = [m for m in bad if m not in MAKERS]
    if unknown:
        raise ConfigError(f"--bad {', '.join(unknown)}: no such bad-reply maker (the makers: {', '.join(MAKERS)})")
    wanted = "the reply card rates one reply: give a card of the form reply (third_party_reply)"
    [judge] = make_judges([judge_card], judge_model, rates=("reply",), option="--reply-judge", wanted=wanted)
    contexts = held_out_contexts(esconv, n, seed, trained_guard(trained))
    return ReplyCard(judge, contexts, esconv, seed, rule_made(esconv, contexts, bad))


def reply_card(plan: ReplyCard, supporters: list[SupporterSpec], out: Path, *, workers: int,
               progress: bool = True) -> tuple[dict[str, Any], str]:  # fmt: skip
    """The reply card of ``supporters``: its figures (also written to ``out/reply-card.json``) and its table."""
    folder = out / FOLDER
    asyncio.run(write_replies(supporters, plan.contexts, plan.judge, folder, seed=plan.seed, workers=workers,
                              inputs=[Path(p) for p in plan.esconv], bad=plan.bad, progress=progress))  # fmt: skip
    (folder / CONTEXTS).write_text("".join(f"{c.id.partition('#')[0]}\n" for c in plan.contexts), encoding="utf-8")
    store = RunStore.open_existing(folder)
    try:
        rows = [s.name for s in supporters] + sorted({k[1] for k in plan.bad})
        fig = figures(store, rows, plan.judge.name, seed=plan.seed)
    finally:
        store.close()
    fig["context_ids"] = [c.id for c in plan.contexts]
    (out / FIGURES).write_text(json.dumps(fig, indent=2, default=str), encoding="utf-8")
    return fig, card_table(fig)
