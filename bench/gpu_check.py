"""The training stages on a GPU, as one prepared command: `emoharbor evolve sft`, `evolve dpo` and `evolve grpo`
(whole episodes with the rule-based user) for a few optimiser steps each, on a small Llama built here from a
config with the tests' tokenizer (nothing is downloaded), printing each step's time and the peak GPU memory.

    bash bench/gpu_check.sh           # CUDA in bfloat16 (docs/gpu.md: how to carry it to a GPU machine)
    bash bench/gpu_check.sh --cpu     # its dry run: the same stages and steps on the CPU in float32, tiny sizes

Each stage is the emoharbor command itself (``emoharbor.cli.main``) in a process of its own, so its peak memory is
its own; a transformers callback added to the stage's trainer times each optimiser step (the GPU synchronised
before and after) and reads ``torch.cuda.max_memory_allocated()`` after it (the most the process has held so
far), and at the start of training says where the model is and in which precision. The stages run one after
another on one chain: SFT from the built model (M0), DPO of M0 on pairs made from the same data (M1), GRPO of
M1. The whole check has ``--limit-s`` seconds (8 minutes); the per-step lines, a table per stage and
``gpu_check: ok`` (or ``gpu_check: FAILED: why``) are printed on standard output, the commands' own log on
standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TAG = "@gpu_check "  # the child's machine-read lines
STAGES = ("sft", "dpo", "grpo")
# What a GPU machine with torch, transformers, peft and accelerate may lack or hold at other versions: the packages
# the three commands import beyond torch, numpy, pandas and pyarrow (whose wheels are large), carried at the
# versions installed where ``--wheels`` runs (the tested ones), about 30 MB. emoharbor itself is the checkout's src/.
WHEELS = (
    "trl", "datasets", "dill", "multiprocess", "transformers", "huggingface-hub", "hf-xet", "kernels", "tomlkit",
    "peft", "accelerate", "regex", "openai", "httpx2", "httpcore2", "truststore", "sniffio", "jiter", "pydantic",
    "pydantic-core", "annotated-types", "typing-inspection", "jsonschema", "jsonschema-specifications",
    "referencing", "rpds-py", "click", "httpx", "httpcore", "anyio",
)  # fmt: skip
# the GPU machines' Python (docs/gpu.md), and the Linux x86-64 platforms their compiled wheels may be built for
WHEEL_PYTHON = "3.12"
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64",
             "manylinux1_x86_64")  # fmt: skip
CARRY_MIB = 60  # what travels to the machine is 64 MiB at most, the checkout (about 3 MB) included
# (hidden size, layers, SFT batch, DPO batch, GRPO completions per step, tokens per supporter turn, max_length)
SIZES = {"cuda": (512, 8, 8, 4, 8, 48, 512), "cpu": (64, 2, 2, 2, 4, 8, 256)}


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpu", action="store_true", help="the dry run: CPU, float32, tiny sizes")
    p.add_argument("--steps", type=int, default=3, help="optimiser steps of each stage")
    p.add_argument("--hidden", type=int, default=None, help="the model's hidden size (cuda 512, cpu 64)")
    p.add_argument("--layers", type=int, default=None, help="the model's layers (cuda 8, cpu 2)")
    p.add_argument("--limit-s", type=float, default=480.0, help="the whole check's time limit in seconds")
    p.add_argument("--work", type=Path, default=None, help="folder for the model, data and stages (default: a temp)")
    p.add_argument("--wheels", type=Path, nargs="?", const=ROOT / ".whl", default=None,
                   help="download the wheels a GPU machine lacks into this folder (.whl) and stop")  # fmt: skip
    p.add_argument("--python-version", default=WHEEL_PYTHON, help="the GPU machine's Python, for --wheels")
    p.add_argument("--child", choices=STAGES, help=argparse.SUPPRESS)  # a stage's process
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)  # the child's emoharbor arguments, after --
    return p.parse_args(argv)


# -- a stage's process ---------------------------------------------------------------------------------------


def emit(**fields: Any) -> None:
    print(TAG + json.dumps(fields), flush=True)


def child(stage: str, argv: list[str]) -> None:
    """``emoharbor evolve STAGE ARGV`` in this process, with the step clock added to its trainer."""
    import torch
    from transformers import TrainerCallback

    from emoharbor.evolve import dpo, grpo, sft

    cuda = torch.cuda.is_available() and os.environ.get("GPU_CHECK_DEVICE") == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    class StepClock(TrainerCallback):  # type: ignore[misc]
        started = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            params = list(model.parameters())
            base = next(p for p in params if not p.requires_grad)
            adapter = next(p for p in params if p.requires_grad)
            emit(event="model", device=str(base.device), dtype=str(base.dtype).removeprefix("torch."),
                 adapter_dtype=str(adapter.dtype).removeprefix("torch."), bf16=bool(args.bf16),
                 fp16=bool(args.fp16), use_cpu=bool(args.use_cpu),
                 gpu=torch.cuda.get_device_name() if cuda else None)  # fmt: skip

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            emit(event="step", step=state.global_step, of=state.max_steps, s=time.perf_counter() - self.started,
                 peak_gpu_mib=torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
                 rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # fmt: skip

    def clocked(fit: Any) -> Any:
        def run(trainer: Any, out: Path, *, stage: str, log: Any) -> Any:
            trainer.add_callback(StepClock())
            return fit(trainer, out, stage=stage, log=log)

        return run

    for module in (sft, dpo, grpo):  # each stage module calls the trainer's fit by this name
        module.fit = clocked(module.fit)  # type: ignore[attr-defined]
    from emoharbor.cli import main

    main(["evolve", stage, *argv])


# -- the check -----------------------------------------------------------------------------------------------


def preflight(cpu: bool) -> str:
    """The libraries' versions and the device, in one line; a missing library or GPU ends the check here."""
    import importlib.metadata as md
    import importlib.util

    names = ["torch", "transformers", "peft", "accelerate", "trl", "datasets"]
    missing, have = [], []
    for name in names:
        try:
            have.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            missing.append(name)
    if missing:
        fail(f"not installed: {', '.join(missing)} (docs/gpu.md: the wheels to carry)")
    found = importlib.util.find_spec("emoharbor")
    if found is None or found.origin is None:
        fail("emoharbor cannot be imported: run bash bench/gpu_check.sh, which puts the checkout's src/ first")
    have.append(f"emoharbor from {Path(str(found.origin)).parent}")
    import torch

    if cpu:
        return f"{', '.join(have)}; device cpu, float32"
    if not torch.cuda.is_available():
        fail("torch sees no GPU (torch.cuda.is_available() is False): bash bench/gpu_check.sh --cpu is the dry run")
    return f"{', '.join(have)}; device {torch.cuda.get_device_name()} (CUDA {torch.version.cuda}), bfloat16"


