"""The inner state coherence count: the appraisal's fit against the intensity move, and its row in run health."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emoharbor.models.scripted import ScriptedModel
from emoharbor.report.health import coherence_table, health_html
from emoharbor.run_view import RunView
from emoharbor.simulate.chain_user import ChainUser
from emoharbor.simulate.coherence import Coherence, conversation_coherence, total_coherence
from emoharbor.simulate.conversation import Conversation, Turn, UserState
from emoharbor.simulate.loop import converse
from test_chain import PROFILE, ChainScript, supporter

# (fit or None for an appraisal that did not parse, intensity after, whether the feeling parsed), from 70
REACTIONS: list[tuple[str | None, int, bool]] = [
    ("good", 75, True),  # incoherent: a good fit, and it rose
    ("good", 60, True),
    ("poor", 55, True),  # incoherent: a poor fit, and it fell
    ("poor", 65, True),
    ("mixed", 80, True),  # not checked: a mixed fit agrees with anything
    ("good", 80, True),  # checked, coherent: it stayed
    ("poor", 75, False),  # not checked: the feeling did not parse
    (None, 75, True),  # not checked: no appraisal
]


def inner(turn: int, fit: str | None, intensity: int, parsed: bool) -> dict[str, Any]:
    return {
        "appraisal": {"fit": fit, "needs_met": [], "needs_missed": []} if fit else None,
        "feeling": {"feel_better": 0, "intensity_change": 0, "trust_change": 0} if parsed else None,
        "state": UserState(turn=turn, intensity=intensity, trust=40).model_dump(),
    }


def made_up(supporter_name: str = "s", *, replay: bool = False, start: int = 70) -> Conversation:
    """A conversation with REACTIONS: on the user's replies (a simulated chat) or on the supporter turns
    themselves (a validate replay, where the seeker's real turns carry no inner record)."""
    conv = Conversation(id=f"{supporter_name}-{replay}", profile_id="p", supporter=supporter_name)
    conv.states.append(UserState(turn=0, intensity=start, trust=40))
    conv.turns.append(Turn(speaker="user", text="hi", inner=None if replay else {"opening": True}))
    for k, (fit, after, parsed) in enumerate(REACTIONS, 1):
        record = inner(k, fit, after, parsed)
        conv.states.append(UserState(**record["state"]))
        if replay:
            conv.turns += [Turn(speaker="supporter", text="m", inner=record), Turn(speaker="user", text="u")]
        else:
            conv.turns += [Turn(speaker="supporter", text="m"), Turn(speaker="user", text="u", inner=record)]
    return conv


def test_counts_on_a_simulated_chat_and_on_a_replay() -> None:
    assert conversation_coherence(made_up()) == Coherence(incoherent=2, checked=5)
    assert conversation_coherence(made_up(replay=True)) == Coherence(incoherent=2, checked=5)
    # a share, mean or rank of a few counts in float64, exact to an ulp in any order of summation: approx's
    # default (relative 1e-6) is ample and still tells 0.5 from 0.4999
    assert Coherence(2, 5).rate == pytest.approx(0.4) and Coherence().rate is None


def test_the_first_turn_is_measured_from_the_initial_state() -> None:
    assert conversation_coherence(made_up(start=80)).incoherent == 1  # 80 -> 75 after a good fit: coherent
    no_states = made_up().model_copy(update={"states": []})
    assert conversation_coherence(no_states) == Coherence(0, 0)  # no trajectory: nothing to check


def test_a_turn_without_a_message_keeps_the_trajectory_straight() -> None:
    # the Expresser failed after the last reaction: its state is in the trajectory, its turn is not
    conv = made_up()
    conv.states.append(UserState(turn=len(REACTIONS) + 1, intensity=100, trust=40))
    assert conversation_coherence(conv) == Coherence(2, 5)
    # a reply lost from the middle: the next reaction is still measured from the state just before it
    del conv.turns[4]  # the user's reply to the second message (intensity 60)
    assert conversation_coherence(conv) == Coherence(2, 4)


def test_total_over_conversations() -> None:
    assert total_coherence([made_up(), made_up(replay=True)]) == Coherence(4, 10)
    assert total_coherence([]) == Coherence(0, 0)


async def test_counted_on_a_chain_users_conversation() -> None:
    better = [3, 6, 4]  # -5, +10, 0; every fit is good: feeling worse after it is incoherent
    script = ChainScript(feel=lambda n: json.dumps({"thought": "t", "better": better[n], "trust": 4}))
    model = ScriptedModel(script)
    conv = Conversation(id="c", profile_id=PROFILE.id, supporter="s")
    await converse(conv, ChainUser(model, PROFILE), supporter(model), max_turns=3, seed=1)
    assert [s.intensity for s in conv.states] == [75, 80, 70, 70]
    assert conversation_coherence(conv) == Coherence(1, 3)


def test_the_run_health_shows_the_count_per_supporter() -> None:
    view = RunView(folder=Path("run"), kind="emoharbor", meta={}, conversations=[made_up("a"), made_up("b", start=80)])
    html = coherence_table(view)
    assert "inner state coherence: incoherent turns / turns checked" in html
    assert "<td>a</td><td>2 / 5</td><td>0.40</td>" in html
    assert "<td>b</td><td>1 / 5</td><td>0.20</td>" in html
    assert "<h3>Inner state coherence</h3>" in health_html(view)
    empty = RunView(
        folder=Path("run"),
        kind="emoharbor",
        meta={},
        conversations=[Conversation(id="x", profile_id="p", supporter="a")],
    )
    assert "no inner state to check" in coherence_table(empty)
