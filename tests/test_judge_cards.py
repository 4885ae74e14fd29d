"""Judge cards, probability-weighted scores, what a validate judge sees, and re-judging a finished run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from emoharbor.assess.cards import builtin_names, load_card
from emoharbor.assess.dimensions import load_rubric
from emoharbor.assess.judge import check_logprobs, judge_conversation
from emoharbor.errors import ConfigError
from emoharbor.models.base import TokenLogprob
from emoharbor.models.expected import expected_scores
from emoharbor.models.pool import ModelPool
from emoharbor.models.scripted import ScriptedModel
from emoharbor.models.spec import ModelSpec
from emoharbor.simulate.conversation import Conversation, Turn
from emoharbor.store.records import Comparison
from emoharbor.store.run_store import RunStore
from emoharbor.testing.fake_server import FakeOpenAIServer, digit_probs
from emoharbor.validate.run import ValidateOptions, rejudge, run_validation
from report_helpers import fake_spec, invented_record, write_jsonl


def tokens(*pieces: tuple[str, dict[str, float]]) -> tuple[TokenLogprob, ...]:
    """Tokens from (text, {alternative: probability}); the text's own probability is taken from the map."""
    return tuple(
        TokenLogprob(t, math.log(alts.get(t, 1.0)), tuple((a, math.log(p)) for a, p in alts.items()))
        for t, alts in pieces
    )


def test_expected_score_is_the_renormalised_mean_over_allowed_values() -> None:
    text = '{"overall": 4}'
    toks = tokens(('{"', {}), ("overall", {}), ('":', {}), (" ", {}), ("4", {"4": 0.5, "3": 0.2, "x": 0.2}), ("}", {}))
    ex = expected_scores(text, toks, ["overall"], [1, 2, 3, 4, 5])
    # "x" is not a score: 0.5 and 0.2 renormalised to 5/7 and 2/7
    assert ex.probs["overall"] == pytest.approx({3: 2 / 7, 4: 5 / 7})
    assert ex.expected["overall"] == pytest.approx(3 * 2 / 7 + 4 * 5 / 7)
    assert ex.error == ""


def test_expected_score_reads_nested_scores_and_says_when_it_cannot() -> None:
    text = '{"a": {"score": 2, "evidence": "hi"}, "b": {"score": 5, "evidence": "x"}}'
    pieces = [(c, {}) for c in text]  # one token a character
    pieces[text.index("2")] = ("2", {"2": 0.6, "1": 0.4})
    toks = tokens(*pieces)
    ex = expected_scores(text, toks, ["a", "b"], [1, 2, 3, 4, 5])
    assert ex.expected["a"] == pytest.approx(1.6) and ex.expected["b"] == pytest.approx(5.0)
    assert expected_scores(text, None, ["a"], [1, 2]).expected == {"a": None}
    assert "do not spell" in expected_scores(text + " ", toks, ["a"], [1, 2]).error
    glued = tokens(('{"a": 2}', {}))  # the digit shares its token: no distribution for it
    got = expected_scores('{"a": 2}', glued, ["a"], [1, 2, 3])
    assert got.expected == {"a": None} and "no single score token" in got.error


def conversation() -> Conversation:
    turns = [Turn(speaker="user", text="I lost my job."), Turn(speaker="supporter", text="That sounds really hard.")]
    return Conversation(id="c1", profile_id="p", supporter="s", turns=turns)


async def test_a_card_set_to_expected_stores_both_scores_from_the_fake_server() -> None:
    card = load_card("third_party").with_options(scoring="expected")
    assert card.name == "third_party+expected"
    with FakeOpenAIServer() as srv:
        async with ModelPool(cache_path=None) as pool:
            model = await pool.get(ModelSpec.model_validate(fake_spec(srv.base_url)), "judge")
            await check_logprobs(card, model)
            rec = await judge_conversation(card, model, "third_party:fake", conversation(), None)
        sent = srv.bodies[-1]
    assert sent["logprobs"] is True and sent["top_logprobs"] == 20
    assert rec["status"] == "ok" and rec["expected_error"] == ""
    for k, written in rec["scores"].items():
        probs = digit_probs(written)
        assert rec["expected"][k] == pytest.approx(sum(v * p for v, p in probs.items()))
        assert rec["probs"][k] == pytest.approx(probs)


