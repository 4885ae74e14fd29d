"""A new reply-scoring suite on the core (``emoharbor.scoring``): the worked example of what one needs.

``BrevitySuite`` asks whether the scorers prefer a case's real reply to the same reply cut to its first three
words. Everything it needs is here: its options (the core's ``ScorerOptions`` plus its own source), its cases,
its items, one call of ``scoring.stage.score`` (the models of the scorers with units left, each unit done once
and kept, one case's units by one scorer in a row, the run's model time) and ``scoring.values`` to read the
scorers back. Before the core, the second suite (``seekers``) imported the first one's run module for its
items, models and units and copied its options class and checks; this suite touches no other suite's code.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emoharbor.errors import ConfigError
from emoharbor.profiles.loader import builtin_profiles
from emoharbor.reward.context import RewardContext
from emoharbor.reward.settings import RewardSettings
from emoharbor.scoring.case import Case
from emoharbor.scoring.items import Item
from emoharbor.scoring.names import REAL, USER
from emoharbor.scoring.options import ScorerOptions
from emoharbor.scoring.stage import score
from emoharbor.scoring.values import user_values
from emoharbor.simulate.conversation import Turn
from emoharbor.store.record import open_record
from emoharbor.store.run_store import RunStore

SEEKER = ["I lost my job last week and I can't stop worrying about the rent.",
          "My sister keeps telling me to calm down, and it makes me feel worse.",
          "I have not slept properly since the exam results came out."]  # fmt: skip
REPLY = "That sounds really frightening; losing work and then worrying about rent is a lot to carry at once."


@dataclass(kw_only=True)
class BrevityOptions(ScorerOptions):
    texts: list[str] = field(default_factory=list)  # the suite's own source

    def __post_init__(self) -> None:
        if not self.texts:
            raise ConfigError("brevity needs texts")
        self.check_scorers()


def cases(opts: BrevityOptions) -> list[Case]:
    profile = builtin_profiles()[0]
    out = []
    for i, text in enumerate(opts.texts):
        ctx = RewardContext(f"b{i}", "test", profile, [Turn(speaker="user", text=text)], 70, 40, 0, f"b{i}")
        out.append(Case(ctx.id, "test", ctx, REPLY, ""))
    return out


def items(opts: BrevityOptions) -> list[Item]:
    short = " ".join(REPLY.split()[:3])
    return [Item("score", (c.id, kind, USER), c, kind, reply, None) for c in cases(opts)
            for kind, reply in ((REAL, c.real), ("short", short))]  # fmt: skip


async def run_brevity(opts: BrevityOptions, folder: Path) -> int:
    store = open_record(folder, "brevity", {"texts": opts.texts, **opts.scorers_resolved()})
    try:
        return await score(store, items(opts), opts, opts.make_judges(), label="brevity", progress=False,
                           cache_path=None)  # fmt: skip
    finally:
        store.close()


def test_a_new_suite_scores_resumes_and_reads_its_scorers_back(tmp_path: Path) -> None:
    reward = RewardSettings.model_validate({"user_agent": "rules"})  # the rule user: no model is started
    opts = BrevityOptions(texts=SEEKER, reward=reward)
    assert asyncio.run(run_brevity(opts, tmp_path / "run")) == 2 * len(SEEKER)
    assert asyncio.run(run_brevity(opts, tmp_path / "run")) == 0  # resumed: nothing is done again
    store = RunStore.open_existing(tmp_path / "run")
    try:
        records = [d for _, d in store.items("score")]
        meta = store.meta()
    finally:
        store.close()
    assert len(records) == 2 * len(SEEKER) and all(r["status"] == "ok" for r in records)
    assert "wall_s" in meta  # the run's model time is kept (its value is the machine's)
    values = user_values(records, reward)["user reward"]
    assert {k for k in values} == {(f"b{i}", kind) for i in range(len(SEEKER)) for kind in (REAL, "short")}
    assert all(v is not None for v in values.values())


def test_the_core_checks_the_scorers() -> None:
    with pytest.raises(ConfigError, match="no scorer"):
        BrevityOptions(texts=SEEKER, user=None, judges=[])
    with pytest.raises(ConfigError, match="rates whole conversations"):
        BrevityOptions(texts=SEEKER, judges=["third_party"]).make_judges()
