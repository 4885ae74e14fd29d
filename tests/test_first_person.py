"""The rules user's story in the seeker's own voice (simulate/first_person.py): names and the gender's
pronouns become I, me, my, myself, and the verbs after them agree, on the built-in bank and by hand."""

from __future__ import annotations

import pytest

from emoharbor.profiles.loader import builtin_profiles, resolve_profiles
from emoharbor.simulate.chain_user import story_facts
from emoharbor.simulate.first_person import first_person

DARNELL = resolve_profiles(["builtin:p001*"])[0]


def test_a_built_in_story_is_told_as_i() -> None:
    told = [first_person(f, DARNELL) for f in story_facts(DARNELL)]
    assert told[0].endswith(
        "Hendley Components, I was let go in a Tuesday-morning Zoom call that lasted eleven minutes."
    )
    assert told[1].startswith("I have three months of severance, a mortgage on the house in Warrendale")
    # his mother is "she": only the seeker's pronouns change
    assert told[2] == "I haven't told my mother yet because she worked at the same plant for thirty years."


@pytest.mark.parametrize(
    ("gender", "story", "told"),
    [
        ("woman", "Ana Diaz told her sister she quits.", "I told my sister I quit."),
        ("woman", "Her boss told her that Ana's work is late.", "My boss told me that my work is late."),
        ("woman", "She tidies her desk, watches one video, and still worries about it.",
         "I tidy my desk, watch one video, and still worry about it."),
        ("man", "He isn't sure and blames himself.", "I am not sure and blame myself."),
        ("non-binary", "They are tired of their job.", "I am tired of my job."),
        ("man", "Ana Diaz's cats and dogs are fine.", "My cats and dogs are fine."),
    ],
)  # fmt: skip
def test_pronouns_names_and_verbs(gender: str, story: str, told: str) -> None:
    profile = DARNELL.model_copy(update={"name": "Ana Diaz", "gender": gender})
    assert first_person(story, profile) == told


def test_no_built_in_fact_keeps_the_seekers_name_or_pronoun() -> None:
    subject = {"man": "He", "woman": "She", "girl": "She", "trans man": "He", "trans woman": "She"}
    for p in builtin_profiles():
        for fact in story_facts(p):
            words = first_person(fact, p).replace(",", " ").replace(".", " ").split()
            assert not set(p.name.split()) & set(words), (p.id, fact)
            assert subject.get(p.gender, "-") not in words, (p.id, fact)  # a sentence's subject pronoun
