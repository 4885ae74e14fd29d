"""Preference pairs from evaluation runs, with their provenance and what was left out, and why.

EmoHarbor runs: two conversations with the same profile that share their turns up to a user
message and then differ in the supporter's reply; the reply of the conversation the simulated user
rated higher (mean of its scored dimensions, by at least ``min_margin``) is chosen. The rating is of
the whole conversation, so the pair attributes it to the first reply where the two part ways.

HEART runs: a pair of candidate replies to one history whose overall winner held when the judge saw
them in both orders, and that no judge reversed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

from ..errors import EmoharborError
from ..heart.analysis.verdicts import combine_orders
from ..models.base import Message
from ..store import records
from ..store.records import Assessment
from ..store.run_store import RunStore
from .guard import EvalGuard, load_guard
from .pairs import PreferencePair


def _conv_score(assessments: list[Assessment]) -> float | None:
    """The mean of the user-judge's scored dimensions."""
    values = [v for a in assessments if a.judge == "user" and a.scored for v in a.scores.values() if v is not None]
    return sum(values) / len(values) if values else None


def _prompt(turns: list[Any]) -> list[Message]:
    return [{"role": "assistant" if t.get("speaker") == "supporter" else "user", "content": str(t.get("text", ""))}
            for t in turns]  # fmt: skip


def _split(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int | None:
    """The index of the first supporter turn where ``a`` and ``b`` differ after an identical prefix."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x.get("speaker") != y.get("speaker"):
            return None
        if x.get("text") != y.get("text"):
            return i if x.get("speaker") == "supporter" and i > 0 else None
    return None


def emoharbor_pairs(store: RunStore, guard: EvalGuard, *, run: str, min_margin: float = 0.5) -> tuple[
        list[PreferencePair], Counter[str]]:  # fmt: skip
    counts: Counter[str] = Counter()
    by_conv: dict[str, list[Assessment]] = defaultdict(list)
    for judged in records.assessments(store):
        by_conv[judged.conversation].append(judged)
    groups: dict[str, list[tuple[str, dict[str, Any], float]]] = defaultdict(list)
    for _, c in store.items("conversation"):
        key = str(c["id"])
        counts["conversations"] += 1
        if guard.blocks_record(c):
            counts["held_out"] += 1
            continue
        score = _conv_score(by_conv.get(key, []))
        if score is None or not isinstance(c.get("turns"), list):
            counts["unscored"] += 1
            continue
        groups[str(c.get("profile_id"))].append((key, c, score))
    out: list[PreferencePair] = []
    for profile, convs in sorted(groups.items()):
        for (ka, a, sa), (kb, b, sb) in combinations(convs, 2):
            if a.get("supporter") == b.get("supporter"):
                continue
            counts["candidate_pairs"] += 1
            i = _split(a["turns"], b["turns"])
            if i is None:
                counts["no_shared_context"] += 1
                continue
            if abs(sa - sb) < min_margin:
                counts["margin_too_small"] += 1
                continue
            (kw, w, sw), (kl, lo, sl) = ((ka, a, sa), (kb, b, sb)) if sa > sb else ((kb, b, sb), (ka, a, sa))
            prompt = _prompt(w["turns"][:i])
            prov = {"run": run, "profile_id": profile, "turn": i,
                    "chosen_conversation": kw, "rejected_conversation": kl,
                    "chosen_supporter": w.get("supporter"), "rejected_supporter": lo.get("supporter"),
                    "chosen_score": round(sw, 3), "rejected_score": round(sl, 3)}  # fmt: skip
            out.append(PreferencePair(prompt, str(w["turns"][i]["text"]), str(lo["turns"][i]["text"]),
                                      f"emoharbor:{kw}>{kl}@{i}", "emoharbor", prov))  # fmt: skip
            counts["kept"] += 1
    return out, counts


def heart_pairs(store: RunStore, guard: EvalGuard, *, run: str, dimension: str = "overall") -> tuple[
        list[PreferencePair], Counter[str]]:  # fmt: skip
    counts: Counter[str] = Counter()
    histories = {str(h.get("id", k[0])): h for k, h in store.items("history")}
    texts = {k: c.text for k, c in records.candidates(store).items() if c.status == "ok"}
    verdicts, _, combined = combine_orders(records.comparisons(store))
    counts["one_order_only"] += combined["pairs_one_order_scored"]
    held: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)  # (history, a, b) -> judge -> winner
    for v in verdicts:
        if v.dimension != dimension:
            continue
        w = v.winner()
        if w is None:
            counts["flipped_or_tie"] += 1
        else:
            held[(v.history_id, v.a, v.b)][v.rater] = w
    out: list[PreferencePair] = []
    for (hid, a, b), by_judge in sorted(held.items()):
        if len(set(by_judge.values())) > 1:
            counts["judges_disagree"] += 1
            continue
        h = histories.get(hid)
        if h is None or guard.blocks_record(h):
            counts["held_out" if h is not None else "history_missing"] += 1
            continue
        win = next(iter(by_judge.values()))
        lose = b if win == a else a
        tw, tl = texts.get((hid, win)), texts.get((hid, lose))
        if not tw or not tl or tw.strip() == tl.strip():
            counts["candidate_missing" if not tw or not tl else "identical"] += 1
            continue
        prompt = _prompt(h.get("turns") or [])
        prov = {"run": run, "history_id": hid, "chosen_competitor": win, "rejected_competitor": lose,
                "judges": sorted(by_judge), "dimension": dimension}  # fmt: skip
        out.append(PreferencePair(prompt, tw, tl, f"heart:{hid}:{win}>{lose}", "heart", prov))
        counts["kept"] += 1
    return out, counts


def export_run(folder: Path, guard: EvalGuard, *, min_margin: float = 0.5) -> tuple[list[PreferencePair], Counter[str]]:
    """Pairs from one run folder, EmoHarbor or HEART, told apart by what the store holds."""
    store = RunStore.open_existing(folder)
    try:
        tables = set(store.tables())
        if "comparison" in tables:
            return heart_pairs(store, guard, run=str(folder))
        if "conversation" in tables:
            specs = store.config().get("profiles")
            if isinstance(specs, list) and specs:
                try:
                    guard = guard.merged(load_guard([], profiles=[str(s) for s in specs]))
                except EmoharborError as e:
                    raise EmoharborError(
                        f"{folder}: cannot read the run's profiles to find those marked evaluation_only ({e}); "
                        "run the export from the folder the run was started in"
                    ) from None
            return emoharbor_pairs(store, guard, run=str(folder), min_margin=min_margin)
        return [], Counter({"no_conversations_or_comparisons": 1})
    finally:
        store.close()
