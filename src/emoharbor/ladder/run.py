"""``emoharbor ladder``: whole EmoHarbor talks with a ladder of supporters whose order is known (``rungs.py``),
each rated by the run's judges; ``analysis.py`` measures whether each scorer orders the rungs.

Store tables (those of an EmoHarbor run, so its conversations and assessments read alike):
- ``conversation`` (key: profile, rung, repeat): a whole talk of the simulated user with the rung;
- ``assessment`` (key: the conversation's, then the judge): a judge's ratings of it;
- ``profile`` (key: its id): the run's profiles as resolved when it started.

The rungs on the supporter model talk first; the scripted rungs, made from the default rung's talks, after
them. A scripted talk whose default talk ended in error waits for the next run of the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.cards import CardEntry
from ..assess.stage import (
    Judge,
    assess_all,
    check_judges,
    judge_models,
    judges_record,
    make_judges,
    rate_stored,
    unassessed,
)
from ..data.selection import check_selection, select
from ..errors import ConfigError, DataError
from ..kinds import Summary
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..profiles.loader import profile_inputs, resolve_profiles
from ..profiles.schema import PERSONA, Profile
from ..simulate.agents import UserBlock, UserSettings, make_user, user_agent, user_settings
from ..simulate.conversation import Conversation
from ..simulate.loop import converse, talk_seed
from ..simulate.supporter import Replier, Supporter
from ..store.keys import Key
from ..store.record import open_record, run_record
from ..store.records import PROFILE, stored_profiles
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, WallTime, Work, ended_in_error, finished, run_stage, stage_todo
from . import rungs as R
from .record import record

KIND = "ladder"
DEFAULT_JUDGES = ("user", "third_party", "profile_aware")


@dataclass
class LadderOptions:
    profiles: list[str] = field(default_factory=lambda: ["builtin:*"])
    limit: int | None = None  # the first N profiles
    sample: int | None = None  # or N drawn with ``seed``
    seed: int = 0
    rungs: list[str] = field(default_factory=lambda: list(R.BUILT_IN))  # best first
    own: dict[str, str] = field(default_factory=dict)  # a rung of one's own: name -> system prompt
    turns: int = 4  # supporter turns at most
    repeats: int = 1
    user: ModelSpec = field(default_factory=ModelSpec)
    user_agent: UserBlock = field(default_factory=lambda: user_settings("chain"))
    supporter: ModelSpec | None = None  # the model of the rungs that have one (default: the user's)
    supporter_max_tokens: int = 80
    judge: ModelSpec | None = None  # the judge cards' model where they name none (default: the user's)
    judges: list[CardEntry] = field(default_factory=lambda: list(DEFAULT_JUDGES))
    scoring: str | None = None  # over every card's: argmax or expected
    concurrency: int = 4

    def __post_init__(self) -> None:
        check_selection(self.limit, self.sample, "profiles")
        for name, least in (("turns", 1), ("repeats", 1), ("supporter_max_tokens", 16)):
            if getattr(self, name) < least:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least {least}, not {getattr(self, name)}")
        if not isinstance(self.user_agent, UserSettings):
            self.user_agent = user_settings(self.user_agent)

    @property
    def supporter_model(self) -> ModelSpec:
        return self.supporter or self.user

    @property
    def judge_model(self) -> ModelSpec:
        return self.judge or self.user

    def resolved(self) -> dict[str, Any]:
        """What the talks and their ratings depend on (the judges' cards are added by the plan)."""
        return {
            "profiles": self.profiles, "limit": self.limit, "sample": self.sample, "seed": self.seed,
            "rungs": self.rungs, "own": self.own, "texts": R.texts_version(), "rules": R.RULES, "turns": self.turns,
            "repeats": self.repeats, "user": self.user.model_dump(mode="json"),
            "user_agent": self.user_agent.model_dump(mode="json"),
            "supporter": self.supporter_model.model_dump(mode="json"),
            "supporter_max_tokens": self.supporter_max_tokens, "concurrency": self.concurrency,
        }  # fmt: skip


@dataclass(frozen=True)
class LadderPlan:
    """What a ladder run is to do, built once: the profiles, the rungs, the judges and the run record."""

    opts: LadderOptions
    profiles: list[Profile]
    rungs: list[R.Rung]
    judges: list[Judge]
    record: dict[str, Any]

    @classmethod
    def of(cls, opts: LadderOptions) -> LadderPlan:
        rungs = R.rungs_of(opts.rungs, opts.own)
        try:
            profiles = select(resolve_profiles(opts.profiles), opts.limit, opts.sample, opts.seed)
        except DataError as e:
            raise DataError(f"--profiles: {e}") from None
        if len(profiles) < 2:
            raise ConfigError(f"--profiles: {len(profiles)} profile; a ladder's figures compare profiles: give two "
                              "or more")  # fmt: skip
        judges = make_judges(opts.judges, opts.judge_model, opts.user, scoring=opts.scoring, option="--judge")
        if not judges and not user_agent(opts.user_agent.agent).perceives:
            raise ConfigError("--judge none with a user that keeps no inner state: nothing would score the talks")
        prompts = [*user_agent(opts.user_agent.agent).prompts, PERSONA, *R.PROMPTS]
        files = [*profile_inputs(opts.profiles), *(Path(s[1:]) for s in opts.own.values() if s.startswith("@"))]
        resolved = {**opts.resolved(), "judge_cards": judges_record(judges)}
        return cls(opts, profiles, rungs, judges, run_record(resolved, sorted(set(prompts)), files))

    def keys(self, scripted: bool) -> list[Key]:
        """The talks' keys, every profile's rungs in turn (a stopped run holds whole profiles), of the rungs
        on the supporter model or (``scripted``) the scripted ones."""
        return [(p.id, r.name, str(rep)) for rep in range(self.opts.repeats) for p in self.profiles
                for r in self.rungs if r.scripted == scripted]  # fmt: skip


def talk_work(key: Key, profile: Profile, index: int, supporter: Replier, model: Any, settings: UserSettings,
              turns: int, seed: int, made: dict[Key, Conversation]) -> Work:  # fmt: skip
    async def work() -> tuple[dict[str, Any], Events]:
        conv = Conversation(id="|".join(key), profile_id=profile.id, supporter=key[1], repeat=int(key[2]),
                            seed=talk_seed(seed, index, int(key[2])))  # fmt: skip
        await converse(conv, make_user(model, profile, settings), supporter, max_turns=turns, seed=conv.seed)
        made[key] = conv
        return conv.model_dump(mode="json"), [*conv.events, ("termination", conv.termination)]

    return work


def reference(store: RunStore, profile_id: str, repeat: str) -> list[str] | None:
    """The default rung's replies in its finished talk with ``profile_id`` (None while it has none)."""
    d = store.get("conversation", (profile_id, R.REFERENCE, repeat))
    if d is None or d.get("status") != "ok":
        return None
    return R.default_replies(d["turns"]) or None


async def run_ladder(plan: LadderPlan | LadderOptions, run_dir: Path, *, progress: bool = True,
                     cache_path: Path | bool | None = True) -> Summary:  # fmt: skip
    """Execute ``plan`` in ``run_dir`` (options are planned here first: the library's callers)."""
    plan = plan if isinstance(plan, LadderPlan) else LadderPlan.of(plan)
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, plan.judges)
        for p in plan.profiles:
            if not store.has(PROFILE, (p.id,)):
                store.put(PROFILE, (p.id,), p.model_dump(mode="json"))
        keys = plan.keys(False) + plan.keys(True)
        had = finished(store, "conversation") & set(keys)
        more = unassessed(store, plan.judges, "conversation")
        try:
            if stage_todo(store, "conversation", keys, more):  # nothing left: no server is started
                await _talks(store, plan, more, progress, cache_path)
        finally:  # stopped or not: the finished profiles' figures, quoted by other runs' health
            record(store)
        done = finished(store, "conversation") & set(keys)
        waiting = len(set(keys) - store.keys("conversation"))
        store.set_meta("status", "complete" if not stage_todo(store, "conversation", keys) else "incomplete")
        lead = f"{len(plan.profiles)} profiles x {len(plan.rungs)} rungs, {waiting} talks waiting on another: "
        return Summary("talk", len(keys), len(done - had), ended_in_error(store, "conversation", keys), lead=lead)
    finally:
        store.close()


