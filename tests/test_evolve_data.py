"""Training examples and their loss masks; the general-data mix; the evolve config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emoharbor.data.esconv import EsconvDialog, EsconvTurn
from emoharbor.errors import ConfigError, DataError
from emoharbor.evolve.config import load_evolve_config
from emoharbor.evolve.data import (
    IGNORE,
    ChatExample,
    dialog_examples,
    encode,
    esconv_contexts,
    esconv_examples,
    general_examples,
    mix_examples,
)
from evolve_helpers import esconv_file, tiny_tokenizer

pytest.importorskip("transformers")


def dialog() -> EsconvDialog:
    t = [
        EsconvTurn("supporter", "Hello, how are you today?"),
        EsconvTurn("seeker", "Not great, I failed my exam."),
        EsconvTurn("supporter", "I am sorry, that must sting."),
        EsconvTurn("seeker", "It does."),
        EsconvTurn("seeker", "My parents will be upset."),  # merged with the turn before
        EsconvTurn("supporter", "Are you worried how they will react?"),
    ]
    return EsconvDialog("train:5", "train.jsonl", 5, "sadness", "academic pressure", "", "", {}, t)


def test_one_example_per_supporter_turn_after_a_seeker_turn() -> None:
    ex = dialog_examples(dialog(), "SYS")
    assert [e.id for e in ex] == ["train:5#2", "train:5#4"]  # the opening greeting has no seeker turn before it
    last = ex[1]
    assert last.reply == "Are you worried how they will react?"
    assert [m["role"] for m in last.messages] == ["system", "user", "assistant", "user"]
    assert last.messages[-1]["content"] == "It does. My parents will be upset."
    short = dialog_examples(dialog(), "SYS", max_turns=2)[1]
    assert [m["role"] for m in short.messages] == ["system", "user"]  # cut, then made to start with the seeker


def test_reply_only_loss_mask() -> None:
    tok = tiny_tokenizer()
    ex = dialog_examples(dialog(), "Be kind.")[1]
    enc = encode(tok, ex.messages, ex.reply, 512)
    assert enc is not None and len(enc.input_ids) == len(enc.labels)
    n_prompt = enc.labels.count(IGNORE)
    assert all(x == IGNORE for x in enc.labels[:n_prompt]) and IGNORE not in enc.labels[n_prompt:]
    assert tok.decode(enc.labels[n_prompt:]) == ex.reply + "<|im_end|>"
    assert tok.decode(enc.input_ids[:n_prompt]).endswith("<|im_start|>assistant\n")
    assert enc.dropped_turns == 0


def test_long_histories_lose_their_oldest_turns_first() -> None:
    tok = tiny_tokenizer()
    ex = dialog_examples(dialog(), "Be kind.")[1]
    full = encode(tok, ex.messages, ex.reply, 512)
    assert full is not None
    fit = encode(tok, ex.messages, ex.reply, len(full.input_ids) - 1)
    assert fit is not None and fit.dropped_turns == 2 and len(fit.input_ids) < len(full.input_ids)
    assert "Not great" not in tok.decode(fit.input_ids) and "My parents" in tok.decode(fit.input_ids)
    assert encode(tok, ex.messages, ex.reply, 32) is None


def test_esconv_examples_and_contexts_from_the_shared_data() -> None:
    path = str(esconv_file("valid.jsonl"))
    examples, held = esconv_examples([path], "SYS")
    assert held == 0 and len(examples) > 1000
    assert all(e.messages[0]["role"] == "system" and e.messages[-1]["role"] == "user" for e in examples)
    ctx = esconv_contexts([path], "SYS", 5, seed=3, max_turns=4)
    assert len(ctx) == 5 and len({c.id.split("#")[0] for c in ctx}) == 5  # five different dialogues
    assert all(len(c.messages) <= 5 for c in ctx)
    assert [c.id for c in esconv_contexts([path], "SYS", 5, seed=3, max_turns=4)] == [c.id for c in ctx]


def test_general_data_and_mixing(tmp_path: Path) -> None:
    f = tmp_path / "gen.jsonl"
    rows = [{"instruction": "Add 2 and 2.", "output": "4"},
            {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}]  # fmt: skip
    f.write_text("\n".join(json.dumps(r) for r in rows * 5) + "\n")
    gen = general_examples(str(f))
    assert (
        len(gen) == 10 and gen[0].messages == [{"role": "user", "content": "Add 2 and 2."}] and gen[1].reply == "Hello!"
    )
    es = [ChatExample(f"e{i}", [{"role": "user", "content": "x"}], "y") for i in range(30)]
    mixed = mix_examples(es, gen, share=0.2, max_examples=20, seed=0)
    assert len(mixed) == 25 and sum(e.source == "general" for e in mixed) == 5  # 5 / 25 = 0.2
    (tmp_path / "bad.jsonl").write_text('{"prompt": "x"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl: line 1: needs 'messages'"):
        general_examples(str(tmp_path / "bad.jsonl"))


def test_config_overrides_paths_and_errors(tmp_path: Path) -> None:
    (tmp_path / "evolve.yaml").write_text("sft:\n  data: [data/train.jsonl]\n  train_args: {max_steps: 5}\nrounds: 1\n")
    cfg = load_evolve_config(tmp_path / "evolve.yaml", {"dpo.train_args.beta": 0.3, "sft.train_args.max_steps": 7})
    assert cfg.sft.data == [str(tmp_path / "data" / "train.jsonl")] and cfg.sft.train_args == {"max_steps": 7}
    assert cfg.dpo.train_args == {"beta": 0.3}
    (tmp_path / "bad.yaml").write_text("dpo:\n  max_length: 8\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: field 'dpo\.max_length'"):
        load_evolve_config(tmp_path / "bad.yaml")
    with pytest.raises(ConfigError, match=r"general_share > 0 needs sft\.general_data"):
        load_evolve_config(None, {"sft.general_share": 0.1})


def test_pair_records_are_what_trl_reads() -> None:
    """The pair JSONL is TRL's conversational preference form: TRL's own chat-template step turns it
    into the same prompt and reply text that emoharbor trains on."""
    trl_data = pytest.importorskip("trl.data_utils")
    from emoharbor.evolve.data import prompt_text, reply_text
    from emoharbor.evolve.pairs import PreferencePair

    tok = tiny_tokenizer()
    msgs = dialog_examples(dialog(), "Be kind.")[1].messages
    rec = PreferencePair(msgs, "That must feel heavy.", "Cheer up.", "x", "test").to_json()
    assert trl_data.is_conversational(rec)
    got = trl_data.apply_chat_template({k: rec[k] for k in ("prompt", "chosen", "rejected")}, tok)
    assert got["prompt"] == prompt_text(tok, msgs)
    assert got["chosen"].rstrip() == reply_text(tok, msgs, "That must feel heavy.")
    assert got["rejected"].rstrip() == reply_text(tok, msgs, "Cheer up.")


def test_the_seekers_situation_is_shown_to_a_seeded_share_of_the_examples() -> None:
    from emoharbor.evolve.personal import Personal, shown_record
    from emoharbor.prompts import load_prompt

    d = dialog()
    d.situation = "I failed  the exam\nagain."
    shown = dialog_examples(d, "Be kind.", personal=Personal(1.0, 0))
    system = shown[0].messages[0]["content"]
    assert system.startswith("Be kind.\n") and all(e.personal for e in shown)
    said = "What they feel: sadness. What it is about: academic pressure. In their words: I failed the exam again."
    assert said in system
    assert [m for m in shown[0].messages[1:]] == dialog_examples(d, "Be kind.")[0].messages[1:]  # the talk unchanged
    assert not any(e.personal for e in dialog_examples(d, "Be kind.", personal=Personal(0.0, 0)))
    told_nothing = EsconvDialog("train:6", "train.jsonl", 6, "", " ", "", "", {}, d.turns)
    assert not any(e.personal for e in dialog_examples(told_nothing, "Be kind.", personal=Personal(1.0, 0)))
    # half of the shared data's examples, drawn by id: the same ones whatever the order, others with another seed
    path = [str(esconv_file())]
    half, _ = esconv_examples(path, "S", personal=Personal(0.5, 3))
    again, _ = esconv_examples(path, "S", personal=Personal(0.5, 3))
    other, _ = esconv_examples(path, "S", personal=Personal(0.5, 4))
    ids = {e.id for e in half if e.personal}
    assert len(half) > 1000 and abs(len(ids) / len(half) - 0.5) < 0.03
    assert ids == {e.id for e in again if e.personal} and ids != {e.id for e in other if e.personal}
    assert all(("What they feel:" in e.messages[0]["content"]) == e.personal for e in half)
    record = shown_record(0.5, [e.personal for e in half])
    assert record == {"share": 0.5, "prompt": load_prompt("evolve_personal").version, "with_situation": len(ids),
                      "talk_only": len(half) - len(ids)}  # fmt: skip
    contexts = esconv_contexts(path, "S", 40, 1, 8, personal=Personal(0.5, 3))
    assert 0 < sum(c.personal for c in contexts) < 40  # refine's contexts take the same draw


def test_personal_share_is_a_share(tmp_path: Path) -> None:
    cfg = load_evolve_config(None, {"sft.personal_share": 0.5, "refine.personal_share": 1})
    assert (cfg.sft.personal_share, cfg.refine.personal_share) == (0.5, 1.0)
    with pytest.raises(ConfigError, match="personal_share"):
        load_evolve_config(None, {"sft.personal_share": 1.5})
