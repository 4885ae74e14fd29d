"""Preference pairs: the JSONL form, export from EmoHarbor and HEART run stores built here, and the
evaluation guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emoharbor.cli import main
from emoharbor.errors import DataError
from emoharbor.evolve.export import export_run
from emoharbor.evolve.guard import EvalGuard, load_guard
from emoharbor.evolve.pairs import PreferencePair, read_pairs, write_pairs
from emoharbor.store.run_store import RunStore

OPENER = "I have been feeling really low since my sister moved abroad last month."


def turns(*texts: str) -> list[dict[str, str]]:
    return [{"speaker": "user" if i % 2 == 0 else "supporter", "text": t} for i, t in enumerate(texts)]


def emoharbor_store(folder: Path, profiles: list[str] | None = None) -> Path:
    cfg = {"profiles": profiles or ["builtin:*"]}
    store = RunStore.create_or_resume(folder, "emoharbor", cfg, "h1")
    convs = {
        "p1|good|0": ("p1", "good", turns(OPENER, "You miss her a lot; what was she like for you?", "ok")),
        "p1|bland|0": ("p1", "bland", turns(OPENER, "Everything happens for a reason.", "hm")),
        "p1|close|0": ("p1", "close", turns(OPENER, "That sounds lonely.", "yes")),
        "p2|good|0": ("p2", "good", turns("Work is too much.", "What part weighs most?")),
        "p2|bland|0": ("p2", "bland", turns("Something else entirely.", "Take a break.")),
        "p3|good|0": ("p3", "good", turns("hi", "hello")),
    }
    for key, (pid, sup, t) in convs.items():
        store.put("conversation", tuple(key.split("|")), {"id": key, "profile_id": pid, "supporter": sup, "turns": t,
                                                          "status": "ok"})  # fmt: skip
    scores = {"p1|good|0": [5, 4, None], "p1|bland|0": [2, 2, 3], "p1|close|0": [4, 4, 4],
              "p2|good|0": [5, 5, 5], "p2|bland|0": [1, 1, 1]}  # fmt: skip
    for key, vals in scores.items():
        dims = dict(zip(["validation", "warmth", "memory"], vals, strict=True))
        store.put("assessment", (*key.split("|"), "user"),
                  {"judge": "user", "conversation": key, "scores": dims, "status": "ok"})  # fmt: skip
        # a third-party judge that disagrees must not decide the user's preference
        store.put("assessment", (*key.split("|"), "tp"), {"judge": "third_party:x", "conversation": key, "status": "ok",
                  "scores": {d: 6 - (v or 3) for d, v in dims.items()}})  # fmt: skip
    store.close()
    return folder


def test_emoharbor_pairs_follow_the_users_scores(tmp_path: Path) -> None:
    pairs, counts = export_run(emoharbor_store(tmp_path / "run"), EvalGuard())
    # p1: good 4.5, close 4.0, bland 2.33; good-close differ by 0.5 (kept at min_margin 0.5)
    got = {(p.provenance["chosen_supporter"], p.provenance["rejected_supporter"]) for p in pairs}
    assert got == {("good", "bland"), ("good", "close"), ("close", "bland")}
    # p2's conversations start differently: no shared context; p3 has no assessment
    assert counts["no_shared_context"] == 1 and counts["unscored"] == 1 and counts["kept"] == 3
    gb = next(
        p for p in pairs if p.provenance["rejected_supporter"] == "bland" and p.provenance["chosen_supporter"] == "good"
    )
    assert gb.prompt == [{"role": "user", "content": OPENER}]
    assert gb.chosen.startswith("You miss her") and gb.rejected == "Everything happens for a reason."
    assert gb.provenance["chosen_score"] == 4.5 and gb.provenance["rejected_score"] == pytest.approx(2.333, abs=1e-3)


def test_margin_and_guard_leave_pairs_out(tmp_path: Path) -> None:
    run = emoharbor_store(tmp_path / "run")
    pairs, counts = export_run(run, EvalGuard(), min_margin=1.0)
    assert counts["margin_too_small"] == 1 and len(pairs) == 2
    pairs, counts = export_run(run, EvalGuard(profile_ids={"p1"}))
    assert pairs == [] and counts["held_out"] == 3


def test_profiles_marked_evaluation_only_are_held_out(tmp_path: Path) -> None:
    prof = tmp_path / "profiles.yaml"
    base = {"name": "A", "age": 30, "personality": {k: 0.5 for k in ("openness", "conscientiousness", "extraversion",
            "agreeableness", "neuroticism")}, "situation": {"problem_type": "x", "story": "y"},
            "emotional_state": {"emotion": "sad", "intensity": 50},
            "needs": {"surface_request": "a", "hidden_need": "b", "hidden_need_type": "venting"}}  # fmt: skip
    prof.write_text(json.dumps([{**base, "id": "p1", "evaluation_only": True}, {**base, "id": "p2"},
                                {**base, "id": "p3"}]))  # fmt: skip
    pairs, counts = export_run(emoharbor_store(tmp_path / "run", [str(prof)]), EvalGuard())
    assert pairs == [] and counts["held_out"] == 3


def heart_store(folder: Path) -> Path:
    store = RunStore.create_or_resume(folder, "heart", {}, "h2")
    hist = [{"speaker": "seeker", "text": OPENER}]
    for hid in ("h1", "h2", "h3"):
        store.put("history", (hid,), {"id": hid, "subset": "regular", "turns": hist})
        for comp, text in (("human", f"human reply {hid}"), ("m", f"model reply {hid}")):
            store.put("candidate", (hid, comp), {"history_id": hid, "competitor": comp, "status": "ok", "text": text})

    def comp(hid: str, judge: str, order: str, winner: str) -> None:
        verdicts = {"overall": {"winner": winner, "strength": 2, "rationale": ""}}
        store.put("comparison", (hid, "human", "m", judge, order), {"history_id": hid, "a": "human", "b": "m",
                  "judge": judge, "order": order, "status": "ok", "verdicts": verdicts})  # fmt: skip

    comp("h1", "j1", "ab", "m"), comp("h1", "j1", "ba", "m")  # held in both orders
    comp("h1", "j2", "ab", "m"), comp("h1", "j2", "ba", "m")
    comp("h2", "j1", "ab", "human"), comp("h2", "j1", "ba", "m")  # flipped with the order
    comp("h3", "j1", "ab", "human"), comp("h3", "j1", "ba", "human")  # held...
    comp("h3", "j2", "ab", "m"), comp("h3", "j2", "ba", "m")  # ...but another judge held the other way
    store.close()
    return folder


def test_heart_pairs_need_both_orders_and_no_dissent(tmp_path: Path) -> None:
    pairs, counts = export_run(heart_store(tmp_path / "heart"), EvalGuard())
    assert len(pairs) == 1 and counts["flipped_or_tie"] == 1 and counts["judges_disagree"] == 1
    p = pairs[0]
    assert (p.chosen, p.rejected) == ("model reply h1", "human reply h1")
    assert p.provenance["judges"] == ["j1", "j2"] and p.prompt == [{"role": "user", "content": OPENER}]
    held, counts = export_run(heart_store(tmp_path / "heart2"), EvalGuard(history_ids={"h1"}))
    assert held == [] and counts["held_out"] == 1


def test_guard_from_a_run_folder_blocks_the_same_text_under_another_id(tmp_path: Path) -> None:
    from emoharbor.data.esconv import EsconvDialog, EsconvTurn

    guard = load_guard([str(heart_store(tmp_path / "heart"))])
    assert guard.history_ids == {"h1", "h2", "h3"}
    same = EsconvDialog("train:7", "x", 7, "", "", "", "", {}, [EsconvTurn("seeker", OPENER.upper() + "!!")])
    other = EsconvDialog("train:8", "x", 8, "", "", "", "", {}, [EsconvTurn("seeker", "Something else, long enough.")])
    assert guard.blocks_dialog(same) and not guard.blocks_dialog(other)


def test_holdout_files_and_their_errors(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("# held out\np9\nh9\n")
    (tmp_path / "h.yaml").write_text("histories: [h1]\ntexts: ['" + OPENER + "']\n")
    g = load_guard([str(tmp_path / "ids.txt"), str(tmp_path / "h.yaml")])
    assert "p9" in g.profile_ids and {"h1", "h9"} <= g.history_ids and g.blocks_text(OPENER)
    (tmp_path / "bad.yaml").write_text("histories: h1\n")
    with pytest.raises(DataError, match=r"bad\.yaml: field 'histories' must be a list"):
        load_guard([str(tmp_path / "bad.yaml")])
    with pytest.raises(DataError, match="not found"):
        load_guard([str(tmp_path / "missing.yaml")])


def test_pair_file_round_trip_and_errors(tmp_path: Path) -> None:
    pair = PreferencePair([{"role": "user", "content": "hi"}], "warm", "cold", "x", "heart", {"run": "r"})
    write_pairs(tmp_path / "p.jsonl", [pair])
    rec: dict[str, Any] = json.loads((tmp_path / "p.jsonl").read_text())
    assert rec["chosen"] == [{"role": "assistant", "content": "warm"}] and rec["prompt"][0]["role"] == "user"
    assert read_pairs(tmp_path / "p.jsonl") == [pair]
    (tmp_path / "s.jsonl").write_text('{"prompt": "hi", "chosen": "a", "rejected": "b"}\n')
    assert read_pairs(tmp_path / "s.jsonl")[0].prompt == [{"role": "user", "content": "hi"}]
    (tmp_path / "bad.jsonl").write_text('{"prompt": "hi", "chosen": "a"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl: line 1: field 'rejected' is missing"):
        read_pairs(tmp_path / "bad.jsonl")
    (tmp_path / "bad2.jsonl").write_text(
        '\n{"prompt": [{"role": "bot", "content": "x"}], "chosen": "a", "rejected": "b"}\n'
    )
    with pytest.raises(DataError, match=r"line 2: field 'prompt'"):
        read_pairs(tmp_path / "bad2.jsonl")


def test_cli_pairs_exports_both_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pairs.jsonl"
    main(["evolve", "pairs", str(emoharbor_store(tmp_path / "e")), str(heart_store(tmp_path / "h")), "--out", str(out)])
    assert "wrote 4 pairs" in capsys.readouterr().out
    assert {p.source for p in read_pairs(out)} == {"emoharbor", "heart"}
    with pytest.raises(SystemExit) as e:
        main(["evolve", "pairs", str(tmp_path / "nothing"), "--out", str(out)])
    assert e.value.code == 2 and "not a run folder" in capsys.readouterr().err