def unmet() -> list[str]:
    """emoharbor's requirements (its core and the train extra, from pyproject.toml) and theirs, down the tree,
    that this environment does not meet (torch's version aside: a GPU machine has its own CUDA build)."""
    import importlib.metadata as md
    import tomllib

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo = [("emoharbor", r) for r in [*project["dependencies"], *project["optional-dependencies"]["train"]]]
    seen: set[str] = set()
    out = []
    while todo:
        who, text = todo.pop(0)
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            out.append(f"{req.name} is missing ({who} wants {req})")
            continue
        if name != "torch" and not req.specifier.contains(version, prereleases=True):
            out.append(f"{req.name} {version} ({who} wants {req.specifier})")
        if name not in seen and name != "torch":
            seen.add(name)
            todo += [(req.name, r) for r in md.requires(req.name) or []]
    return out


def download_wheels(folder: Path, python: str) -> None:
    """The wheels of ``WHEELS`` at this environment's versions, for a Linux x86-64 machine's ``python``."""
    import importlib.metadata as md

    pins = [f"{name}=={md.version(name)}" for name in WHEELS]
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           *[x for p in PLATFORMS for x in ("--platform", p)], "-d", str(folder), *pins]  # fmt: skip
    subprocess.run(cmd, check=True)
    (folder / "python-version").write_text(python + "\n", encoding="utf-8")  # gpu_check.sh installs them only there
    wanted = {n.replace("-", "_").lower() for n in WHEELS}
    files = sorted(f for f in folder.glob("*.whl") if f.name.split("-")[0].lower() in wanted)
    mib = sum(f.stat().st_size for f in files) / 2**20
    print(f"gpu_check: {len(files)} wheels in {folder}, {mib:.1f} MiB (Python {python}, Linux x86-64)")
    if mib > CARRY_MIB:
        fail(f"the wheels are {mib:.0f} MiB: more than the {CARRY_MIB} MiB that travel with the checkout")