async def test_a_backend_without_logprobs_is_a_configuration_error_before_the_run() -> None:
    card = load_card("third_party_overall")
    with pytest.raises(ConfigError, match="returned no token log-probabilities"):
        await check_logprobs(card, ScriptedModel(['{"score": 2}']))
    with FakeOpenAIServer(logprobs=False) as srv:
        async with ModelPool(cache_path=None) as pool:
            model = await pool.get(ModelSpec.model_validate(fake_spec(srv.base_url)), "judge")
            with pytest.raises(ConfigError, match="scoring: argmax"):
                await check_logprobs(card, model)
    await check_logprobs(load_card("third_party"), ScriptedModel(["x"]))  # argmax needs none
    from emoharbor.assess.stage import make_judges

    with pytest.raises(ConfigError, match="the scripted backend"):  # known without a call, before any folder
        make_judges(["third_party_overall"], ModelSpec(model="scripted"), ModelSpec(model="scripted"))


def test_builtin_cards_load_and_version_by_content(tmp_path: Path) -> None:
    assert {"user", "profile_aware", "third_party", "third_party_overall", "heart_pairwise"} <= set(builtin_names())
    card = load_card("builtin:third_party_overall")
    assert card.rubric_file().keys() == ["overall"] and card.scoring == "expected" and not card.evidence
    assert card.judge_id("gpt-x") == "third_party_overall:gpt-x"
    assert load_card("user").judge_id("m", user_model="m") == "user"
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rate: $transcript\n$rubric\n$answer\n")
    path = tmp_path / "mine.yaml"
    path.write_text(f"name: mine\nkind: third_party\nprompt: {prompt}\nevidence: false\n")
    first = load_card(str(path)).version
    prompt.write_text("Rate this: $transcript\n$rubric\n$answer\n")
    assert load_card(str(path)).version != first  # the prompt's text is part of the version


def test_a_card_that_leaves_out_its_prompt_and_rubric_gets_its_kinds(tmp_path: Path) -> None:
    builtin = load_card("third_party")
    path = tmp_path / "third_party.yaml"
    path.write_text(yaml.safe_dump(builtin.model_dump(mode="json", exclude={"prompt", "rubric", "model"})))
    short = load_card(str(path))
    assert (short.prompt, short.rubric) == ("builtin:third_party_judge", "builtin:support10")
    assert short.version == builtin.version  # the same card: the same version, so runs made with it resume
    pair = tmp_path / "pair.yaml"
    pair.write_text("name: pair\nkind: heart_pairwise\nrubric: no_such_rubric.yaml\n")
    assert load_card(str(pair)).prompt == "builtin:heart_judge_user"  # a pair kind reads no rubric


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nkind: oracle\nprompt: builtin:third_party_judge\n", "field 'kind'"),
        ("name: 'a b'\nkind: third_party\nprompt: builtin:third_party_judge\n", "field 'name'"),
        ("name: x\nkind: third_party\nprompt: builtin:nope\n", "no built-in prompt"),
        ("name: x\nkind: third_party\nprompt: builtin:third_party_judge\nrubric: none.yaml\n", "rubric file"),
        ("- a list\n", "a mapping of settings"),
    ],
)
def test_bad_cards_get_an_error_naming_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "card.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_card(str(path))
    with pytest.raises(ConfigError, match="no judge card"):
        load_card("no_such_card")


def test_rubric_files_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "r.yaml"
    bad.write_text("x:\n  group: odd\n  ask: a\n  levels: {1: a}\n")
    with pytest.raises(ConfigError, match="group must be one of"):
        load_rubric(str(bad))
    assert load_rubric("builtin:overall").schema(evidence=False)["properties"]["overall"]["enum"] == [1, 2, 3, 4, 5]


