"""`emoharbor sensitivity`: a behavioural test of every scorer. Each case (a real context and the reply that
followed it) gets rule-made bad replies; every scorer rates the real reply and each bad one, and the suite
counts how often the real one comes out on top (``analysis.py``).

Store kinds (one unit each, resumable, calls cached):
- ``case`` (key: the case id): the case, its replies by kind (``real`` and each bad kind) and the suite's
  version; no model;
- ``score`` (key ``case|reply kind|scorer``): ``user``, the simulated user's reaction and reward
  (``reward.score.Scored``), or the assessment of the reply by a card of a kind that rates one (``reply``);
- ``pair`` (key ``case|bad kind|judge|order``): the verdict of a card of a kind that compares two replies
  (``heart_pairwise``) on the real reply against the bad one, shown first (``ab``) or second (``ba``),
  through HEART's own judging.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.judge_kinds import ReplyKind
from ..assess.reply_judge import judge_reply
from ..assess.stage import Judge, check_judges, judge_models, make_judges
from ..data.selection import check_selection, in_turn, select
from ..errors import ConfigError
from ..heart.histories import SEEKER, SUPPORTER, History
from ..heart.histories import Turn as HeartTurn
from ..kinds import Summary
from ..models.base import ChatModel, ModelCallError
from ..models.pool import ModelPool
from ..models.spec import ModelSpec
from ..report.calibration import record  # the user's measured sensitivity, quoted by other runs' health
from ..reward.score import UserReward
from ..reward.settings import RewardSettings
from ..simulate.agents import user_agent
from ..store.keys import Key
from ..store.record import open_record, run_record
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, Work, finished, in_groups, progress_bar, unit
from .analysis import sensitivity_table
from .bad import KINDS, bad_replies, suite_version
from .cases import Case, Pool, esconv_cases, heart_cases, run_cases
from .names import ALL, REAL, USER

KIND = "sensitivity"
DEFAULT_JUDGES = ("third_party_reply", "heart_pairwise")


@dataclass
class SensitivityOptions:
    esconv: list[Path] = field(default_factory=list)
    heart: list[Path] = field(default_factory=list)
    from_run: list[Path] = field(default_factory=list)
    limit: int | None = None  # the first N cases of each source
    sample: int | None = None  # or N cases of each source drawn with ``seed``
    seed: int = 0
    bad: list[str] = field(default_factory=lambda: list(KINDS))
    user: ModelSpec | None = field(default_factory=ModelSpec)  # None: no simulated user (the judges alone)
    judge: ModelSpec = field(default_factory=ModelSpec)  # the model of the cards that name none
    judges: list[str] = field(default_factory=lambda: list(DEFAULT_JUDGES))
    scoring: str | None = None  # --scoring: overrides every card's
    reward: RewardSettings = field(default_factory=RewardSettings)
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not (self.esconv or self.heart or self.from_run):
            raise ConfigError("sensitivity needs cases: give --esconv FILE, --heart FILE or --from-run RUN")
        check_selection(self.limit, self.sample, "cases")
        unknown = [k for k in self.bad if k not in KINDS]
        if unknown:
            raise ConfigError(f"--bad {', '.join(unknown)}: no such kind of bad reply (the kinds: {', '.join(KINDS)})")
        if not self.bad:
            raise ConfigError("--bad: give at least one kind of bad reply")
        if self.user is None and not self.judges:
            raise ConfigError("--judge none and --model none: nothing is left to score")

    def resolved(self) -> dict[str, Any]:
        """What the cases and the user's scores depend on (the judges are recorded per card)."""
        return {
            "esconv": [str(p.resolve()) for p in self.esconv],
            "heart": [str(p.resolve()) for p in self.heart],
            "from_run": [str(p.resolve()) for p in self.from_run],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "bad": list(self.bad),
            "suite": suite_version(),
            "user": self.user.model_dump(mode="json") if self.user else None,
            "reward": self.reward.model_dump(mode="json"),
        }

    def make_judges(self) -> list[Judge]:
        return make_judges(self.judges, self.judge, rates=("reply", "pair"), scoring=self.scoring, option="--judge",
                           wanted="the suite rates one reply: give a card of a kind that rates one reply "
                           "(third_party_reply) or compares two (heart_pairwise)")  # fmt: skip