async def _talks(store: RunStore, plan: LadderPlan, more: Any, progress: bool, cache_path: Path | bool | None) -> None:
    opts = plan.opts
    clock = WallTime(store)
    index = {p.id: i for i, p in enumerate(plan.profiles)}
    profile_of = {p.id: p for p in plan.profiles}
    rung_of = {r.name: r for r in plan.rungs}
    made: dict[Key, Conversation] = {}
    async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
        agent = user_agent(opts.user_agent.agent)
        user_model = await pool.get(opts.user, "user") if agent.needs_model else None
        models = await judge_models(pool, plan.judges)

        async def assess(key: Key, rec: dict[str, Any]) -> None:
            conv = made.pop(key, None) or Conversation.model_validate(rec)
            if conv.status == "ok":
                await assess_all(store, key, conv, plan.judges, models, profile_of[conv.profile_id])
            clock.mark()

        def unit(key: Key, supporter: Replier) -> tuple[Key, Work]:
            pid = key[0]
            return key, talk_work(key, profile_of[pid], index[pid], supporter, user_model, opts.user_agent,
                                  opts.turns, opts.seed, made)  # fmt: skip

        spec = opts.supporter_model
        model = await pool.get(spec, "supporter") if plan.keys(False) else None
        donor = R.donors(plan.profiles)
        step = max(1, opts.concurrency // 2)  # profiles at a time: a stopped run holds whole profiles
        for start in [*range(0, len(plan.profiles), step), None]:  # None: the scripted talks left waiting
            chunk = {p.id for p in plan.profiles[start : start + step]} if start is not None else set(profile_of)
            if model is not None and start is not None:
                units = [unit(k, Supporter(model, k[1], rung_of[k[1]].system_prompt(profile_of[k[0]]),
                                           opts.supporter_max_tokens))
                         for k in plan.keys(False) if k[0] in chunk]  # fmt: skip
                await run_stage(store, "conversation", units, workers=opts.concurrency, progress=progress,
                                label="talks (model rungs)", then=assess, more=more)  # fmt: skip
            scripted = []
            for k in plan.keys(True):
                pid, rung, rep = k
                if pid not in chunk:
                    continue
                mine = reference(store, pid, rep)
                theirs = reference(store, donor[pid], rep) if rung == "off_target" and pid in donor else None
                if mine and (rung != "off_target" or theirs):
                    scripted.append(unit(k, R.ScriptedSupporter(rung, pid, mine, theirs)))
            await run_stage(store, "conversation", scripted, workers=opts.concurrency, progress=progress,
                            label="talks (scripted rungs)", then=assess, more=more)  # fmt: skip
    clock.mark()


async def rejudge(run_dir: Path, cards: list[str], judge: ModelSpec | None, *, scoring: str | None = None,
                  progress: bool = True) -> int:  # fmt: skip
    """Rate a ladder run's finished talks with more judge cards (``emoharbor assess``), on ``judge`` (default: the
    run's user model); returns how many ratings were made now."""
    store = RunStore.open_existing(run_dir, KIND)
    try:
        cfg = store.config()
        user = ModelSpec.model_validate(cfg["user"])
        judges = make_judges(cards, judge or user, user, scoring=scoring, option="--judge")
        check_judges(store, judges)
        made = await rate_stored(store, judges, stored_profiles(store), workers=int(cfg["concurrency"]),
                                 progress=progress)  # fmt: skip
        record(store)
        return made
    finally:
        store.close()