async def test_validate_without_a_user_judge_makes_no_chain_calls_and_judges_see_the_whole_talk(
    tmp_path: Path,
) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(e, supporter_turns=4) for e in (1, 3, 5)])
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(
            esconv=[path], user=spec, judge=spec, judges=["third_party_overall"], max_supporter_turns=2
        )
        await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        judged = [b for b in srv.bodies if b.get("top_logprobs") and "conversation" in json.dumps(b["messages"])]
        assert srv.requests == 1 + 3  # the log-probability check, then one judge call per conversation
        assert all(b["messages"][0]["content"].count("Supporter: ") == 4 for b in judged)  # all 4 turns
        store = RunStore.open_existing(tmp_path / "run")
        replay = store.get("replay", ("mine:0",))
        a = store.get("assessment", ("mine:0", "third_party_overall:fake"))
        store.close()
        assert replay is not None and replay["perceived"] is False and len(replay["dialog_turns"]) == 8
        assert a is not None and a["saw"] == "all" and a["supporter_turns_seen"] == 4
        assert a["expected"]["overall"] == pytest.approx(
            sum(v * p for v, p in digit_probs(a["scores"]["overall"]).items())
        )

        # re-judging: another card on the same folder reuses the replays; a user-judge makes them live
        before = srv.requests
        n = await rejudge(tmp_path / "run", ["third_party"], None, progress=False)
        assert (n, srv.requests - before) == (3, 3)
        n = await rejudge(tmp_path / "run", ["third_party"], None, progress=False)
        assert n == 0  # nothing left to do
        opts.judges, opts.judge_sees = ["third_party"], "replayed"
        await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        before = srv.requests
        n = await rejudge(tmp_path / "run", ["user"], None, progress=False)
        assert n == 3 and srv.requests - before == 3 * (2 * 2 + 1)  # appraise + feel per replayed turn, then judge
    store = RunStore.open_existing(tmp_path / "run")
    try:
        short = store.get("assessment", ("mine:1", "third_party@replayed:fake"))
        assert short is not None and short["saw"] == "replayed" and short["supporter_turns_seen"] == 2
        assert store.get("replay", ("mine:1",))["perceived"] is True  # type: ignore[index]
        recorded = json.loads(store.meta()["judges"])
        assert set(recorded) == {"third_party_overall:fake", "third_party:fake", "third_party@replayed:fake", "user"}
    finally:
        store.close()


async def test_a_changed_card_under_a_used_name_is_refused(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(3)])
    card = tmp_path / "j.yaml"
    card.write_text("name: j\nkind: third_party\nprompt: builtin:third_party_judge\nevidence: false\n")
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(esconv=[path], user=spec, judge=spec, judges=[str(card)])
        await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        card.write_text("name: j\nkind: third_party\nprompt: builtin:third_party_judge\nevidence: true\n")
        with pytest.raises(ConfigError, match="judge j:fake was used with card"):
            await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)