def load_cases(opts: SensitivityOptions) -> tuple[list[Case], Pool]:
    """The chosen cases of every source, interleaved (first of each, then second of each...), and the pool
    of real texts the bad replies borrow from (every loaded talk, chosen or not)."""
    pool = Pool()
    t = opts.reward.user_agent.initial_trust
    per_source = [esconv_cases(p, t, pool) for p in opts.esconv]
    per_source += [heart_cases(p, t, pool) for p in opts.heart]
    per_source += [run_cases(p, pool) for p in opts.from_run]
    cases = in_turn([select(c, opts.limit, opts.sample, opts.seed) for c in per_source])
    if not cases:
        raise ConfigError("no cases: no record of the sources has a context that qualifies (see `emoharbor "
                          "sensitivity --help`)")  # fmt: skip
    return cases, pool


@dataclass(frozen=True)
class SensitivityPlan:
    """What a sensitivity run is to do, built once from its options and passed on: the cases and the pool of
    texts the bad replies borrow from (each source read once), the judges (each card loaded once), and the run
    record (the options, the versions of the prompts the simulated user's reactions read, the sources' hashes).
    Preflight (the kind's ``check``) and the run share it."""

    opts: SensitivityOptions
    cases: list[Case]
    pool: Pool
    judges: list[Judge]
    record: dict[str, Any]

    @classmethod
    def of(cls, opts: SensitivityOptions) -> SensitivityPlan:
        """Read the sources first (a bad record is named before any card or model), then the cards."""
        cases, pool = load_cases(opts)
        judges = opts.make_judges()
        prompts = user_agent(opts.reward.user_agent.agent).reaction_prompts if opts.user else ()  # what it reads
        return cls(opts, cases, pool, judges, run_record(opts.resolved(), prompts, [*opts.esconv, *opts.heart]))


def case_seed(seed: int, case_id: str) -> int:
    return seed + zlib.crc32(case_id.encode())


def history_of(case: Case) -> History:
    turns = [HeartTurn(SEEKER if t.speaker == "user" else SUPPORTER, t.text) for t in case.context.turns]
    return History(case.id, "regular", case.source, turns, problem_type=case.problem)


def _user_work(reward: UserReward, case: Case, reply_kind: str, reply: str, seed: int) -> Work:
    async def work() -> tuple[dict[str, Any], Events]:
        s = await reward.score(case.context, reply, seed=seed)
        events: Events = [(f"user_{s.status}", s.error[:160])] if s.status != "ok" else []
        if s.status == "ok" and s.readout != reward.s.readout and s.penalties != ["empty"]:
            events.append(("readout_written", "no token log-probabilities: the written values stand"))
        return {**s.to_dict(), "case": case.id, "reply_kind": reply_kind, "scorer": USER}, events

    return work


def _card_work(judge: Judge, model: ChatModel, case: Case, reply_kind: str, reply: str, seed: int) -> Work:
    async def work() -> tuple[dict[str, Any], Events]:
        base = {"case": case.id, "reply_kind": reply_kind, "scorer": judge.name}
        try:
            rec = await judge_reply(judge.card, model, judge.name, case.context.turns, reply, seed=seed)
        except ModelCallError as e:
            return {**base, "status": "error", "error": str(e)}, [("model_error", str(e)[:200])]
        events: Events = [("unscored", f"{judge.name}: {rec['error'][:160]}")] if rec["status"] != "ok" else []
        return {**rec, **base}, events

    return work


def _pair_work(judge: Judge, model: ChatModel, case: Case, bad_kind: str, bad: str, order: str, seed: int) -> Work:
    from ..heart.stages.judging import Shown, judge_pair, neutral_ids

    async def work() -> tuple[dict[str, Any], Events]:
        i_real, i_bad = neutral_ids(case.id, REAL, bad_kind)
        real, other = Shown(REAL, i_real, case.real), Shown(bad_kind, i_bad, bad)
        first, second = (real, other) if order == "ab" else (other, real)
        rec, events = await judge_pair(model, judge.name, history_of(case), first, second, a=REAL, order=order,
                                       dimensions=[], retries=2, seed=seed, show_situation=False,
                                       card=judge.card)  # fmt: skip
        return {**rec, "case": case.id, "bad_kind": bad_kind, "scorer": judge.name}, events

    return work


@dataclass(frozen=True)
class Item:
    """One scorer on one reply (a pairwise judge: on the real reply against one bad one, in one order)."""

    store_kind: str  # score | pair
    key: Key  # (case, reply kind, scorer), and the order for a pair
    case: Case
    reply_kind: str
    reply: str
    judge: Judge | None  # None: the simulated user
    order: str = ""


