"""The built-in forms that rate a conversation, and what each is shown: the simulated user (``user``) its
persona, its inner record and the transcript, as the one who lived through it; ``profile_aware`` the persona
and the transcript, no inner record ("knowing the person" without "having lived through the talk");
``third_party`` the transcript only. In a validate run only the replayed part has an inner record."""

from __future__ import annotations

from ..models.base import Message
from ..profiles.schema import Profile
from ..simulate.chain_user import system_prompt
from ..simulate.conversation import Conversation
from .cards import JudgeCard
from .judge import answer_text
from .judge_forms import Asked, ConversationForm, register_judge_form


def trajectory_text(conv: Conversation) -> str:
    rows = []
    for s in conv.states:
        met = f"; met: {', '.join(s.needs_met)}" if s.needs_met else ""
        missed = f"; missed: {', '.join(s.needs_missed)}" if s.needs_missed else ""
        rows.append(f"{s.turn}: intensity {s.intensity}, trust {s.trust}; {s.thought or '-'}{met}{missed}")
    return "\n".join(rows) or "(no inner record)"


def _common(card: JudgeCard) -> dict[str, str]:
    return {"rubric": card.rubric_file().prompt_text(), "answer": answer_text(card)}


def _persona(profile: Profile | None) -> str:
    assert profile is not None, "a form with profile=True: judge_conversation gives it one"
    return profile.persona_card()


def user_messages(card: JudgeCard, conv: Conversation, profile: Profile | None) -> Asked:
    p = card.prompt_file()
    system = system_prompt(_persona(profile), conv.transcript("You"))  # the chain's own prefix, read once
    text = p.render(trajectory=trajectory_text(conv), **_common(card))
    msgs: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": text}]
    return msgs, f"{card.version}+{p.version}"


def profile_aware_messages(card: JudgeCard, conv: Conversation, profile: Profile | None) -> Asked:
    p = card.prompt_file()
    persona = _persona(profile)
    text = p.render(persona=persona, transcript=conv.transcript("Seeker", "Supporter"), **_common(card))
    return [{"role": "user", "content": text}], f"{card.version}+{p.version}"


def third_party_messages(card: JudgeCard, conv: Conversation, profile: Profile | None) -> Asked:
    p = card.prompt_file()
    text = p.render(transcript=conv.transcript("Seeker", "Supporter"), **_common(card))
    return [{"role": "user", "content": text}], f"{card.version}+{p.version}"


register_judge_form(ConversationForm(name="user", shown=("persona", "inner record", "transcript"),
                                     prompt="builtin:user_judge", messages=user_messages, profile=True,
                                     lived=True))  # fmt: skip
register_judge_form(ConversationForm(name="profile_aware", shown=("persona", "transcript"),
                                     prompt="builtin:profile_aware_judge", messages=profile_aware_messages,
                                     profile=True))  # fmt: skip
register_judge_form(ConversationForm(name="third_party", shown=("transcript",), prompt="builtin:third_party_judge",
                                     messages=third_party_messages))  # fmt: skip