async def test_a_heart_judge_card_set_to_expected_weighs_strengths_by_probability(tmp_path: Path) -> None:
    from emoharbor.heart.analysis.verdicts import combine_orders
    from emoharbor.heart.config import HeartConfig
    from emoharbor.heart.stages import pipeline
    from heart_helpers import kind_reply, models, plan_of, scripted, write_histories

    card = tmp_path / "pairwise.yaml"
    card.write_text(
        "name: pairwise_expected\nkind: heart_pairwise\nprompt: builtin:heart_judge_user\nscoring: expected\n"
    )
    reg, _adv = write_histories(tmp_path)
    with FakeOpenAIServer() as srv:
        config = HeartConfig.model_validate(
            {
                "histories": [{"path": str(reg)}],
                "candidates": [{"model": "scripted", "name": "kind"}],
                "judges": [{**fake_spec(srv.base_url), "name": "j", "card": str(card)}],
                "bootstrap": 10,
            }
        )
        assert config.resolved()["judge_cards"]["j"].startswith("pairwise_expected@")
        async with ModelPool(cache_path=None) as pool:
            judge = await pool.get(config.judges[0], "judge")
            store = pipeline.open_run(tmp_path / "run", plan_of(config, tmp_path))
            await pipeline.generate(
                store, plan_of(config, tmp_path), models({"kind": scripted(kind_reply), "j": judge})
            )
            await pipeline.judge(store, plan_of(config, tmp_path), models({"j": judge}), progress=False)
        comparisons = [d for _, d in store.items("comparison")]
        store.close()
    scored = [c for c in comparisons if c["status"] == "ok"]
    assert scored and all(c["card"] == config.resolved()["judge_cards"]["j"] for c in scored)
    for c in scored:
        for v in c["verdicts"].values():
            assert v["strength_expected"] == pytest.approx(sum(k * p for k, p in digit_probs(v["strength"]).items()))
    verdicts, _, _counts = combine_orders([Comparison.of(c) for c in comparisons])
    one = next(v for v in verdicts if v.outcome != "tie")
    orders = [c for c in scored if (c["history_id"], c["a"], c["b"]) == (one.history_id, one.a, one.b)]
    wins = [c["verdicts"][one.dimension] for c in orders]
    winner = one.a if one.outcome == "a" else one.b
    # weighed by the probability-weighted strengths, not the integers written
    assert one.weight_a + one.weight_b == pytest.approx(
        sum(w["strength_expected"] for w in wins if w["winner"] == winner)
    )
    with pytest.raises(Exception, match="not heart_pairwise"):
        HeartConfig.model_validate(
            {
                "histories": [{"path": str(reg)}],
                "candidates": ["scripted"],
                "judges": [{"model": "scripted", "card": "third_party"}],
            }
        )


async def test_the_judges_table_over_a_validate_and_an_emoharbor_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from click.testing import CliRunner

    from emoharbor.cli import cli
    from emoharbor.report.judges_table import judges_table
    from report_helpers import small_run

    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(e) for e in (1, 2, 4, 5, 3, 2)])
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(esconv=[path], user=spec, judge=spec, judges=["third_party"])
        await run_validation(opts, tmp_path / "val", progress=False, cache_path=None)
        await small_run(tmp_path / "eh", srv)
        before = srv.requests
        args = ["assess", str(tmp_path / "val"), "--judge", "third_party_overall", "--quiet"]
        monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
        r = await asyncio.to_thread(
            CliRunner().invoke, cli, [*args, "--judge-model", "fake", "--base-url", srv.base_url]
        )
        assert r.exit_code == 0, r.output
        assert "made 6 assessments with third_party_overall" in r.output and srv.requests - before == 1 + 6
    rows = {(r["judge"], r["scoring"]): r for r in judges_table([tmp_path / "val", tmp_path / "eh"])}
    overall = rows[("third_party_overall:fake", "expected")]
    assert overall["judgments"] == 6 and overall["auroc"]["n"] == 6 and overall["auroc_margin"]["n"] == 6
    assert ("third_party_overall:fake", "argmax") in rows and ("third_party:fake", "expected") not in rows
    assert overall["tokens_per_judgment"] > 0 and overall["unscored_rate"] == 0
    assert rows[("user", "argmax")]["judgments"] == 4 and rows[("user", "argmax")].get("auroc") is None
    r = CliRunner().invoke(cli, ["judges", str(tmp_path / "val"), str(tmp_path / "eh"), "--format", "md"])
    assert r.exit_code == 0, r.output
    assert "| judge | scoring | sees | AUROC success vs failed |" in r.output and "best baseline" in r.output