def fail(why: str) -> None:
    print(f"gpu_check: FAILED: {why}", flush=True)
    raise SystemExit(1)


def prepare(work: Path, a: argparse.Namespace, device: str) -> Path:
    """The model folder, the data, the pairs and the evolve config; the config's path."""
    import yaml

    sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny model and tokenizer
    from emoharbor.evolve.config import load_evolve_config
    from evolve_helpers import tiny_model_dir
    from train import synthetic_esconv, write_bench_pairs  # beside this file

    hidden, layers, sft_batch, dpo_batch, grpo_batch, tokens, max_length = SIZES[device]
    tiny_model_dir(work / "model", hidden=a.hidden or hidden, layers=a.layers or layers)
    synthetic_esconv(work / "esconv.jsonl", 64)
    every = {"max_steps": a.steps, "logging_steps": 1, "save_steps": 1000, "learning_rate": 1e-4}
    raw = {
        "base_model": str(work / "model"), "device": device, "dtype": "bfloat16" if device == "cuda" else "float32",
        "system_prompt": "Be a kind listener.", "lora": {"r": 8, "alpha": 16, "dropout": 0.0},
        "sft": {"data": [str(work / "esconv.jsonl")], "max_examples": 64, "max_length": max_length,
                "train_args": {**every, "per_device_train_batch_size": sft_batch}},
        "dpo": {"max_length": max_length, "train_args": {**every, "per_device_train_batch_size": dpo_batch}},
        "grpo": {"contexts": {"profiles": ["builtin:p00*"], "n": 8},
                 "reward": {"user_agent": "rules", "max_words": 1},  # too_long: a spread of rewards, a gradient
                 "episodes": {"enabled": True, "max_turns": 2},
                 "train_args": {**every, "per_device_train_batch_size": grpo_batch, "num_generations": 4,
                                "max_completion_length": tokens}},
    }  # fmt: skip
    config = work / "evolve.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    write_bench_pairs(load_evolve_config(config), work / "pairs.jsonl")
    return config


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def commands(work: Path, config: Path) -> dict[str, list[str]]:
    c = ["--config", str(config)]
    return {
        "sft": [*c, "--out", str(work / "m0")],
        "dpo": [*c, "--model", str(work / "m0"), "--pairs", str(work / "pairs.jsonl"), "--out", str(work / "m1")],
        "grpo": [*c, "--model", str(work / "m1"), "--out", str(work / "m2"), "--no-eval", "--quiet"],
    }