def scorings(cases: list[Case], replies: dict[str, dict[str, str]], opts: SensitivityOptions,
             judges: list[Judge]) -> list[Item]:  # fmt: skip
    """Every scorer on every reply, case by case (all of a case's replies, then the next case's): a run stopped
    early holds every kind of the cases it finished, so its table already covers every kind. The run scores
    one case's replies by one scorer in a row (``same_prefix``), so a server slot reads the case once."""
    out: list[Item] = []
    for c in cases:
        for kind in [REAL, *opts.bad]:
            reply = replies[c.id].get(kind)
            if reply is None:
                continue
            if opts.user is not None:
                out.append(Item("score", (c.id, kind, USER), c, kind, reply, None))
            for j in judges:
                if isinstance(j.card.judge_kind(), ReplyKind):
                    out.append(Item("score", (c.id, kind, j.name), c, kind, reply, j))
                elif kind != REAL:
                    out += [Item("pair", (c.id, kind, j.name, o), c, kind, reply, j, o) for o in ("ab", "ba")]
    return out


async def scorer_models(pool: ModelPool, todo: list[Item], user: ModelSpec | None, reward: RewardSettings,
                        judges: list[Judge]) -> tuple[UserReward | None, dict[str, ChatModel]]:  # fmt: skip
    """The simulated user's reward (when ``todo`` has its items; its model only when its agent calls one) and
    the model of each judge that has items left: nothing else is started."""
    scored = None
    if user is not None and any(i.judge is None for i in todo):
        needs = user_agent(reward.user_agent.agent).needs_model
        scored = UserReward(await pool.get(user, "user") if needs else None, reward)
    needed = {i.judge.name for i in todo if i.judge is not None}
    return scored, await judge_models(pool, [j for j in judges if j.name in needed])


def same_prefix(item: Item) -> tuple[str, str]:
    """The items whose prompts share the case's long prefix: one case, one scorer."""
    return item.case.id, item.judge.name if item.judge is not None else USER


def work_of(item: Item, reward: UserReward | None, models: dict[str, ChatModel], seed: int) -> Work:
    s = case_seed(seed, item.case.id)
    if item.judge is None:
        assert reward is not None
        return _user_work(reward, item.case, item.reply_kind, item.reply, s)
    m = models[item.judge.name]
    if item.store_kind == "score":
        return _card_work(item.judge, m, item.case, item.reply_kind, item.reply, s)
    return _pair_work(item.judge, m, item.case, item.reply_kind, item.reply, item.order, s)


def store_cases(store: RunStore, cases: list[Case], pool: Pool, bad: list[str]) -> dict[str, dict[str, str]]:
    """Each case and its replies, made once and kept: a resumed run reads them back."""
    out = {}
    for c in cases:
        have = store.get("case", (c.id,))
        if have is None:
            replies = {REAL: c.real, **bad_replies(c, pool, bad)}
            have = {**c.to_dict(), "replies": replies, "suite": suite_version(), "status": "ok"}
            store.put("case", (c.id,), have, attempt="", events=[])
        out[c.id] = dict(have["replies"])
    return out


async def run_sensitivity(
    plan: SensitivityPlan | SensitivityOptions, run_dir: Path, *, progress: bool = True,
    cache_path: Path | bool | None = True,
) -> Summary:  # fmt: skip
    """Execute ``plan`` in ``run_dir`` (options are planned here first: the library's callers)."""
    plan = plan if isinstance(plan, SensitivityPlan) else SensitivityPlan.of(plan)
    opts, cases, pool, judges = plan.opts, plan.cases, plan.pool, plan.judges
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, judges)
        replies = store_cases(store, cases, pool, opts.bad)
        done = {k: finished(store, k) for k in ("score", "pair")}
        items = scorings(cases, replies, opts, judges)
        todo = [i for i in items if i.key not in done[i.store_kind]]
        started, before = time.perf_counter(), float(store.meta().get("wall_s", "0"))
        if todo:  # nothing left: no server is started
            async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as models_:
                reward, models = await scorer_models(models_, todo, opts.user, opts.reward, judges)
                bar = progress_bar(len(items), len(items) - len(todo), "sensitivity", enabled=progress, unit="score")

                async def one(item: Item) -> None:
                    await unit(store, item.store_kind, item.key, work_of(item, reward, models, opts.seed))
                    store.set_meta("wall_s", f"{before + time.perf_counter() - started:.1f}")
                    bar.update(1)

                try:
                    await in_groups(todo, same_prefix, one, opts.concurrency)
                finally:
                    bar.close()
                    # stopped or not: the finished cases' figures (a resumed run writes them anew)
                    record(store, sensitivity_table, ALL)
        else:
            record(store, sensitivity_table, ALL)
        store.set_meta("status", "complete")
        errors = sum(1 for k in ("score", "pair") for _, d in store.items(k) if d.get("status") == "error")
        return Summary("score", len(items), len(todo), errors, lead=f"{len(cases)} cases, ")
    finally:
        store.close()
