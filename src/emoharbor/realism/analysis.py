"""The realism table, from a realism run's store (``figures.py`` computes the figures).

- **next message**: at every cut whose simulated message is finished, the simulated message beside the real
  next one (the same cuts on both sides; an unscored cut is counted, never read as a message); the re-ask's
  record: how often the user's check asked again, and whether the kept message still slipped;
- **whole talks**: the simulated talks beside the real talks they were drafted from: seeker turns, words per
  message by seeker turn, relief per supporter turn (the simulated intensity; the seekers' own initial and final
  intensity, 1-5, at 20 points a step of 0-100), how talks end, and the message figures on all their messages.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..profiles.esconv_import import seeker_relief
from ..simulate.conversation import Conversation
from ..simulate.text_checks import character_slip, repeats
from ..stats.clusters import cluster_draws
from ..store.record import user_model
from ..store.run_store import RunStore
from .cuts import Cut, Talk
from .figures import Message, Table, estimate, talk_mean
from .text import GRATITUDE, words

RETRIED = ("user_broke_character_retried", "user_repetition_retried")
GOODBYE = re.compile(GRATITUDE.pattern + r"|\b(?:bye|goodbye|good night|take care)\b", re.IGNORECASE)
FALSE_STOPS_GOAL = 0.10  # at most this share of cuts where the simulated seeker would have ended the talk
CHECKS = ("discriminator", "similarity", "false_stops")  # the next-message figures beside the rows, each with a goal


def embeddings(texts: list[str]) -> np.ndarray | None:
    """Unit-length MiniLM embeddings, or None where the ``embed`` extra is not installed."""
    try:
        from ..embed import encode

        return encode(texts)
    except ImportError:
        return None


def next_table(store: RunStore, *, seed: int, n_boot: int) -> dict[str, Any]:
    cuts = {c.key: c for c in (Cut.from_dict(d) for _, d in store.items("cut"))}
    done = {k: d for k, d in store.items("next") if d.get("status") != "error"}
    ok = [(cuts[k], d) for k, d in done.items() if d.get("status") == "ok" and k in cuts]
    sim = [Message(c.talk, d["text"], tuple(c.earlier)) for c, d in ok]
    real = [Message(c.talk, c.real, tuple(c.earlier)) for c, _ in ok]
    table = Table(sim, real, n_boot=n_boot, seed=seed)
    out: dict[str, Any] = {
        "planned": len(cuts),  # 0: the run asked for whole talks alone (--cuts 0)
        "cuts": len(ok),
        "talks": len({c.talk for c, _ in ok}),
        "unscored": sum(1 for d in done.values() if d.get("status") == "unscored"),
        "unfinished": len(cuts) - len(done),
        "rows": table.rows(),
        "reask": reask(ok),
        "decisions": dict(Counter(str(d.get("decision", "continue")) for _, d in ok)),
        "false_stops": false_stops(ok, seed=seed, n_boot=n_boot),
        "examples": [{"talk": c.talk, "sim": d["text"], "real": c.real} for c, d in ok[:5]],
    }
    before = [c.earlier[-1] for c, _ in ok]  # the seeker's own message before the cut: the floor's other side
    vectors = embeddings([m.text for m in sim] + [m.text for m in real] + before) if sim else None
    if vectors is None:
        out["embeddings"] = "not available: install emoharbor[embed]" if sim else "no message yet"
        return out
    n = len(sim)
    sim_vec, real_vec, before_vec = vectors[:n], vectors[n : 2 * n], vectors[2 * n :]
    out["discriminator"] = table.discriminator(sim_vec, real_vec, before_vec)
    similarity = table.similarity(sim_vec, real_vec)
    if similarity:
        out["similarity"] = similarity
    return out


def false_stops(done: list[tuple[Cut, dict[str, Any]]], *, seed: int, n_boot: int) -> dict[str, Any]:
    """The share of cuts at which the simulated seeker decided to end the talk (satisfied or disengaged) where the
    real seeker went on by construction (a cut is never at a talk's last message): a false stop (``sim``; people
    make none). Its interval resamples talks."""
    names = sorted({c.talk for c, _ in done})
    index = {t: i for i, t in enumerate(names)}
    talk = np.asarray([index[c.talk] for c, _ in done], dtype=int)
    stopped = np.asarray([str(d.get("decision", "continue")) != "continue" for _, d in done], dtype=float)
    est = estimate(*talk_mean(talk, stopped, len(names), cluster_draws(len(names), n_boot, seed)), len(names), n_boot)
    value = est["value"]
    return {"sim": est, "goal": f"at most {100 * FALSE_STOPS_GOAL:.0f}% of cuts",
            "verdict": "n/a" if value is None else "met" if value <= FALSE_STOPS_GOAL else "not met"}  # fmt: skip


def slips(text: str, earlier: list[str]) -> set[str]:
    """What is wrong with a seeker's message: the supporter's voice, narration, a repeat."""
    slip = character_slip(text)
    return ({slip} if slip else set()) | ({"repeat"} if repeats(text, earlier) else set())


def reask(done: list[tuple[Cut, dict[str, Any]]]) -> dict[str, int]:
    """How often the user's own check asked again, and what came of it: the message kept clean (mended), still
    wrong, or wrong in a way the first answer was not (worse: the re-ask made a new slip)."""
    asked = mended = worse = 0
    for cut, d in done:
        retried = [e for e in d.get("events", []) if e[0] in RETRIED]
        if not retried:
            continue
        asked += 1
        first = str(retried[0][1]).split(" => ", 1)[0]
        kept = slips(d["text"], cut.earlier)
        mended += not kept
        worse += bool(kept - slips(first, cut.earlier))
    return {"asked": asked, "mended": mended, "still": asked - mended, "worse": worse}


def whole_table(store: RunStore, *, seed: int, n_boot: int) -> dict[str, Any] | None:
    talks = {k[0]: Talk.from_dict(d) for k, d in store.items("talk")}
    if not talks:
        return None
    convs = {k[0]: Conversation.model_validate(d) for k, d in store.items("whole") if d.get("status") == "ok"}
    names = [t for t in talks if t in convs]
    unscored = sum(1 for _, d in store.items("whole") if d.get("status") == "unscored")
    out: dict[str, Any] = {"talks": len(names), "planned": len(talks), "unscored": unscored}
    if not names:
        return out
    sim_msgs = [_messages(t, [x.text for x in convs[t].turns if x.speaker == "user"]) for t in names]
    real_msgs = [_messages(t, talks[t].seeker) for t in names]
    table = Table([m for ms in sim_msgs for m in ms], [m for ms in real_msgs for m in ms], n_boot=n_boot, seed=seed)
    draws = cluster_draws(len(names), n_boot, seed)

    def mean(values: Sequence[float | None]) -> dict[str, Any]:  # one value a talk
        v = np.asarray([np.nan if x is None else x for x in values], dtype=float)
        return estimate(*talk_mean(np.arange(len(v)), v, len(v), draws), int(np.isfinite(v).sum()), n_boot)

    sim_relief = [_sim_relief(convs[t]) for t in names]
    real_relief = [seeker_relief(talks[t].initial, talks[t].final, talks[t].supporter_turns) for t in names]
    relief: dict[str, Any] = {"sim": mean(sim_relief), "real": mean(real_relief)}
    s, lo, hi = relief["sim"]["value"], relief["real"]["lo"], relief["real"]["hi"]
    relief["goal"] = "within the real talks' interval"
    relief["verdict"] = "n/a" if s is None or lo is None else "met" if lo <= s <= hi else "not met"
    cap = store.config().get("turns")
    lengths = {"sim": [float(len(m)) for m in sim_msgs], "real": [float(len(m)) for m in real_msgs]}
    turns: dict[str, Any] = {side: mean(v) for side, v in lengths.items()}
    # people's talks cut where the simulated ones are (the opening and one message a supporter turn at most): a
    # simulated talk that reached the cap went on as far as it could
    turns["real_at_cap"] = mean([min(n, cap + 1) if cap else n for n in lengths["real"]])
    s, lo, hi = turns["sim"]["value"], turns["real_at_cap"]["lo"], turns["real_at_cap"]["hi"]
    turns["goal"] = "within people's interval, their talks cut at the same cap"
    turns["verdict"] = "n/a" if s is None or lo is None else "met" if lo <= s <= hi else "not met"
    depth = max(len(m) for m in sim_msgs)
    out.update(
        rows=table.rows(),
        seeker_turns=turns,
        words_by_turn=[{"turn": k + 1, "sim": _median([m[k].text for m in sim_msgs if k < len(m)]),
                        "real": _median([m[k].text for m in real_msgs if k < len(m)])} for k in range(depth)],
        relief=relief,
        endings=dict(Counter(convs[t].termination for t in names)),
        last_thanks_or_bye={"sim": mean([_goodbye(m) for m in sim_msgs]),
                            "real": mean([_goodbye(m) for m in real_msgs])},
        turns_cap=cap,
    )  # fmt: skip
    return out


def _messages(talk: str, texts: list[str]) -> list[Message]:
    return [Message(talk, t, tuple(texts[:i])) for i, t in enumerate(texts)]


def _median(texts: list[str]) -> float | None:
    return float(np.median([words(t) for t in texts])) if texts else None


def _goodbye(msgs: list[Message]) -> float | None:
    return float(bool(GOODBYE.search(msgs[-1].text))) if msgs else None


def _sim_relief(conv: Conversation) -> float | None:
    """Intensity fallen per supporter turn in a simulated talk (None for a user without an inner state)."""
    replies = sum(t.speaker == "supporter" for t in conv.turns)
    if len(conv.states) < 2 or not replies:
        return None
    return (conv.states[0].intensity - conv.states[-1].intensity) / replies


def agent_of(store: RunStore) -> str:
    """The simulated user's agent of the run (``chain``, ``simple``, ...)."""
    return str((store.config().get("user_agent") or {}).get("agent", "chain"))


def realism_table(store: RunStore, *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    cfg = store.config()
    return {
        "kind": "realism",
        "user_model": user_model(cfg),
        "user_agent": agent_of(store),
        "next": next_table(store, seed=seed, n_boot=n_boot),
        "whole": whole_table(store, seed=seed, n_boot=n_boot),
        "wall_s": float(store.meta().get("wall_s", "0")),
        "n_boot": n_boot,
        "seed": seed,
    }