def run_stage(stage: str, argv: list[str], work: Path, device: str, left_s: float) -> list[dict[str, Any]]:
    """One stage's process; its step and model lines as they come (each step printed at once)."""
    path = os.pathsep.join(x for x in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if x)
    env = {**os.environ, "GPU_CHECK_DEVICE": device, "EMOHARBOR_CACHE_DIR": str(work / "cache"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1",
           "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}  # fmt: skip
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", stage, "--", *argv]
    started = time.monotonic()
    events: list[dict[str, Any]] = []
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if time.monotonic() - started > left_s:
                proc.kill()
                break
            if not line.startswith(TAG):
                continue
            e = json.loads(line[len(TAG) :])
            events.append(e)
            if e["event"] == "model":
                print(f"{stage:<5} model on {e['device']}, {e['dtype']} (adapter {e['adapter_dtype']}), trainer "
                      f"bf16={e['bf16']} fp16={e['fp16']} use_cpu={e['use_cpu']}", flush=True)  # fmt: skip
            else:
                gpu = f"{e['peak_gpu_mib']:.1f} MiB" if e["peak_gpu_mib"] is not None else "-"
                print(f"{stage:<5} step {e['step']}/{e['of']}  {e['s']:.3f} s  peak GPU {gpu}  peak RSS "
                      f"{e['rss_mib']:.0f} MiB", flush=True)  # fmt: skip
        try:
            proc.wait(timeout=max(1.0, left_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if time.monotonic() - started > left_s:
        fail(f"{stage} did not end within the check's time limit")
    if proc.returncode != 0:
        fail(f"emoharbor evolve {stage} exited with status {proc.returncode} (its log is above, on standard error)")
    return events


def check_stage(stage: str, events: list[dict[str, Any]], steps: int, device: str, out: Path) -> None:
    model = [e for e in events if e["event"] == "model"]
    got = [e["step"] for e in events if e["event"] == "step"]
    if got != list(range(1, steps + 1)):
        fail(f"{stage}: steps {got} were timed, not 1 to {steps}")
    if not model:
        fail(f"{stage}: the trainer never said where its model was")
    m = model[0]
    want = ("cuda", "bfloat16", True) if device == "cuda" else ("cpu", "float32", False)
    if (m["device"].split(":")[0], m["dtype"], m["bf16"]) != want:
        fail(f"{stage}: the model was on {m['device']} in {m['dtype']} (bf16={m['bf16']}), not {want[0]} in {want[1]}")
    if not (out / "evolve_model.json").is_file():
        fail(f"{stage}: no model card in {out}")


def summary(results: dict[str, list[dict[str, Any]]], cuda: bool) -> None:
    print("\nstage  steps  first step s  mean of the rest s  total s  peak GPU MiB  peak RSS MiB")
    for stage, events in results.items():
        t = [e["s"] for e in events if e["event"] == "step"]
        last = [e for e in events if e["event"] == "step"][-1]
        rest = f"{sum(t[1:]) / len(t[1:]):.3f}" if len(t) > 1 else "-"
        gpu = f"{last['peak_gpu_mib']:.1f}" if cuda else "-"
        print(f"{stage:<6} {len(t):<6} {t[0]:<13.3f} {rest:<19} {sum(t):<8.3f} {gpu:<13} {last['rss_mib']:.0f}")


def main() -> None:
    a = arguments()
    if a.child:
        child(a.child, a.rest)
        return
    if a.wheels is not None:
        download_wheels(a.wheels.resolve(), a.python_version)
        return
    started = time.monotonic()
    device = "cpu" if a.cpu else "cuda"
    print(f"gpu_check: {preflight(a.cpu)}", flush=True)
    for line in unmet():  # said, not fatal: the check shows whether the stages run all the same
        print(f"gpu_check: unmet requirement: {line} (bash bench/gpu_check.sh --wheels: docs/gpu.md)", flush=True)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        work = (a.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        with stdout_to_stderr():  # the tokenizer's training writes its progress on standard output
            config = prepare(work, a, device)
        print(f"gpu_check: model, data and config in {work} ({time.monotonic() - started:.1f} s)", flush=True)
        results = {}
        for stage, argv in commands(work, config).items():
            left = a.limit_s - (time.monotonic() - started)
            if left <= 0:
                fail(f"the time limit ({a.limit_s:.0f} s) was reached before {stage}")
            t = time.monotonic()
            results[stage] = run_stage(stage, argv, work, device, left)
            check_stage(stage, results[stage], a.steps, device, Path(argv[argv.index("--out") + 1]))
            print(f"{stage:<5} done in {time.monotonic() - t:.1f} s (process start, loading and saving included)",
                  flush=True)  # fmt: skip
        summary(results, device == "cuda")
    wall = time.monotonic() - started
    print(f"gpu_check: ok: sft, dpo and grpo, {a.steps} steps each, on {device} in {wall:.0f} s", flush=True)


if __name__ == "__main__":
    main()
