"""``emoharbor seekers``: every reply-level scorer on the reply blocks real help-seekers rated during their
talk (``points.py``), resumably in a run store; the figures are ``analysis.py``'s.

Store tables:
- ``point`` (key: talk, block): the point (its context with the profile drafted from the record, the reply
  block, the rating); no model; written once, read back by the table and the report;
- ``score`` (key: talk, block, scorer): one scorer on one point (``scoring.items``): ``user``, the simulated
  user's reaction and reward (``reward.score.Scored``), or a reply card's assessment. A parse failure is
  stored ``unscored`` (counted, never a score); a failed call ``error`` (done again by the next run).

The run's config covers the points and the simulated user; the judges are recorded per card beside it
(``assess.stage.check_judges``), so the same folder given another ``--judge`` makes only that judge's calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.cards import builtin_names, load_card
from ..assess.stage import Judge, check_judges
from ..data.selection import check_selection, choose
from ..errors import ConfigError, DataError
from ..kinds import Summary
from ..scoring.items import Item
from ..scoring.names import REAL, USER
from ..scoring.options import ScorerOptions
from ..scoring.stage import score
from ..store.record import open_record, run_record
from ..store.run_store import RunStore
from .points import Point, file_points
from .record import record

KIND = "seekers"
DEFINITION = 1  # the version of what a point is (points.py): a change refuses to resume older runs


def reply_cards() -> list[str]:
    """The built-in judge cards that rate one reply: the default judges."""
    return [n for n in builtin_names() if load_card(n).judge_form().rates == "reply"]


@dataclass(kw_only=True)
class SeekersOptions(ScorerOptions):
    files: list[Path] = field(default_factory=list)
    limit: int | None = None  # the first N talks (with a rated point) of each file
    sample: int | None = None  # or N such talks of each file drawn with ``seed``
    varied: bool = False  # only talks whose seeker gave two different ratings or more (each yields pairs)
    judges: list[str] = field(default_factory=reply_cards)

    WANTED = "emoharbor seekers rates one reply: give a card of the form reply (third_party_reply)"

    def __post_init__(self) -> None:
        if not self.files:
            raise ConfigError("seekers needs at least one ESConv file with per-turn ratings")
        check_selection(self.limit, self.sample, "talks")
        self.check_scorers()

    def resolved(self) -> dict[str, Any]:
        """What the points and the user's scores depend on (the judges are recorded per card)."""
        return {
            "files": [str(p.resolve()) for p in self.files],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            **({"varied": True} if self.varied else {}),  # absent when off: older runs' records still match
            "definition": DEFINITION,
            **self.scorers_resolved(),
        }


def load_points(opts: SeekersOptions) -> list[Point]:
    """The chosen talks' points, the files interleaved talk by talk (a run stopped early holds about as many
    talks of each file). With ``varied``, only talks whose ratings differ are chosen from."""
    sources = []
    for path in opts.files:
        talks = file_points(path, initial_trust=opts.reward.user_agent.initial_trust)
        if opts.varied:
            talks = [t for t in talks if len({p.rating for p in t}) > 1]
            if not talks:
                raise DataError(f"{path}: --varied: no talk has two different ratings (no within-talk pair)")
        sources.append((path, talks))
    chosen = choose(sources, opts.limit, opts.sample, opts.seed, lambda t: t[0].talk, "talk")
    return [p for talk in chosen for p in talk]


@dataclass(frozen=True)
class SeekersPlan:
    """What a seekers run is to do, built once: the points (each file read once), the judges (each card loaded
    once) and the run record (the options, the versions of the prompts the simulated user's reactions read,
    the files' hashes). The kind's ``check`` and the run share it."""

    opts: SeekersOptions
    points: list[Point]
    judges: list[Judge]
    record: dict[str, Any]

    @classmethod
    def of(cls, opts: SeekersOptions) -> SeekersPlan:
        """Read the files first (a bad record is named before any card or model), then the cards."""
        points = load_points(opts)
        judges = opts.make_judges()
        return cls(opts, points, judges, run_record(opts.resolved(), opts.reaction_prompts(), opts.files))


def scorings(points: list[Point], opts: SeekersOptions, judges: list[Judge]) -> list[Item]:
    """Every scorer on every point, talk by talk (a stopped run holds whole talks)."""
    out = []
    for p in points:
        if opts.user is not None:
            out.append(Item("score", (*p.key, USER), p.case, REAL, p.reply, None))
        out += [Item("score", (*p.key, j.name), p.case, REAL, p.reply, j) for j in judges]
    return out


def store_points(store: RunStore, points: list[Point]) -> None:
    """Each point kept once: the table and the report read them from the store."""
    have = store.keys("point")
    for p in points:
        if p.key not in have:
            store.put("point", p.key, {**p.to_dict(), "status": "ok"}, attempt="", events=[])


def same_talk(item: Item) -> tuple[str, str]:
    """The units whose prompts share a long prefix: one talk's points (each context extends the one before),
    by one scorer."""
    return item.key[0], item.key[2]


async def run_seekers(plan: SeekersPlan | SeekersOptions, run_dir: Path, *, progress: bool = True,
                      cache_path: Path | bool | None = True) -> Summary:  # fmt: skip
    """Execute ``plan`` in ``run_dir`` (options are planned here first: the library's callers)."""
    plan = plan if isinstance(plan, SeekersPlan) else SeekersPlan.of(plan)
    opts, points = plan.opts, plan.points
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, plan.judges)
        store_points(store, points)
        items = scorings(points, opts, plan.judges)
        try:
            todo = await score(store, items, opts, plan.judges, label="seekers", progress=progress,
                               cache_path=cache_path, group=same_talk)  # fmt: skip
        finally:  # stopped or not: the finished points' figures, quoted by other runs' health
            record(store)
        store.set_meta("status", "complete")
        status = store.field("score", "status")
        errors = sum(1 for i in items if status.get(i.key) == "error")
        talks = len({p.talk for p in points})
        return Summary("score", len(items), todo, errors, lead=f"{len(points)} points in {talks} talks, ")
    finally:
        store.close()
