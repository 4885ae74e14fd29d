"""Benchmark: the training stages of `emoharbor evolve` (SFT, then DPO) with the tiny test model, on the
same data and for the same number of optimiser steps, printing tokens per second and peak memory.

    python bench/train.py --path trl       # trl.SFTTrainer / trl.DPOTrainer, and the loop's saved figures
    python bench/train.py --path loop      # the home-made loop's figures, measured before it was removed

The home-made loop (emoharbor's own AdamW loop and DPO loss) was removed when training moved to TRL;
its figures below were printed by this script, on the code at commit 89b6b94, on the same machine, and
are shown beside the TRL figures for the same arguments.

Data: ESConv supporter turns from ../shared/data/esconv/train.jsonl (read where it is), or, without it,
synthetic conversations. The DPO pairs are built from the same examples: chosen = the real supporter
reply, rejected = the reply of the next example (a reply to another conversation). Each stage runs in
its own process, so its peak RSS is its own. Tokens = the mean tokens of an example (prompt + reply, as
emoharbor encodes it; a pair counts its chosen and its rejected sequence) x examples per step x steps.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ESCONV = ROOT / ".." / "shared" / "data" / "esconv" / "train.jsonl"
sys.path.insert(0, str(ROOT / "tests"))  # the tiny model of the tests


# printed by `bench/train.py --path loop` (the fastest of 3 runs of each stage) at commit 89b6b94,
# 2 shared CPU cores, torch 2.13.0+cpu: (layers, hidden) -> stage -> row
LOOP_COMMIT = "89b6b94"
LOOP_ARGS = {"steps": 32, "examples": 64, "batch": 4, "pair_batch": 2, "max_length": 256, "device": "cpu",
             "gradient_checkpointing": False}  # fmt: skip
LOOP_COLUMNS = ("stage", "tokens", "tokens_per_s", "train_s", "stage_s", "peak_rss_mb", "first_loss", "last_loss",
                "runs")  # fmt: skip
LOOP_ROWS = {
    (2, 64): [("sft", 26869, 55547, 0.48, 3.67, 480, 5.7335, 5.5297, [0.48, 0.5, 0.5]),
              ("dpo", 26530, 53367, 0.50, 3.88, 444, 0.6931, 0.7064, [0.52, 0.5, 0.55])],
    (4, 256): [("sft", 26869, 9357, 2.87, 6.07, 625, 5.7617, 4.9498, [2.87, 8.64, 3.36]),
               ("dpo", 26530, 8733, 3.04, 7.83, 589, 0.6931, 0.9697, [3.04, 3.14, 3.49])],
}  # fmt: skip
LOOP_MEASURED: dict[tuple[int, int], list[dict[str, Any]]] = {
    k: [dict(zip(LOOP_COLUMNS, r, strict=True), steps=32, peak_cuda_mb=None) for r in rows]
    for k, rows in LOOP_ROWS.items()
}


def synthetic_esconv(path: Path, n: int) -> None:
    seeker = ["I feel so anxious about my job and I cannot sleep at night.",
              "My friend stopped talking to me and I do not know why.",
              "I am stressed about exams, my parents expect a lot from me."]  # fmt: skip
    supporter = ["That sounds really hard. What has been on your mind the most?",
                 "It makes sense that you feel hurt. Would you like to talk about it?",
                 "You are carrying a lot right now. What would help you most today?"]  # fmt: skip
    with path.open("w") as f:
        for i in range(n):
            turns = []
            for k in range(4):
                turns += [
                    {"speaker": "usr", "text": seeker[(i + k) % 3]},
                    {"speaker": "sys", "text": supporter[(i + k) % 3]},
                ]
            f.write(
                json.dumps({"dialog": turns, "emotion_type": "anxiety", "problem_type": "job", "situation": "x"}) + "\n"
            )


def config(base: Path, data: Path, pairs: Path, a: argparse.Namespace) -> Any:
    from emoharbor.evolve.config import EvolveConfig

    train = {"logging_steps": 1, "max_steps": a.steps, "num_train_epochs": 100, "learning_rate": 1e-3,
             "activation_checkpointing": a.gradient_checkpointing}  # fmt: skip
    return EvolveConfig.model_validate({
        "base_model": str(base), "device": a.device, "rounds": 1, "system_prompt": "Be a kind listener.",
        "lora": {"r": 8, "alpha": 16, "dropout": 0.0},
        "sft": {"data": [str(data)], "max_examples": a.examples, "max_length": a.max_length,
                "train_args": {"per_device_train_batch_size": a.batch, **train}},
        "dpo": {"max_length": a.max_length, "train_args": {"per_device_train_batch_size": a.pair_batch, **train}},
    })  # fmt: skip


def sft_examples(cfg: Any) -> list[Any]:
    from emoharbor.evolve.data import esconv_examples, mix_examples
    from emoharbor.simulate.supporter import supporter_prompt

    es, _ = esconv_examples(cfg.sft.data, supporter_prompt(cfg.system_prompt).text.strip())
    return mix_examples(es, [], share=0.0, max_examples=cfg.sft.max_examples, seed=cfg.seed)


def write_bench_pairs(cfg: Any, out: Path) -> None:
    from emoharbor.evolve.pairs import PreferencePair, write_pairs

    ex = sft_examples(cfg)
    write_pairs(out, [PreferencePair(e.messages, e.reply, ex[(i + 1) % len(ex)].reply, f"b{i}", "bench")
                      for i, e in enumerate(ex)])  # fmt: skip


def mean_tokens(cfg: Any, stage: str, pairs: Path) -> float:
    from emoharbor.evolve.data import encode
    from emoharbor.evolve.pairs import read_pairs
    from emoharbor.models.hf import load_hf, resolve_hf

    _, tok = load_hf(resolve_hf(cfg.base_model), device="cpu")
    if stage == "sft":
        lens = [
            len(e.input_ids) for x in sft_examples(cfg) if (e := encode(tok, x.messages, x.reply, cfg.sft.max_length))
        ]
        return sum(lens) / len(lens)
    lens = []
    for p in read_pairs(pairs):
        c, r = (
            encode(tok, p.prompt, p.chosen, cfg.dpo.max_length),
            encode(tok, p.prompt, p.rejected, cfg.dpo.max_length),
        )
        if c and r:
            lens.append(len(c.input_ids) + len(r.input_ids))
    return sum(lens) / len(lens)


def stage(a: argparse.Namespace) -> None:
    """One stage in this process; prints one JSON line."""
    import torch

    from emoharbor.evolve import trainer

    engine = getattr(trainer, "ENGINE", "loop")
    if engine != a.path:
        raise SystemExit(f"--path {a.path}: the code in this tree trains with '{engine}'")
    work = Path(a.work)
    cfg = config(work / "tiny", work / "esconv.jsonl", work / "pairs.jsonl", a)
    t = time.monotonic()
    if a.stage == "sft":
        from emoharbor.evolve.sft import run_sft

        summary = run_sft(cfg, work / a.path / f"m0-{a.run}", log=lambda s: None)
        per_step = a.batch
    else:
        from emoharbor.evolve.dpo import run_dpo

        summary = run_dpo(cfg, work / a.path / "m0-0", [work / "pairs.jsonl"], work / a.path / f"m1-{a.run}",
                          log=lambda s: None)  # fmt: skip
        per_step = a.pair_batch
    stage_s = time.monotonic() - t
    tr = summary["train"]
    tokens = mean_tokens(cfg, a.stage, work / "pairs.jsonl") * per_step * tr["steps"]
    print(json.dumps({
        "stage": a.stage, "steps": tr["steps"], "tokens": round(tokens), "train_s": tr["wall_s"], "stage_s": stage_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_cuda_mb": torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None,
        "first_loss": tr["logs"][0]["loss"], "last_loss": tr["logs"][-1]["loss"],
    }))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", choices=["loop", "trl"], required=True)
    ap.add_argument("--steps", type=int, default=32, help="optimiser steps of each stage")
    ap.add_argument("--examples", type=int, default=64, help="ESConv examples (and pairs built from them)")
    ap.add_argument("--batch", type=int, default=4, help="SFT examples per step")
    ap.add_argument("--pair-batch", type=int, default=2, help="DPO pairs per step")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=64, help="hidden size of the Llama (the tests' is 64)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each stage; the fastest is shown (a shared machine)")
    ap.add_argument("--stage", choices=["sft", "dpo"], help=argparse.SUPPRESS)
    ap.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.stage:
        stage(a)
        return
    from emoharbor.evolve import trainer

    engine = getattr(trainer, "ENGINE", "loop")
    saved = LOOP_MEASURED.get((a.layers, a.hidden)) if all(getattr(a, k) == v for k, v in LOOP_ARGS.items()) else None
    if a.path == "loop" and engine != "loop":
        if saved is None:
            sys.exit(f"the loop was removed; its figures were measured with {LOOP_ARGS} and (layers, hidden) in "
                     f"{sorted(LOOP_MEASURED)} only")  # fmt: skip
        print(f"path loop, measured before its removal at commit {LOOP_COMMIT}; Llama ({a.layers} layers, hidden "
              f"{a.hidden}), {LOOP_ARGS}")  # fmt: skip
        table(saved)
        return
    from evolve_helpers import tiny_model_dir

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tiny_model_dir(work / "tiny", hidden=a.hidden, layers=a.layers)
        data = work / "esconv.jsonl"
        if ESCONV.is_file():
            data.symlink_to(ESCONV.resolve())  # read where it is
            source = f"ESConv {ESCONV.resolve()}"
        else:
            synthetic_esconv(data, 64)
            source = "synthetic conversations"
        write_bench_pairs(config(work / "tiny", data, work / "pairs.jsonl", a), work / "pairs.jsonl")
        rows = []
        for st in ("sft", "dpo"):
            runs = []
            for k in range(a.repeat):
                argv = [sys.executable, __file__, *sys.argv[1:], "--stage", st, "--work", tmp, "--run", str(k)]
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
                if done.returncode:
                    sys.exit(f"{st} failed:\n{done.stderr[-3000:]}")
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            rows.append(min(runs, key=lambda r: r["train_s"]) | {"runs": [round(r["train_s"], 2) for r in runs]})
    import torch

    print(f"path {a.path}; Llama ({a.layers} layers, hidden {a.hidden}, vocabulary 300), LoRA r 8 on q,k,v,o; {source}")
    print(f"{a.examples} examples, max_length {a.max_length}, {a.steps} steps per stage, SFT batch {a.batch}, "
          f"DPO batch {a.pair_batch} pairs; device {a.device}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, gradient checkpointing {a.gradient_checkpointing}; "
          f"the fastest of {a.repeat} runs of each stage")  # fmt: skip
    table(rows)
    if saved is not None and a.path == "trl":
        print(f"path loop, the same arguments, measured before its removal at commit {LOOP_COMMIT}:")
        table(saved)


def table(rows: list[dict[str, Any]]) -> None:
    print(f"{'stage':6}{'steps':>6}{'tokens':>8}{'train s':>9}{'tokens/s':>10}{'stage s':>9}{'peak RSS MB':>13}"
          f"{'peak CUDA MB':>14}{'loss first':>12}{'loss last':>11}  train s of every run")  # fmt: skip
    for r in rows:
        cuda = f"{r['peak_cuda_mb']:.0f}" if r["peak_cuda_mb"] is not None else "-"
        per_s = r.get("tokens_per_s", r["tokens"] / r["train_s"])
        print(f"{r['stage']:6}{r['steps']:>6}{r['tokens']:>8}{r['train_s']:>9.2f}{per_s:>10.0f}"
              f"{r['stage_s']:>9.2f}{r['peak_rss_mb']:>13.0f}{cuda:>14}{r['first_loss']:>12.4f}{r['last_loss']:>11.4f}"
              f"  {r['runs']}")  # fmt: skip


if __name__ == "__main__":
    main()
