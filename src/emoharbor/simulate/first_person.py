"""A profile's story, told about the seeker ("After nineteen years, Darnell was let go. He has three months
of severance"), retold in the seeker's own voice ("After nineteen years, I was let go. I have three months of
severance"), by rules: the seeker's names and the pronouns of the profile's gender become I, me, my and
myself, and the verb after a new "I" agrees with it. For a model-free user (``rules``) that discloses its
story one sentence a turn; the chain's Expresser is told to say "I" and needs none of this.

Rules, not grammar: a pronoun that refers to someone else of the seeker's gender in the same story is
retold as the seeker's too. Good enough for a verifiable user, whose rewards read the words, not the syntax.
"""

from __future__ import annotations

import re

from ..profiles.schema import Profile


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# gender words -> the story's pronouns for the seeker: (subject, object, possessive, reflexive)
PRONOUNS = {
    "he": ("he", "him", "his", "himself"),
    "she": ("she", "her", "her", "herself"),
    "they": ("they", "them", "their", "themselves"),
}
GENDER = {"man": "he", "boy": "he", "trans man": "he", "woman": "she", "girl": "she", "trans woman": "she",
          "non-binary": "they", "nonbinary": "they"}  # fmt: skip
# "her" before one of these is the object ("told her that"), before anything else the possessive ("her job")
NOT_A_NOUN = _words(
    "a an the that this these those to and or but so if as at by for from in into of off on onto out over "
    "with about after before since than then when while yet again anymore too either all back up down "
    "i he she they we you it is was had has would could will can not"
)
# the verb after a new "I": what "he has" and "they are" become
VERBS = {"is": "am", "are": "am", "was": "was", "were": "was", "has": "have", "does": "do", "doesn't": "don't",
         "hasn't": "haven't", "isn't": "am not", "wasn't": "wasn't", "weren't": "wasn't", "aren't": "am not",
         "he's": "I'm", "she's": "I'm", "they're": "I'm", "he'd": "I'd", "she'd": "I'd", "they'd": "I'd",
         "he'll": "I'll", "she'll": "I'll", "they'll": "I'll"}  # fmt: skip
NOT_VERBS = _words("always also never still just only really often already even now then usually sometimes "
                   "rarely barely hardly secretly quietly")  # fmt: skip
COORDINATORS = _words("and but or then")
# a word ending in -s after "and", "but", "or", "then" or a comma is the seeker's next verb ("and spends most
# weekends") when the word after it is one of these, or a gerund, not a plural noun ("and cats")
FOLLOWERS = NOT_A_NOUN | _words(
    "my me one two three four five six seven eight nine ten every most some his her their more less "
    "him himself herself themselves"
)
TOKEN = re.compile(r"[^\W\d_][\w'’-]*|[\W\d_]+")


def _names(profile: Profile) -> set[str]:
    words = profile.name.split()
    return {profile.name, *words} if words else set()


def _singular(verb: str) -> str:
    """A third-person present verb as the first person's: works -> work, worries -> worry, goes -> go."""
    low = verb.lower()
    if low in VERBS:
        return VERBS[low]
    if len(low) < 4 or not low.endswith("s") or low.endswith(("ss", "us", "is")) or low in NOT_VERBS:
        return verb
    if low.endswith("ies"):
        return verb[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes", "zzes", "oes")):
        return verb[:-2]
    return verb[:-1]


def first_person(text: str, profile: Profile) -> str:
    """``text`` (a sentence of the profile's story) in the seeker's own voice."""
    names = _names(profile)
    subject, obj, poss, refl = PRONOUNS.get(GENDER.get(profile.gender.strip().lower(), ""), ("", "", "", ""))
    tokens = TOKEN.findall(text)
    words = [i for i, t in enumerate(tokens) if t[0].isalpha()]
    out = list(tokens)
    after_i = False  # the next word follows a new "I": make the verb agree
    seeker_subject = False  # a new "I" in this sentence: its coordinated verbs agree too
    for n, i in enumerate(words):
        tok = tokens[i]
        low = tok.lower().replace("’", "'")
        nxt_word = tokens[words[n + 1]] if n + 1 < len(words) else ""
        nxt = nxt_word.lower()
        back = 1 if n and tokens[words[n - 1]].lower() not in NOT_VERBS else 2  # "and still thinks"
        gap = tokens[words[n - back] + 1] if n >= back else ""
        before = tokens[words[n - back]].lower() if n >= back else ""
        coordinated = seeker_subject and (gap.strip() == "," or before in COORDINATORS)
        if coordinated and (low.endswith("n't") or (low.endswith("s") and (nxt in FOLLOWERS or nxt.endswith("ing")))):
            out[i] = _singular(tok)
            continue
        if after_i:
            after_i = False
            if low in NOT_VERBS:  # "I still works" -> the verb after the adverb
                after_i = True
                continue
            out[i] = _singular(tok)
            continue
        if low.endswith(("'s", "’s")) and tok[:-2] in names:  # Darnell's -> my
            out[i] = "my"
        elif tok in names:
            if re.sub(r"['’]s$", "", nxt_word) in names:  # the first of a full name: the next word says it
                out[i] = ""
                continue
            out[i], after_i, seeker_subject = "I", True, True
        elif subject and low == subject:
            out[i], after_i, seeker_subject = "I", True, True
        elif subject and low in (f"{subject}'s", f"{subject}'d", f"{subject}'ll", f"{subject}'re"):
            out[i] = VERBS.get(low, "I" + low[len(subject) :])
        elif subject and low == refl:
            out[i] = "myself"
        elif subject and low == poss and (obj != poss or (nxt and nxt not in NOT_A_NOUN)):
            out[i] = "my"
        elif subject and low == obj:
            out[i] = "me"
    text = "".join(out)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\bI (?:I|me)\b", "I", text)
    return text[:1].upper() + text[1:] if text else text