async def test_a_run_config_names_its_judge_cards(tmp_path: Path) -> None:
    from emoharbor.assess.leaderboard import RunResults, leaderboard
    from emoharbor.config import RunConfig
    from emoharbor.evaluate import Plan, run_evaluation

    # reading a config opens no card (a stored config is read back without the user's files); its plan does
    missing = RunConfig.model_validate({"judges": ["user", "nope"]})
    with pytest.raises(ConfigError, match=r"^c\.yaml: field 'judges': .*no judge card 'nope'"):
        Plan.of(missing, "c.yaml")
    pairwise = RunConfig.model_validate({"judges": ["heart_pairwise"]})
    with pytest.raises(ConfigError, match=r"c\.yaml: field 'judges': .*a HEART pairwise judge: give it to"):
        Plan.of(pairwise, "c.yaml")
    with FakeOpenAIServer() as srv:
        fake = fake_spec(srv.base_url)
        cfg = RunConfig.model_validate(
            {
                "roles": {"supporter": [fake], "user": fake, "judge": fake},
                "profiles": ["builtin:p001*"],
                "max_turns": 2,
                "judges": ["third_party_overall"],
            }
        )
        await run_evaluation(cfg, tmp_path / "r", progress=False, cache_path=None)
    store = RunStore.open_existing(tmp_path / "r")
    try:
        assert {d["judge"] for _, d in store.items("assessment")} == {"third_party_overall:fake"}
        assert "third_party_overall:fake" in store.config()["judge_cards"]
        results = RunResults.read(store)
        board = leaderboard(results, "third_party_overall:fake", scoring="expected")
        written = leaderboard(results, "third_party_overall:fake")
    finally:
        store.close()
    (row,) = board["rows"]
    assert row["scored"] == 1 and row["overall"]["mean"] != written["rows"][0]["overall"]["mean"]


async def test_the_judges_table_reads_heart_runs(tmp_path: Path) -> None:
    from emoharbor.report.judges_table import judges_table
    from heart_helpers import first_shown_judge, preferring, run_all, scripted

    store, _config = await run_all(
        tmp_path, {"fair": scripted(preferring("here for you")), "lazy": scripted(first_shown_judge)}
    )
    store.close()
    rows = {r["judge"]: r for r in judges_table([tmp_path / "run"])}
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert rows["fair"]["order_consistency"] == pytest.approx(1.0) and rows["lazy"][
        "order_consistency"
    ] == pytest.approx(0.0)
    assert rows["fair"]["card"].startswith("heart_pairwise@") and rows["fair"]["judgments"] > 0
    assert rows["fair"]["longer_wins"] is not None and rows["lazy"]["longer_wins"] is None  # all ties: none decided


async def test_replays_made_with_other_chain_prompts_are_refused_to_a_user_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emoharbor.validate import run as validate_run

    path = write_jsonl(tmp_path / "mine.jsonl", [invented_record(3)])
    with FakeOpenAIServer() as srv:
        spec = ModelSpec.model_validate(fake_spec(srv.base_url))
        opts = ValidateOptions(esconv=[path], user=spec, judge=spec, judges=["user"], max_supporter_turns=1)
        await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        now = validate_run.chain_versions(opts.user_agent)
        monkeypatch.setattr(validate_run, "chain_versions", lambda s: {**now, "user_feel": "user_feel@changed"})
        with pytest.raises(ConfigError, match="other versions of user_feel"):
            await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)
        opts.judges = ["third_party"]  # a judge that does not read the inner record is still welcome
        await run_validation(opts, tmp_path / "run", progress=False, cache_path=None)


def test_the_call_cache_keeps_log_probabilities(tmp_path: Path) -> None:
    from emoharbor.models.base import ChatResult, Usage
    from emoharbor.models.cache import CallCache

    cache = CallCache(tmp_path / "c.sqlite")
    toks = tokens(("4", {"4": 0.6, "3": 0.4}))
    cache.put("k", ChatResult(text="4", usage=Usage(3, 1, 0.0), logprobs=toks))
    cache.put("plain", ChatResult(text="x"))
    hit, plain = cache.get("k"), cache.get("plain")
    cache.close()
    assert hit is not None and hit.cached and hit.logprobs is not None
    assert hit.logprobs[0].token == "4" and dict(hit.logprobs[0].top) == pytest.approx(dict(toks[0].top))
    assert plain is not None and plain.logprobs is None  # not asked for: none, not an empty list
