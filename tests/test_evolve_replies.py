"""``evolve eval``'s reply card: each model's reply to held-out ESConv contexts, scored by the third-party reply
judge on the fake server (probabilities from its log-probabilities), with the paired difference from the first
model. One "model" is the tiny Llama (random text), one a scripted supporter whose replies the fake judge always
rates higher: the difference comes out positive on every context, its interval too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from emoharbor.config import SupporterSpec
from emoharbor.errors import DataError
from emoharbor.evolve import reply_card as rc
from emoharbor.models.spec import ModelSpec
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer
from evolve_helpers import esconv_file, tiny_model_dir

WARM, ODD = "(warm)", "(odd)"
N = 8


def judge_answer(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    """5 for a reply with the warm mark, nothing readable for one with the odd mark, 2 for any other."""
    shown = " ".join(m["content"] for m in messages)  # a re-ask too
    if ODD in shown:
        return "I would rather not say."
    return json.dumps({"helpful": 5 if WARM in shown else 2})


def supporters(tmp_path: Path) -> list[SupporterSpec]:
    tiny = tiny_model_dir(tmp_path / "tiny")
    return [SupporterSpec(model=f"hf:{tiny}", name="M0", max_tokens=8, temperature=1.0),
            SupporterSpec(model="scripted", name="Warm", replies=[f"That sounds so heavy to carry {WARM}."]),
            SupporterSpec(model="scripted", name="Odd", replies=[f"Hmm {ODD} right."])]  # fmt: skip


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))


def test_a_model_the_judge_rates_higher_is_higher_paired_and_unscored_replies_are_counted(tmp_path: Path) -> None:
    with FakeOpenAIServer(reply=judge_answer) as srv:
        judge = ModelSpec(model="fake", base_url=srv.base_url, temperature=0, max_retries=0)
        plan = rc.plan_reply_card([str(esconv_file("valid.jsonl"))], N, judge_card="third_party_reply",
                                  judge_model=judge, trained=[], seed=0, bad=["generic_long", "repeats"])  # fmt: skip
        fig, table = rc.reply_card(plan, supporters(tmp_path), tmp_path / "eval", workers=4, progress=False)
        asked = srv.requests
        again, _ = rc.reply_card(plan, supporters(tmp_path), tmp_path / "eval", workers=4, progress=False)
        assert srv.requests == asked and again["models"] == fig["models"]  # resumed: nothing asked again
    m0, warm, odd = (fig["models"][n] for n in ("M0", "Warm", "Odd"))
    assert fig["contexts"] == N and fig["reference"] == "M0" and fig["judge"].startswith("third_party_reply")
    # read as probabilities: the fake gives 0.5 to the digit it wrote, 0.2 to each neighbour, the rest spread
    assert m0["mean"] == pytest.approx(2.25) and warm["mean"] == pytest.approx(3.9)
    assert m0["scored"] == warm["scored"] == N and m0["written"] == warm["written"] == 0
    assert warm["lo"] == pytest.approx(3.9) and warm["hi"] == pytest.approx(3.9)
    d = warm["minus_first"]
    assert (d["mean"], d["lo"], d["hi"], d["p_above_0"], d["n"]) == pytest.approx((1.65, 1.65, 1.65, 1.0, N))
    assert warm["words"] == pytest.approx(7.0) and warm["words_minus_first"] == pytest.approx(7.0 - m0["words"])
    # the odd replies were never scored: counted, not averaged in; no difference without a scored pair
    assert odd["scored"] == 0 and odd["unscored"] == N and odd["mean"] is None and odd["minus_first"]["n"] == 0
    assert "| Warm | 8 | 8 | 0 | 3.90 [3.90, 3.90] | 7.0 | +1.65 [+1.65, +1.65] | 1.00 |" in table
    assert "| Odd | 8 | 0 | 8 | n/a |" in table and "8 held-out ESConv contexts" in table
    assert json.loads((tmp_path / "eval" / rc.FIGURES).read_text())["models"]["Warm"]["mean"] == pytest.approx(3.9)
    ids = (tmp_path / "eval" / rc.FOLDER / rc.CONTEXTS).read_text().split()
    assert len(ids) == N and all(i.startswith("valid:") for i in ids)
    store = RunStore.open_existing(tmp_path / "eval" / rc.FOLDER)
    replies = dict(store.items(rc.REPLY))
    store.close()
    assert len(replies) == 3 * N + len(plan.bad) and all(r["status"] == "ok" for r in replies.values())
    # the rule-made bad replies: scored on the same contexts as rows of their own, made by no model
    pad = fig["models"][f"{rc.RULE_MADE}generic_long"]
    assert pad["replies"] == pad["scored"] == N and pad["mean"] == pytest.approx(2.25)
    assert pad["minus_first"]["mean"] == pytest.approx(0.0) and pad["minus_first"]["n"] == N
    by_id = {c.id: c for c in plan.contexts}
    for (ctx, row), text in plan.bad.items():
        assert replies[(ctx, row)]["reply"] == text
        if row.endswith("generic_long"):  # padded to the real reply's length at least
            assert len(text.split()) >= len(by_id[ctx].reply.split())
    assert f"| {rc.RULE_MADE}generic_long | 8 | 8 | 0 | 2.25" in table and "made by rules with no model" in table


def test_contexts_come_from_dialogues_no_model_trained_on(tmp_path: Path) -> None:
    train, valid = str(esconv_file()), str(esconv_file("valid.jsonl"))
    m1 = tmp_path / "m1"
    m1.mkdir()
    card = {"base_model": "smollm2", "config": {"sft": {"data": [train]}, "refine": {"data": []}}}
    (m1 / "evolve_model.json").write_text(json.dumps(card))
    guard = rc.trained_guard([m1, tmp_path / "not-a-model"])
    with pytest.raises(DataError, match="no dialogue left for the reply card"):
        rc.held_out_contexts([train], 5, 0, guard)
    contexts = rc.held_out_contexts([valid, train], 30, 0, guard)
    assert len(contexts) == 30 and all(c.id.startswith("valid:") for c in contexts)
    assert all(c.messages[-1]["role"] == "user" for c in contexts)
    card["config"]["refine"]["data"] = [str(tmp_path / "gone.jsonl")]
    (m1 / "evolve_model.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=r"field 'config.refine.data': .*gone.jsonl not found"):
        rc.trained_guard([m1])


def test_evolve_eval_puts_the_reply_card_beside_the_run_and_in_the_model_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from emoharbor.cli import main
    from emoharbor.evolve.evaluate import record_reply_card
    from test_evolve_eval import fake_evaluator

    fake_evaluator(monkeypatch, [])
    m0, m1 = tiny_model_dir(tmp_path / "m0"), tiny_model_dir(tmp_path / "m1", seed=1)
    valid = str(esconv_file("valid.jsonl"))
    with FakeOpenAIServer(reply=judge_answer) as srv:
        cfg = tmp_path / "run.yaml"
        cfg.write_text(f"profiles: ['builtin:*']\nroles:\n  supporter: {{model: scripted, max_tokens: 6}}\n"
                       f"  judge: {{model: fake, base_url: '{srv.base_url}'}}\n")  # fmt: skip
        base = ["evolve", "eval", "--config", str(cfg), f"M0={m0}", f"M1={m1}", "--out", str(tmp_path / "eval")]
        main([*base, "--contexts", "5", "--esconv", valid, "--quiet"])
    out = capsys.readouterr().out
    assert "judge: user" in out and "reply card: 5 held-out ESConv contexts" in out and "| M1 | 5 | 5 | 0 |" in out
    assert out.index("reply card:") > out.index("judge: user")  # the card made first, printed after the run's table
    assert f"| {rc.RULE_MADE}generic_long | 5 | 5 | 0 |" in out  # the default bad reply, a padded platitude
    fig = json.loads((tmp_path / "eval" / rc.FIGURES).read_text())
    assert fig["models"]["M1"]["minus_first"]["n"] == 5
    for argv, message in [(["--contexts", "5"], "--contexts needs --esconv"),
                          (["--contexts", "5", "--esconv", valid, "--reply-judge", "heart_pairwise"],
                           "--reply-judge: judge card heart_pairwise"),
                          (["--contexts", "5", "--esconv", valid, "--bad", "flatter"],
                           "--bad flatter: no such bad-reply maker")]:  # fmt: skip
        with pytest.raises(SystemExit) as e:
            main([*base[:-1], str(tmp_path / "other"), *argv])
        err = capsys.readouterr().err
        assert e.value.code == 2 and message in err and "Traceback" not in err, err
    # a model emoharbor trained gets its row in its card and README
    folder = tmp_path / "card"
    folder.mkdir()
    (folder / "evolve_model.json").write_text(json.dumps({"base_model": str(m0), "stage": "dpo"}))
    record_reply_card([("M0", tmp_path / "none"), ("M1", folder)], fig)
    card = json.loads((folder / "evolve_model.json").read_text())["reply_card"]
    assert card["reference"] == "M0" and card["minus_first"]["n"] == 5 and card["contexts"] == 5
    row = f"{rc.RULE_MADE}generic_long"
    assert card["rule_made"][row] == pytest.approx(fig["models"][row]["mean"])
    readme = (folder / "README.md").read_text()
    assert "## Reply card (5 held-out ESConv contexts" in readme and "minus M0 on the same 5 contexts" in readme
