"""Benchmark: the agreement table of `emoharbor validate` (``validation_table``) on synthetic runs.

    python bench/validation_table.py                      # n = 100, 400, 1300; embedding baseline off
    python bench/validation_table.py --embedding          # the same with the embedding baseline on
    python bench/validation_table.py --sizes 100 --n-boot 500

Builds a validate store of n invented conversations (replays of 8 turns out of dialogs of 10-16; a
user-judge that saw the replayed turns and a third-party judge that saw the whole dialog, both with
probability-weighted scores, so every kind of row is there), then prints the wall time of one
``validation_table`` call at each n, with the number of rows and bootstrap cells it computed.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from emoharbor.assess.dimensions import keys
from emoharbor.store.run_store import RunStore
from emoharbor.validate.analysis import validation_table

WORDS = ["I", "you", "feel", "so", "tired", "work", "sleep", "friend", "family", "job", "worry", "help", "day"]
JUDGES = {"user": "replayed", "third_party:bench": "all"}


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def replay_record(i: int, rng: random.Random) -> dict[str, Any]:
    """One invented replay: the whole dialog, its first 8 turns replayed, a survey and a state trajectory."""
    dialog = [
        {"speaker": "user" if t % 2 == 0 else "supporter", "text": _text(rng, rng.randint(3, 40))}
        for t in range(rng.choice([10, 12, 14, 16]))
    ]
    empathy, relevance = rng.randint(1, 5), rng.randint(1, 5)
    drop = rng.randint(-1, 4)
    return {
        "id": f"bench:{i}",
        "profile_id": f"esconv-{i}",
        "supporter": "esconv-human",
        "turns": dialog[:8],
        "dialog_turns": dialog,
        "states": [{"turn": t, "intensity": rng.randint(10, 90), "trust": 50} for t in range(5)],
        "termination": "max_turns",
        "esconv": {
            "source": "bench",
            "index": i,
            "survey": {"empathy": empathy, "relevance": relevance},
            "intensity_drop": drop,
            "failed": drop <= 0 or empathy <= 2 or relevance <= 2,
            "from_failed_set": False,
            "supporter_turns_total": len(dialog) // 2,
            "supporter_turns_replayed": 4,
            "truncated": len(dialog) > 8,
        },
    }


def assessment(conv: str, judge: str, saw: str, rng: random.Random) -> dict[str, Any]:
    scores = {k: rng.randint(1, 5) for k in keys()}
    expected = {k: min(5.0, max(1.0, v + rng.uniform(-0.5, 0.5))) for k, v in scores.items()}
    return {"judge": judge, "conversation": conv, "saw": saw, "status": "ok", "scores": scores, "expected": expected}


def synthetic_store(folder: Path, n: int, seed: int = 0) -> RunStore:
    rng = random.Random(seed)
    store = RunStore.create_or_resume(folder, "validate", {"user": {"model": "bench"}, "max_supporter_turns": 4}, "b")
    for i in range(n):
        rec = replay_record(i, rng)
        store.put("replay", (rec["id"],), {"status": "ok", **rec})
        for judge, saw in JUDGES.items():
            store.put("assessment", (rec["id"], judge), assessment(rec["id"], judge, saw, rng))
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1300])
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--embedding", action="store_true", help="compute the embedding baseline too")
    a = ap.parse_args()
    print(f"validation_table, {a.n_boot} resamples, embedding baseline {'on' if a.embedding else 'off'}")
    print(f"{'conversations':>14}{'rows':>6}{'cells':>7}{'wall s':>9}")
    for n in a.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = synthetic_store(Path(tmp) / "run", n)
            started = time.perf_counter()
            data = validation_table(store, n_boot=a.n_boot, embedding=a.embedding)
            wall = time.perf_counter() - started
            store.close()
        rows = sum(len(data[k]) for k in ("rows", "baselines", "margins", "differences"))
        print(f"{n:>14}{rows:>6}{rows * len(data['targets']):>7}{wall:>9.1f}")


if __name__ == "__main__":
    main()
