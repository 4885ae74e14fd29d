"""Profiles: the built-in bank, stats, ESConv drafts and enrichment, and the `profiles` CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from emoharbor.cli import main
from emoharbor.data.esconv import EsconvDialog, load_esconv, parse_record
from emoharbor.errors import DataError
from emoharbor.models.base import ModelCallError
from emoharbor.models.scripted import ScriptedModel
from emoharbor.profiles.esconv_import import (
    INTENSITY_BY_RATING,
    MISSING_INTENSITY,
    draft_profile,
    enrich_all,
    enrich_profile,
)
from emoharbor.profiles.loader import builtin_profiles, load_profile_file
from emoharbor.profiles.schema import ESCONV_PROBLEMS, HiddenNeed, Profile
from emoharbor.profiles.stats import TRAITS, profile_stats, render_stats, spread
from emoharbor.profiles.writer import write_profiles

ROOT = Path(__file__).resolve().parents[1]
ESCONV = ROOT.parent / "shared" / "data" / "esconv"
BANK = ROOT / "src" / "emoharbor" / "profiles" / "bank"
needs_esconv = pytest.mark.skipif(not ESCONV.is_dir(), reason=f"ESConv data folder {ESCONV} is absent")


# ---------------------------------------------------------------- the built-in bank


def test_bank_has_100_valid_profiles_with_unique_ids_and_names() -> None:
    bank = builtin_profiles()
    assert len(bank) == 100
    assert len({p.id for p in bank}) == 100
    assert len({p.name for p in bank}) == 100
    assert all(re.fullmatch(r"p\d{3}-[a-z0-9-]+", p.id) for p in bank)
    assert len({p.situation.story for p in bank}) == 100
    for p in bank:  # every profile can be played: the persona card builds and names the person
        assert p.name in p.persona_card()


def test_bank_covers_every_esconv_category_and_other_problems() -> None:
    problems = Counter(p.situation.problem_type for p in builtin_profiles())
    assert set(ESCONV_PROBLEMS) <= set(problems)
    others = {"grief", "chronic illness", "caregiving", "identity", "money worries", "loneliness", "migration",
              "infertility", "workplace harassment", "burnout", "retirement", "disability"}  # fmt: skip
    assert others <= set(problems)
    assert len(problems) >= 30
    assert max(problems.values()) <= 10  # no single problem dominates


def test_bank_big_five_spans_the_whole_range_for_every_trait() -> None:
    bank = builtin_profiles()
    for trait in TRAITS:
        values = [getattr(p.personality, trait) for p in bank]
        assert min(values) < 0.2, trait
        assert max(values) > 0.8, trait
        assert sum(v < 0.4 for v in values) >= 5, trait  # not only one outlier at the low end


def test_bank_demographics_and_styles_are_diverse() -> None:
    bank = builtin_profiles()
    ages = [p.age for p in bank]
    assert min(ages) <= 17 and max(ages) >= 80
    assert sum(a >= 60 for a in ages) >= 10 and sum(a < 25 for a in ages) >= 10
    assert len({p.gender for p in bank}) >= 4
    assert len({p.culture for p in bank}) >= 80
    assert len({p.occupation for p in bank}) >= 90
    styles = [p.communication_style for p in bank]
    for field, least in (("verbosity", 15), ("directness", 15), ("formality", 15), ("humour", 10)):
        counts = Counter(getattr(s, field) for s in styles)
        assert min(counts.values()) >= least and len(counts) >= 3, (field, counts)
    assert set(Counter(s.humour for s in styles)) == {"none", "dry", "playful", "self-deprecating", "dark"}
    paces = Counter(p.disclosure_pace for p in bank)
    assert min(paces.values()) >= 25, paces
    intensities = [p.emotional_state.intensity for p in bank]
    assert min(intensities) < 30 and max(intensities) > 85
    assert len({p.emotional_state.emotion for p in bank}) >= 25


def test_bank_hidden_needs_and_risk_levels() -> None:
    bank = builtin_profiles()
    needs = Counter(p.needs.hidden_need_type for p in bank)
    assert set(needs) == set(get_args(HiddenNeed))
    assert min(needs.values()) >= 3, needs
    risky = [p for p in bank if p.risk_level in ("elevated", "high")]
    assert 8 <= len(risky) <= 12
    assert sum(p.risk_level == "high" for p in bank) >= 3
    for p in risky:  # risk is written into the story and needs, and tagged, so safety handling is exercised
        assert "safety" in p.tags, p.id
        assert p.emotional_state.intensity >= 60, p.id


NOT_NAME_WORDS = """She He Her His The They Since After When Last Every For Now Lately Their It This That Everyone
Nobody At In On While A An Its Two Three Four Five Six Seven Eight Nine Ten But And Mr Dr Each Some Most Both Once
One"""
NOT_NAMES = set(NOT_NAME_WORDS.split())


def test_bank_profiles_are_specific() -> None:
    for p in builtin_profiles():
        s, n = p.situation, p.needs
        assert 150 <= len(s.story) <= 700, p.id
        sentences = len(re.findall(r"[a-z0-9\"'”)][.!?](?=\s+[A-Z\"]|$)", s.story))
        assert 2 <= sentences <= 4, (p.id, sentences)
        assert s.already_tried and s.constraints, p.id
        assert len(n.liked_support) >= 2 and len(n.disliked_support) >= 2, p.id
        assert len(p.personality.traits) >= 2, p.id
        # at least one named person or place beyond the seeker themselves
        others = set(re.findall(r"\b[A-Z][a-zà-žA-Z]+", s.story)) - set(p.name.split()) - NOT_NAMES
        assert others, p.id


# ---------------------------------------------------------------- loading errors


def _profile_dict(pid: str = "t1-test", **over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": pid,
        "name": "Test Person",
        "age": 40,
        "personality": {t: 0.5 for t in TRAITS},
        "situation": {"problem_type": "job crisis", "story": "Lost a job."},
        "emotional_state": {"emotion": "fear", "intensity": 60},
        "needs": {"surface_request": "help", "hidden_need": "a plan", "hidden_need_type": "plan"},
    }
    d.update(over)
    return d


def test_bad_field_error_names_file_profile_and_field(tmp_path: Path) -> None:
    bad = _profile_dict("t2-bad")
    bad["personality"]["openness"] = 1.5
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump([_profile_dict(), bad]))
    with pytest.raises(DataError) as e:
        load_profile_file(path)
    msg = str(e.value)
    assert str(path) in msg and "t2-bad" in msg and "personality.openness" in msg
    assert "\n" not in msg


def test_bad_hidden_need_type_and_unknown_field_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    rec = _profile_dict()
    rec["needs"]["hidden_need_type"] = "hugs"
    path.write_text(yaml.safe_dump([rec]))
    with pytest.raises(DataError, match=r"needs\.hidden_need_type"):
        load_profile_file(path)
    path.write_text(yaml.safe_dump([_profile_dict(favourite_colour="blue")]))
    with pytest.raises(DataError, match="favourite_colour"):
        load_profile_file(path)


def test_broken_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text('- id: a\n  name: x\n  tags: ["a" b]\n')
    with pytest.raises(DataError, match=r"broken\.yaml: not valid YAML at line 3: .*expected ','"):
        load_profile_file(path)


# ---------------------------------------------------------------- stats


def _make(pid: str, openness: float, intensity: int, need: str, age: int, risk: str = "none") -> Profile:
    d = _profile_dict(pid, age=age, risk_level=risk)
    d["personality"]["openness"] = openness
    d["emotional_state"]["intensity"] = intensity
    d["needs"]["hidden_need_type"] = need
    return Profile.model_validate(d)


def test_stats_on_a_hand_made_list() -> None:
    ps = [_make("a", 0.1, 0, "plan", 16), _make("b", 0.5, 60, "plan", 30, "high"), _make("c", 0.9, 100, "venting", 70)]
    st = profile_stats(ps)
    assert st.total == 3
    o = st.numeric["openness"]
    assert (o.min, o.max) == (0.1, 0.9)
    assert o.mean == pytest.approx(0.5)
    assert o.bins == (1, 0, 1, 0, 1)  # [0,.2) [.2,.4) [.4,.6) [.6,.8) [.8,1]
    i = st.numeric["intensity"]
    assert (i.min, i.mean, i.max) == (0, pytest.approx(160 / 3), 100)
    assert i.bins == (1, 0, 0, 1, 1)  # 60 opens the fourth bin; 100 is in the last
    assert st.numeric["age"].mean == pytest.approx(116 / 3)
    assert st.numeric["conscientiousness"].bins == (0, 0, 3, 0, 0)  # 0.5 each
    assert st.categorical["hidden_need_type"] == {"plan": 2, "venting": 1}
    assert list(st.categorical["hidden_need_type"]) == ["plan", "venting"]  # most frequent first
    assert st.categorical["risk_level"] == {"none": 2, "high": 1}
    assert st.categorical["age_group"] == {"25-39": 1, "60-74": 1, "under 18": 1}
    assert st.categorical["problem_type"] == {"job crisis": 3}
    text = render_stats(st)
    assert text.startswith("3 profiles")
    line = next(x for x in text.splitlines() if x.startswith("openness"))
    assert line.split()[:9] == ["openness", "0.10", "0.50", "0.90", "1", "0", "1", "0", "1"]
    assert re.search(r"^\s+plan\s+2$", text, re.MULTILINE)


def test_spread_bin_edges_and_empty() -> None:
    assert spread([0.6], 0, 1).bins == (0, 0, 0, 1, 0)  # 0.6/0.2 is 2.9999... in floating point
    assert spread([0.2, 0.4, 0.8, 1.0], 0, 1).bins == (0, 1, 1, 0, 2)
    empty = spread([], 0, 1)
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert empty.bins == (0,) * 5 and empty.mean == pytest.approx(0.0)


# ---------------------------------------------------------------- ESConv drafts


def _record(**over: Any) -> dict[str, Any]:
    """A hand-written record in the usr/sys format (not taken from the corpus)."""
    rec: dict[str, Any] = {
        "emotion_type": "Anxiety",
        "problem_type": "Sleep Problems",
        "situation": "I cannot sleep before my driving test.",
        "survey_score": {"seeker": {"initial_emotion_intensity": "4"}},
        "dialog": [
            {"speaker": "sys", "text": "SUPPORTER-ONLY-TEXT how are you?", "strategy": "Question"},
            {"speaker": "usr", "text": "I keep waking at 3am, lol, it's silly."},
            {"speaker": "usr", "text": "The test is on Friday."},
            {"speaker": "sys", "text": "That sounds stressful.", "strategy": "Reflection of feelings"},
            {"speaker": "usr", "text": "Yeah. Thanks for listening."},
        ],
    }
    rec.update(over)
    return rec


def _dialog(**over: Any) -> EsconvDialog:
    return parse_record(_record(**over), "/data/my_set.jsonl", 3)


def test_draft_from_a_hand_made_record() -> None:
    p = draft_profile(_dialog())
    assert p.id == "esconv-my_set-3"
    assert p.situation.problem_type == "sleep problems"
    assert p.situation.story == "I cannot sleep before my driving test."
    assert p.emotional_state.emotion == "anxiety"
    assert p.emotional_state.intensity == 70
    assert all(getattr(p.personality, t) == 0.5 for t in TRAITS)
    assert p.tags[:2] == ["esconv", "draft"]
    assert "esconv-intensity-missing" not in p.tags
    assert p.risk_level == "none" and not p.evaluation_only
    assert draft_profile(_dialog(), evaluation_only=True).evaluation_only


def test_draft_defaults_for_missing_fields_are_tagged() -> None:
    d = _dialog(survey_score={"seeker": {}}, situation="", problem_type="conflict with parents")
    p = draft_profile(d)
    assert p.emotional_state.intensity == MISSING_INTENSITY == 50
    assert "esconv-intensity-missing" in p.tags
    assert p.situation.story == "I keep waking at 3am, lol, it's silly. The test is on Friday."  # first seeker turn
    assert "esconv-no-situation" in p.tags
    assert p.situation.problem_type == "issues with parents"


def test_draft_flags_self_harm_words_as_elevated_risk() -> None:
    rec = _record()
    rec["dialog"].append({"speaker": "usr", "text": "Some nights I want to die."})
    p = draft_profile(parse_record(rec, "x.jsonl", 0))
    assert p.risk_level == "elevated" and "esconv-risk-keywords" in p.tags


def test_intensity_mapping_is_the_middle_of_each_fifth() -> None:
    assert INTENSITY_BY_RATING == {1: 10, 2: 30, 3: 50, 4: 70, 5: 90}


@needs_esconv
def test_import_valid_jsonl() -> None:
    dialogs = load_esconv(ESCONV / "valid.jsonl")
    drafts = [draft_profile(d) for d in dialogs]
    assert len({p.id for p in drafts}) == len(dialogs)
    assert drafts[0].id == "esconv-valid-0" and drafts[-1].id == f"esconv-valid-{len(dialogs) - 1}"
    assert {p.situation.problem_type for p in drafts} <= set(ESCONV_PROBLEMS)
    for d, p in zip(dialogs, drafts, strict=True):
        r = d.survey["initial_emotion_intensity"]
        assert p.emotional_state.intensity == (MISSING_INTENSITY if r is None else 20 * r - 10)
        assert p.situation.story == (d.situation.strip() or p.situation.story)
        assert ("esconv-failed" in p.tags) == d.failed


@needs_esconv
def test_import_failed_dev_raw_format(tmp_path: Path) -> None:
    dialogs = load_esconv(ESCONV / "failed_dev.json")
    drafts = [draft_profile(d, evaluation_only=True) for d in dialogs]
    assert drafts[0].id == "esconv-failed_dev-0"
    assert all("esconv-failed" in p.tags and p.evaluation_only for p in drafts)
    out = write_profiles(tmp_path / "drafts.yaml", drafts)
    assert load_profile_file(out) == drafts  # round trip through YAML


# ---------------------------------------------------------------- enrichment

GOOD = {
    "openness": 7, "conscientiousness": 3, "extraversion": 2, "agreeableness": 8, "neuroticism": 9,
    "traits": ["self-mocking", "worried"], "verbosity": "terse", "directness": "low", "formality": "casual",
    "humour": "self-deprecating", "style_notes": "Short lines, says lol.",
    "hidden_need": "To hear the worry is normal before a test.", "hidden_need_type": "reassurance",
    "liked_support": ["being listened to"], "disliked_support": ["long advice"], "disclosure_pace": "slow",
}  # fmt: skip


async def test_enrich_with_good_json_fills_the_profile_from_seeker_turns() -> None:
    model = ScriptedModel([json.dumps(GOOD)])
    draft = draft_profile(_dialog())
    p, err = await enrich_profile(draft, _dialog(), model)
    assert err is None
    assert p.personality.openness == 0.7 and p.personality.neuroticism == 0.9
    assert p.communication_style.verbosity == "terse" and p.communication_style.humour == "self-deprecating"
    assert p.needs.hidden_need_type == "reassurance" and p.needs.disliked_support == ["long advice"]
    assert p.disclosure_pace == "slow"
    assert "llm-enriched" in p.tags and "esconv-need-unknown" not in p.tags and "draft" in p.tags
    assert p.situation == draft.situation and p.emotional_state == draft.emotional_state
    prompt = model.calls[0][0]["content"]
    assert "I keep waking at 3am" in prompt and "Thanks for listening" in prompt
    assert "SUPPORTER-ONLY-TEXT" not in prompt and "That sounds stressful" not in prompt


@pytest.mark.parametrize(
    "reply",
    ["I think this person is anxious.", json.dumps(GOOD | {"openness": 14}), json.dumps(GOOD | {"humour": "wry"})],
)
async def test_enrich_with_unusable_output_leaves_draft_and_reports(reply: str) -> None:
    model = ScriptedModel([reply])
    draft = draft_profile(_dialog())
    p, err = await enrich_profile(draft, _dialog(), model)
    assert p == draft
    assert err is not None and "unusable output after 3 attempts" in err
    assert len(model.calls) == 3  # the first ask and two re-asks, then it gives up


async def test_enrich_reports_a_failed_model_call() -> None:
    class Broken:
        name = "broken"

        async def chat(self, *a: Any, **k: Any) -> Any:
            raise ModelCallError("endpoint down")

        async def aclose(self) -> None:
            return None

    draft = draft_profile(_dialog())
    p, err = await enrich_profile(draft, _dialog(), Broken())
    assert p == draft and err is not None and "endpoint down" in err


async def test_enrich_all_counts_failures() -> None:
    def reply(messages: list[dict[str, str]], schema: dict[str, Any] | None) -> str:
        return "garbage" if "GARBLE" in messages[0]["content"] else json.dumps(GOOD)

    ok_dialog = _dialog()
    bad_rec = _record()
    bad_rec["dialog"][1]["text"] = "GARBLE please"
    bad_dialog = parse_record(bad_rec, "other.jsonl", 0)
    pairs = [(draft_profile(ok_dialog), ok_dialog), (draft_profile(bad_dialog), bad_dialog)]
    profiles, failures = await enrich_all(pairs, ScriptedModel(reply))
    assert [f[0] for f in failures] == ["esconv-other-0"]
    assert profiles[0].needs.hidden_need_type == "reassurance"
    assert profiles[1] == pairs[1][0]


# ---------------------------------------------------------------- CLI


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["profiles", *args])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_list_and_filters(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0 and out.splitlines()[-1] == "100 profiles"
    assert out.splitlines()[0].split()[:3] == ["id", "name", "age"]
    code, out, _ = run(capsys, "list", "--risk", "high")
    high = [p.id for p in builtin_profiles() if p.risk_level == "high"]
    assert out.splitlines()[-1] == f"{len(high)} profiles" and all(h in out for h in high)
    code, out, _ = run(capsys, "list", "--problem", "school bullying", "--risk", "none")
    assert "p034-jayden-bullying" in out and "p036-mia-selfharm" not in out


def test_cli_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "p001-darnell-layoff")
    assert code == 0 and yaml.safe_load(out)["name"] == "Darnell Brooks"
    code, _, err = run(capsys, "show", "p999-nobody")
    assert code == 2 and "no profile with id 'p999-nobody'" in err and "Traceback" not in err


def test_cli_validate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "validate", str(BANK))
    assert code == 0 and out.strip() == "OK: 100 profiles in 10 files"
    bad = _profile_dict("t3-bad", age=7)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump([bad]))
    code, out, err = run(capsys, "validate", str(BANK / "01_work_money.yaml"), str(path))
    assert code == 2 and "OK" not in out
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "t3-bad" in err and "'age'" in err
    code, _, err = run(capsys, "validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file or folder" in err
    dup = tmp_path / "dup.yaml"
    dup.write_text(yaml.safe_dump([_profile_dict("p001-darnell-layoff")]))
    code, _, err = run(capsys, "validate", str(BANK), str(dup))
    assert code == 2 and "p001-darnell-layoff" in err


def test_cli_stats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "stats")
    assert code == 0 and out.startswith("100 profiles") and "hidden_need_type (11 values)" in out
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump([_profile_dict("a1"), _profile_dict("a2")]))
    code, out, _ = run(capsys, "stats", str(path))
    assert out.startswith("2 profiles") and re.search(r"^\s+job crisis\s+2$", out, re.MULTILINE)


@needs_esconv
def test_cli_import_esconv(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "drafts.yaml"
    code, out, _ = run(capsys, "import-esconv", str(ESCONV / "valid.jsonl"), "--out", str(out_file), "--limit", "5",
                       "--evaluation-only")  # fmt: skip
    assert code == 0
    assert out.strip() == f"imported 5 profiles to {out_file}: enriched 0, enrichment failures 0"
    loaded = load_profile_file(out_file)
    assert [p.id for p in loaded] == [f"esconv-valid-{i}" for i in range(5)]
    assert all(p.evaluation_only for p in loaded)
    assert [f.name for f in tmp_path.iterdir()] == ["drafts.yaml"]  # no temporary file left behind


@needs_esconv
def test_cli_import_esconv_counts_enrichment_failures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    out_file = tmp_path / "drafts.yaml"
    # the built-in "scripted" model replies "..." to everything: every enrichment must fail, and be counted
    code, out, err = run(capsys, "import-esconv", str(ESCONV / "failed_dev.json"), "--out", str(out_file),
                         "--limit", "3", "--enrich-model", "scripted")  # fmt: skip
    assert code == 0
    assert out.strip().endswith("enriched 0, enrichment failures 3")
    assert err.count("not enriched (draft kept)") == 3
    assert all("draft" in p.tags and "llm-enriched" not in p.tags for p in load_profile_file(out_file))


def test_cli_import_esconv_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "import-esconv", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.yaml"))
    assert code == 2 and "not found" in err
    code, _, err = run(capsys, "import-esconv", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.yaml"),
                       "--enrich-model", "gpt-4o-mini")  # fmt: skip
    assert code == 2 and "--enrich-model gpt-4o-mini" in err
