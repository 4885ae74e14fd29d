"""Judge evidence sorted into quotes, non-quotes and placeholders (small models copy "..." from prompts)."""

from __future__ import annotations

from emoharbor.assess.evidence import evidence_check, evidence_counts

SAID = ["It makes sense that you're exhausted after a year like that.", "What would rest look like for you?"]


def test_a_quote_of_four_words_in_a_row_counts() -> None:
    assert evidence_check('"It makes sense that you\u2019re exhausted"', SAID) == "quoted"
    assert evidence_check("rest look like for", SAID) == "quoted"
    assert evidence_check("what would rest", SAID) == "quoted"  # shorter than four words: all of it


def test_paraphrases_and_placeholders() -> None:
    assert evidence_check("The supporter acknowledged my feelings.", SAID) == "not_a_quote"
    assert evidence_check("makes sense you exhausted", SAID) == "not_a_quote"  # the words, not in a row
    assert evidence_check("...", SAID) == "placeholder"
    assert evidence_check("", SAID) == "placeholder"
    assert evidence_check("n/a", SAID) == "placeholder"
    counts = evidence_counts({"a": "...", "b": "what would rest look", "c": "kind words"}, SAID)
    assert counts == {"placeholder": 1, "quoted": 1, "not_a_quote": 1}


def test_an_assessment_is_checked_against_its_own_conversation() -> None:
    from emoharbor.assess.evidence import assessment_evidence
    from emoharbor.simulate.conversation import Conversation, Turn
    from emoharbor.store.records import Assessment

    turns = [Turn(speaker="user", text="I am so tired of it all"), *[Turn(speaker="supporter", text=t) for t in SAID]]
    conv = Conversation(id="c", profile_id="p", supporter="s", turns=turns)
    said = {"a": "I am so tired", "b": "what would rest look like", "c": "..."}
    rec = Assessment("c", "user", "ok", evidence=said)
    assert assessment_evidence(rec, conv) == {
        "not_a_quote": 1,
        "quoted": 1,
        "placeholder": 1,
    }  # the user's words are not the supporter's
    unscored = Assessment("c", "user", "unscored", evidence=said)
    assert assessment_evidence(unscored, conv) == {} and assessment_evidence(None, conv) == {}
