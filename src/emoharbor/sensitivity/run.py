"""`emoharbor sensitivity`: a behavioural test of every scorer. Each case (a real context and the reply that
followed it) gets rule-made bad replies; every scorer rates the real reply and each bad one, and the suite
counts how often the real one comes out on top (``analysis.py``).

Store tables (one unit each, resumable, calls cached):
- ``case`` (key: the case id): the case, its replies by name (``real`` and each bad reply's maker) and the suite's
  version; no model;
- ``score`` (key ``case|reply|scorer``) and ``pair`` (key ``case|maker|judge|order``): a scorer on one
  reply, or a card that compares two on the real reply against the bad one (``scoring.items``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..assess.judge_forms import Rates, ReplyForm
from ..assess.stage import Judge, check_judges
from ..data.selection import check_selection, in_turn, select
from ..errors import ConfigError
from ..kinds import Summary
from ..scoring.case import Case
from ..scoring.items import Item
from ..scoring.names import REAL, USER
from ..scoring.options import ScorerOptions
from ..scoring.stage import score
from ..store.record import open_record, run_record
from ..store.run_store import RunStore
from .analysis import sensitivity_table
from .bad import MAKERS, bad_replies, suite_version
from .cases import Pool, esconv_cases, heart_cases, run_cases
from .names import ALL
from .record import record  # the user's measured sensitivity, quoted by other runs' health

KIND = "sensitivity"
DEFAULT_JUDGES = ("third_party_reply", "heart_pairwise")


@dataclass(kw_only=True)
class SensitivityOptions(ScorerOptions):
    esconv: list[Path] = field(default_factory=list)
    heart: list[Path] = field(default_factory=list)  # HEART's regular histories
    heart_adversarial: list[Path] = field(default_factory=list)  # and its adversarial ones
    from_run: list[Path] = field(default_factory=list)
    limit: int | None = None  # the first N cases of each source
    sample: int | None = None  # or N cases of each source drawn with ``seed``
    bad: list[str] = field(default_factory=lambda: list(MAKERS))  # the bad replies' makers
    judges: list[str] = field(default_factory=lambda: list(DEFAULT_JUDGES))

    RATES: ClassVar[tuple[Rates, ...]] = ("reply", "pair")
    WANTED: ClassVar[str] = ("the suite rates one reply: give a card of a form that rates one reply "
                             "(third_party_reply) or compares two (heart_pairwise)")  # fmt: skip

    def __post_init__(self) -> None:
        if not (self.esconv or self.heart or self.heart_adversarial or self.from_run):
            raise ConfigError("sensitivity needs cases: give --esconv FILE, --heart FILE or --from-run RUN")
        check_selection(self.limit, self.sample, "cases")
        unknown = [k for k in self.bad if k not in MAKERS]
        if unknown:
            raise ConfigError(f"--bad {', '.join(unknown)}: no such bad-reply maker (the makers: {', '.join(MAKERS)})")
        if not self.bad:
            raise ConfigError("--bad: give at least one bad-reply maker")
        self.check_scorers()

    def resolved(self) -> dict[str, Any]:
        """What the cases and the user's scores depend on (the judges are recorded per card)."""
        return {
            "esconv": [str(p.resolve()) for p in self.esconv],
            "heart": [str(p.resolve()) for p in self.heart],
            # named only when given: the record of a run made before the option is the same
            **(
                {"heart_adversarial": [str(p.resolve()) for p in self.heart_adversarial]}
                if self.heart_adversarial
                else {}
            ),
            "from_run": [str(p.resolve()) for p in self.from_run],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "bad": list(self.bad),
            "suite": suite_version(),
            **self.scorers_resolved(),
        }


def load_cases(opts: SensitivityOptions) -> tuple[list[Case], Pool]:
    """The chosen cases of every source, interleaved (first of each, then second of each...), and the pool
    of real texts the bad replies borrow from (every loaded talk, chosen or not)."""
    pool = Pool()
    t = opts.reward.user_agent.initial_trust
    per_source = [esconv_cases(p, t, pool) for p in opts.esconv]
    per_source += [heart_cases(p, "regular", t, pool) for p in opts.heart]
    per_source += [heart_cases(p, "adversarial", t, pool) for p in opts.heart_adversarial]
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
        files = [*opts.esconv, *opts.heart, *opts.heart_adversarial]
        return cls(opts, cases, pool, judges, run_record(opts.resolved(), opts.reaction_prompts(), files))


def scorings(cases: list[Case], replies: dict[str, dict[str, str]], opts: SensitivityOptions,
             judges: list[Judge]) -> list[Item]:  # fmt: skip
    """Every scorer on every reply, case by case (all of a case's replies, then the next case's): a run stopped
    early holds every reply of the cases it finished, so its table already covers every bad reply. The run scores
    one case's replies by one scorer in a row (``scoring.stage.same_prefix``), so a server slot reads the case once."""
    out: list[Item] = []
    for c in cases:
        for which in [REAL, *opts.bad]:
            reply = replies[c.id].get(which)
            if reply is None:
                continue
            if opts.user is not None:
                out.append(Item("score", (c.id, which, USER), c, which, reply, None))
            for j in judges:
                if isinstance(j.card.judge_form(), ReplyForm):
                    out.append(Item("score", (c.id, which, j.name), c, which, reply, j))
                elif which != REAL:
                    out += [Item("pair", (c.id, which, j.name, o), c, which, reply, j, o) for o in ("ab", "ba")]
    return out


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
    opts, cases = plan.opts, plan.cases
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, plan.judges)
        items = scorings(cases, store_cases(store, cases, plan.pool, opts.bad), opts, plan.judges)
        try:
            todo = await score(store, items, opts, plan.judges, label="sensitivity", progress=progress,
                               cache_path=cache_path)  # fmt: skip
        finally:  # stopped or not: the finished cases' figures (a resumed run writes them anew)
            record(store, sensitivity_table, ALL)
        store.set_meta("status", "complete")
        errors = sum(1 for k in ("score", "pair") for status in store.field(k, "status").values() if status == "error")
        return Summary("score", len(items), todo, errors, lead=f"{len(cases)} cases, ")
    finally:
        store.close()
