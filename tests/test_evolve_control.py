"""The control of a run (``evolve control``): DPO from a real M0 of the tiny model on the rounds' pairs with chosen
and rejected swapped at random, for the rounds' steps together; and M0's card saying what SFT showed of the seeker.
The rounds' models are only their cards here (the control reads their pair files and steps; nothing loads them)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("peft")

from emoharbor.cli import main
from emoharbor.evolve.pairs import PreferencePair, read_pairs, write_pairs
from evolve_helpers import esconv_file, tiny_model_dir

SEED = 7


def pairs(tag: str, n: int) -> list[PreferencePair]:
    """``n`` pairs; those of round 1 were refined from a teacher's reflections (``refine.reflector``)."""
    teacher = {"reflector": "teacher-7b"} if tag == "r1-" else {}
    return [PreferencePair([{"role": "user", "content": f"I feel low about {tag} number {i}."}],
                           f"That sounds heavy; what about {tag} {i} weighs most?", f"ok {i}", f"{tag}{i}", "test",
                           teacher) for i in range(n)]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder: a real M0 (one SFT step, half its examples shown the seeker's situation) and two rounds'
    cards (2 and 3 steps) with their pair files, one extra file in both."""
    from emoharbor.evolve.config import EvolveConfig
    from emoharbor.evolve.sft import run_sft

    tmp = tmp_path_factory.mktemp("control")
    cfg = {
        "base_model": str(tiny_model_dir(tmp / "tiny")), "device": "cpu", "seed": SEED, "rounds": 2,
        "system_prompt": "Be a kind listener.", "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
        "sft": {"data": [str(esconv_file())], "max_examples": 8, "max_length": 256, "personal_share": 0.5,
                "train_args": {"max_steps": 1, "per_device_train_batch_size": 2}},
        "dpo": {"max_length": 256, "train_args": {"per_device_train_batch_size": 2, "logging_steps": 1,
                                                  "learning_rate": 1e-3}},
    }  # fmt: skip
    (tmp / "evolve.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp / "evo"
    run_sft(EvolveConfig.model_validate(cfg), out / "m0", log=lambda _: None)
    write_pairs(tmp / "extra.jsonl", pairs("extra", 1))
    for t, (n, steps) in enumerate([(6, 2), (5, 3)], 1):
        write_pairs(out / f"round{t}" / "pairs.jsonl", pairs(f"r{t}-", n))
        (out / f"m{t}").mkdir()
        card = {"base_model": cfg["base_model"], "stage": "dpo", "round": t, "train": {"steps": steps},
                "pairs": {"files": [str(out / f"round{t}" / "pairs.jsonl"), str(tmp / "extra.jsonl")]}}  # fmt: skip
        (out / f"m{t}" / "evolve_model.json").write_text(json.dumps(card))
    return out


def test_m0s_card_says_what_the_examples_showed_of_the_seeker(run: Path) -> None:
    card = json.loads((run / "m0" / "evolve_model.json").read_text())
    shown = card["shown"]
    assert shown["share"] == pytest.approx(0.5) and shown["with_situation"] + shown["talk_only"] == 8
    assert shown["prompt"].startswith("evolve_personal@")
    readme = (run / "m0" / "README.md").read_text()
    assert f"situation in the system prompt of {shown['with_situation']} of 8 examples" in readme


def test_the_control_swaps_a_seeded_half_and_trains_the_rounds_steps(run: Path, capsys: pytest.CaptureFixture[str]
                                                                     ) -> None:  # fmt: skip
    cfg = str(run.parent / "evolve.yaml")
    main(["evolve", "control", "--config", cfg, "--out", str(run)])
    card = json.loads((run / "control" / "evolve_model.json").read_text())
    c = card["control"]
    # the rounds' pairs, the extra file once: 6 + 5 + 1; each swapped as the seeded draws say
    originals = [*pairs("r1-", 6), pairs("extra", 1)[0], *pairs("r2-", 5)]
    draws = random.Random(SEED)
    expected = [draws.random() < 0.5 for _ in originals]
    got = read_pairs(run / "control-pairs.jsonl")
    assert [p.chosen == o.rejected and p.rejected == o.chosen for p, o in zip(got, originals, strict=True)] == expected
    assert [p.provenance["control_swapped"] for p in got] == expected
    assert c["pairs"] == 12 and c["swapped"] == sum(expected) and 0 < c["swapped"] < 12
    assert c["steps"] == 5 and c["round_steps"] == [2, 3] and c["rounds"] == 2
    train = card["train"]
    assert train["steps"] == 5 == len(train["logs"])  # real optimizer steps, as many as the rounds' together
    assert train["logs"][0]["loss"] == pytest.approx(math.log(2), abs=1e-4)  # DPO from M0, its own reference
    assert card["parent"] == str(run / "m0")
    readme = (run / "control" / "README.md").read_text()
    assert "the control (DPO on pairs swapped at random)" in readme and f"{c['swapped']} of them swapped" in readme
    assert card["teachers"] == {"reflector": ["teacher-7b"]} and "Teacher (reflector): `teacher-7b`" in readme
    assert f"{c['swapped']} of 12 pairs swapped, 5 steps" in capsys.readouterr().out
    main(["evolve", "control", "--config", cfg, "--out", str(run)])  # whole: skipped
    assert "is there, skipped" in capsys.readouterr().err


def test_a_run_without_rounds_is_one_line(tmp_path: Path, run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "evo"
    (empty / "m0").mkdir(parents=True)
    (empty / "m0" / "evolve_model.json").write_text((run / "m0" / "evolve_model.json").read_text())
    for out, message in [(tmp_path / "none", "no m0/ with its model card"), (empty, "no trained round")]:
        with pytest.raises(SystemExit) as e:
            main(["evolve", "control", "--out", str(out)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and message in err and "Traceback" not in err
