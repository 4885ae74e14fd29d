"""``emoharbor realism``: the simulated user writes where real help-seekers wrote (``cuts.py``), resumably in a
run store; the figures are ``analysis.py``'s.

Store tables:
- ``cut`` (key: talk, position) and ``talk`` (key: talk): the real material, no model; written once, read
  back by the table and the report;
- ``next`` (key: talk, position): the simulated user's next message at a cut, with its decision and events;
- ``whole`` (key: talk): a whole simulated conversation from the talk's profile with the supporter.

A unit whose user gave no usable message is stored ``unscored`` (counted, never a message); a failed call
``error`` (done again by the next run of the command).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.selection import check_selection, choose, in_turn
from ..errors import ConfigError
from ..kinds import Summary
from ..models.base import ChatModel, ModelCallError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..prompts import Prompt
from ..simulate.agents import UserBlock, UserSettings, joining_user, make_user, user_agent, user_settings
from ..simulate.conversation import Conversation
from ..simulate.examples import same_talks
from ..simulate.loop import converse
from ..simulate.supporter import Supporter, supporter_prompt
from ..simulate.user_agent import UserSimulationError
from ..simulate.voice_model import user_chat_model
from ..store.keys import Key
from ..store.record import open_record, run_record
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, WallTime, Work, run_stage, stage_todo
from .cuts import Cut, Talk, file_talks, pick, talk_cuts, talk_shape
from .record import record

KIND = "realism"
DEFINITION = 1  # the version of what a cut and a talk are (cuts.py): a change refuses to resume older runs


@dataclass
class RealismOptions:
    files: list[Path]
    limit: int | None = None  # the first N talks of each file
    sample: int | None = None  # or N talks of each file drawn with ``seed``
    seed: int = 0
    cuts: int = 2  # cuts per talk (drawn with ``seed`` among the talk's)
    whole: int = 8  # whole talks simulated (the first of the chosen talks)
    turns: int = 6  # supporter turns at most in a whole talk
    user: ModelSpec = field(default_factory=ModelSpec)
    user_agent: UserBlock = field(default_factory=lambda: user_settings("chain"))
    supporter: ModelSpec | None = None  # the whole talks' supporter (default: the user's model)
    supporter_prompt: str | None = None  # builtin:NAME, @FILE or the text (default: builtin:default)
    supporter_max_tokens: int = 80
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not self.files:
            raise ConfigError("realism needs at least one ESConv file")
        check_selection(self.limit, self.sample, "talks")
        for name, least in (("cuts", 0), ("whole", 0), ("turns", 1)):
            if getattr(self, name) < least:
                raise ConfigError(f"--{name} must be at least {least}, not {getattr(self, name)}")
        if not (self.cuts or self.whole):
            raise ConfigError("--cuts 0 and --whole 0: nothing to simulate (give cuts per talk, whole talks or both)")
        if not isinstance(self.user_agent, UserSettings):
            self.user_agent = user_settings(self.user_agent)

    @property
    def supporter_model(self) -> ModelSpec:
        return self.supporter or self.user

    def prompt(self) -> Prompt:
        return supporter_prompt(self.supporter_prompt or "builtin:default")

    def resolved(self) -> dict[str, Any]:
        """What the cuts, the talks and the simulated messages depend on."""
        out: dict[str, Any] = {
            "files": [str(p.resolve()) for p in self.files],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "cuts": self.cuts,
            "definition": DEFINITION,
            "user": self.user.model_dump(mode="json"),
            "user_agent": self.user_agent.model_dump(mode="json"),
            "whole": self.whole,
        }
        if self.whole:
            out.update(turns=self.turns, supporter=self.supporter_model.model_dump(mode="json"),
                       supporter_prompt=self.prompt().version,
                       supporter_max_tokens=self.supporter_max_tokens)  # fmt: skip
        return out


@dataclass(frozen=True)
class RealismPlan:
    """What a realism run is to do, built once: the cuts and talks (each file read once) and the run record
    (the options, the versions of every prompt the simulated user reads, the files' hashes)."""

    opts: RealismOptions
    cuts: list[Cut]
    talks: list[Talk]  # those simulated whole
    record: dict[str, Any]

    @classmethod
    def of(cls, opts: RealismOptions) -> RealismPlan:
        sources = [(path, file_talks(path)) for path in opts.files]
        dialogs = choose(sources, opts.limit, opts.sample, opts.seed, lambda d: d.id, "talk")
        lent = getattr(opts.user_agent, "examples", None)
        both = same_talks(lent, dialogs) if lent else []
        if both:
            raise ConfigError(f"user_agent.examples {lent}: it holds {len(both)} of the talks being evaluated "
                              f"({', '.join(both[:3])}): draw the examples from other talks (ESConv's "
                              "train)")  # fmt: skip
        per_talk = [pick(talk_cuts(d), opts.cuts, opts.seed) for d in dialogs]
        cuts = in_turn(per_talk)  # every talk's first cut, then every talk's second: a stopped run spans the talks
        talks = [talk_shape(d) for d in dialogs[: opts.whole]]
        prompts = user_agent(opts.user_agent.agent).prompts
        return cls(opts, cuts, talks, run_record(opts.resolved(), prompts, opts.files))


def unit_seed(seed: int, key: Key) -> int:
    return seed + zlib.crc32("|".join(key).encode())


def next_work(cut: Cut, model: ChatModel | None, settings: UserSettings, seed: int) -> Work:
    async def work() -> tuple[dict[str, Any], Events]:
        base = {"talk": cut.talk, "at": cut.at}
        user = joining_user(model, cut.profile, settings, max(cut.replies - 1, 0))  # as the reward starts one
        try:
            step = await user.react(cut.turns, seed)
        except ModelCallError as e:
            return {**base, "status": "error", "error": str(e)}, [("model_error", str(e)[:200])]
        except UserSimulationError as e:
            return {**base, "status": "unscored", "error": str(e)}, e.events
        if not step.text.strip():
            return {**base, "status": "unscored", "error": "empty message"}, [*step.events, ("user_empty", "")]
        return {**base, "status": "ok", "text": step.text, "decision": step.decision,
                "events": [list(e) for e in step.events]}, step.events  # fmt: skip

    return work


def whole_work(talk: Talk, model: ChatModel | None, supporter: Supporter, settings: UserSettings, turns: int,
               seed: int) -> Work:  # fmt: skip
    async def work() -> tuple[dict[str, Any], Events]:
        conv = Conversation(id=talk.talk, profile_id=talk.profile.id, supporter=supporter.name, seed=seed)
        user = make_user(model, talk.profile, settings)
        await converse(conv, user, supporter, max_turns=turns, seed=seed)
        return {**conv.model_dump(mode="json"), "talk": talk.talk, "status": conv.status}, list(conv.events)

    return work


def store_material(store: RunStore, plan: RealismPlan) -> None:
    """The cuts and the real talks, each kept once: the table and the report read them from the store."""
    for table, items in (("cut", plan.cuts), ("talk", plan.talks)):
        have = store.keys(table)
        for item in items:
            key = item.key if isinstance(item, Cut) else (item.talk,)
            if key not in have:
                store.put(table, key, {**item.to_dict(), "status": "ok"}, attempt="", events=[])


async def run_realism(plan: RealismPlan | RealismOptions, run_dir: Path, *, progress: bool = True,
                      cache_path: Path | bool | None = True) -> Summary:  # fmt: skip
    """Execute ``plan`` in ``run_dir`` (options are planned here first: the library's callers)."""
    plan = plan if isinstance(plan, RealismPlan) else RealismPlan.of(plan)
    store = open_record(run_dir, KIND, plan.record)
    try:
        store_material(store, plan)
        keys: dict[str, list[Key]] = {"next": [c.key for c in plan.cuts], "whole": [(t.talk,) for t in plan.talks]}
        todo = {k: set(stage_todo(store, k, v)) for k, v in keys.items()}
        try:
            if any(todo.values()):  # nothing left: no server is started
                await _simulate(store, plan, todo, progress, cache_path)
        finally:  # stopped or not: the finished units' figures, quoted by other runs' health
            record(store)
        store.set_meta("status", "complete")
        errors = sum(1 for k, v in keys.items() for s in store.field(k, "status").values() if s == "error")
        units = sum(len(v) for v in keys.values())
        talks = len({c.talk for c in plan.cuts})
        lead = f"{len(plan.cuts)} cuts of {talks} talks, {len(plan.talks)} whole talks: "
        return Summary("message", units, sum(len(v) for v in todo.values()), errors, lead=lead)
    finally:
        store.close()


async def _simulate(store: RunStore, plan: RealismPlan, todo: dict[str, set[Key]], progress: bool,
                    cache_path: Path | bool | None) -> None:  # fmt: skip
    opts = plan.opts
    clock = WallTime(store)
    async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
        model = await user_chat_model(pool, opts.user, opts.user_agent)
        units: list[tuple[Key, Work]] = [
            (c.key, next_work(c, model, opts.user_agent, unit_seed(opts.seed, c.key))) for c in plan.cuts
        ]
        await run_stage(store, "next", units, workers=opts.concurrency, progress=progress, label="next message",
                        then=clock.then)  # fmt: skip
        if todo["whole"]:
            spec = opts.supporter_model
            supporter = Supporter(await pool.get(spec, "supporter"), "supporter", opts.prompt(),
                                  opts.supporter_max_tokens)  # fmt: skip
            units = [((t.talk,), whole_work(t, model, supporter, opts.user_agent, opts.turns,
                                            unit_seed(opts.seed, (t.talk,)))) for t in plan.talks]  # fmt: skip
            await run_stage(store, "whole", units, workers=opts.concurrency, progress=progress, label="whole talks",
                            then=clock.then)  # fmt: skip
    clock.mark()
