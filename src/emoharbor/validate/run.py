"""`emoharbor validate`: replay real ESConv conversations through the simulated user, rate each one by
judge cards (by default the user-judge, the profile-aware judge and the third-party judge), resumably in a
run store.

Store tables: ``replay`` (key: the ESConv record id, ``<file stem>:<index>``; the conversation record plus
``esconv`` (the seeker's survey, the failure label, how many supporter turns were replayed), ``profile``,
``dialog_turns`` (the whole ESConv dialog) and ``perceived`` (whether the simulated user lived through the
replayed turns: only a judge of the form user needs that, so a run without one makes no chain calls)) and
``assessment`` (key ``<record id>|<judge>``, as in an EmoHarbor run, with ``saw``: "replayed" or "all").

The run's config (its hash) covers the replays; the judges are recorded beside it, one card per judge
name, so a finished run can be rated by another card in the same folder: only that judge's calls are made.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.judge_forms import ConversationForm, card_form
from ..assess.stage import Judge, assess_all, check_judges, judge_models, make_judges, unassessed
from ..data.esconv import EsconvDialog, load_esconv
from ..data.selection import check_selection, choose
from ..errors import ConfigError
from ..kinds import Summary
from ..models.base import ChatModel
from ..models.pool import ModelPool, conversations_at_once
from ..models.spec import ModelSpec
from ..profiles.esconv_import import draft_profile
from ..prompts import load_prompt
from ..simulate.agents import (
    UserBlock,
    UserSettings,
    default_user,
    perceiving_user,
    require,
    stored_settings,
    user_settings,
)
from ..simulate.conversation import Conversation, Turn
from ..store.keys import Key
from ..store.record import open_record, read_run, run_record
from ..store.run_store import RunStore, call_sink
from ..store.units import Events, WallTime, Work, ended_in_error, finished, run_stage, stage_todo, unit
from .replay import SUPPORTER, esconv_facts, plan_replay, replay

KIND = "validate"
UNIT = "conversation"  # what its summary counts: the replayed conversations
DEFAULT_JUDGES = ("user", "profile_aware", "third_party")


@dataclass
class ValidateOptions:
    esconv: list[Path]
    limit: int | None = None  # the first N records of each file
    sample: int | None = None  # or N records of each file drawn at random with ``seed``
    seed: int = 0
    user: ModelSpec = field(default_factory=ModelSpec)
    judge: ModelSpec = field(default_factory=ModelSpec)  # the model of the cards that name none
    judges: list[str] = field(default_factory=lambda: list(DEFAULT_JUDGES))  # judge cards
    scoring: str | None = None  # --scoring: overrides every card's
    judge_sees: str | None = None  # --judge-sees: likewise
    max_supporter_turns: int = 4
    concurrency: int = 4
    user_agent: UserBlock = field(default_factory=default_user)  # the simulated user that lives the replays

    def __post_init__(self) -> None:
        try:
            self.user_agent = user_settings(self.user_agent)
        except ValueError as e:
            raise ConfigError(f"user_agent: {e}") from None
        if not self.esconv:
            raise ConfigError("validate needs at least one ESConv file (--esconv PATH)")
        check_selection(self.limit, self.sample, "records")
        if self.max_supporter_turns < 0:
            raise ConfigError("--max-supporter-turns must be 0 (no cap) or more")

    def resolved(self) -> dict[str, Any]:
        """What the replays depend on (the judges are recorded per card: see ``check_judges``)."""
        return {
            "esconv": [str(p.resolve()) for p in self.esconv],
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "user": self.user.model_dump(mode="json"),
            "max_supporter_turns": self.max_supporter_turns,
            # only when it is not the default, so that runs made before the block keep their hash
            **({"user_agent": self.user_agent.model_dump(mode="json")} if self.user_agent != default_user() else {}),
        }

    def make_judges(self) -> list[Judge]:
        return make_judges(
            self.judges, self.judge, self.user, scoring=self.scoring, sees=self.judge_sees, option="--judge"
        )


def load_selection(opts: ValidateOptions) -> list[EsconvDialog]:
    """The chosen records of every file, interleaved (first of each file, then second of each...), so a run
    stopped early holds about as many conversations from each file."""
    sources = [(path, load_esconv(path)) for path in opts.esconv]
    return choose(sources, opts.limit, opts.sample, opts.seed, lambda d: d.id, "record id")


@dataclass(frozen=True)
class ValidatePlan:
    """What a validate run is to do, built once from its options and passed on: the chosen ESConv records (each
    file read once), the judges (each card loaded once), and the run record (the options with the ESConv files'
    hashes; the prompts a replay reads are recorded in each replay, the judges' in their cards). Preflight (the
    kind's ``check``) and the run share it."""

    opts: ValidateOptions
    dialogs: dict[Key, EsconvDialog]  # by its replay's key
    judges: list[Judge]
    record: dict[str, Any]

    @property
    def chain(self) -> bool:
        """Whether the simulated user lives through the replays (a judge of the form user reads what it perceived)."""
        return needs_chain(self.judges)

    @classmethod
    def of(cls, opts: ValidateOptions) -> ValidatePlan:
        """Read the ESConv files first (a bad record is named before any card or model), then the cards."""
        dialogs: dict[Key, EsconvDialog] = {(d.id,): d for d in load_selection(opts)}
        judges = opts.make_judges()
        return cls(opts, dialogs, judges, run_record(opts.resolved(), inputs=opts.esconv))


# What a replay through the simulated user reads (its agent's ``reaction_prompts``). Their versions are kept
# in each replay that went through it (``chain_prompts``), the judges' in their cards, not in the run record:
# a changed judge or Feeler prompt does not block rating a run with other judges, and is never mixed into old
# records.
def chain_versions(settings: UserSettings) -> dict[str, str]:
    return {n: load_prompt(n).version for n in require(settings, "perceives", "a replay").reaction_prompts}


def check_chain_prompts(store: RunStore, settings: UserSettings) -> None:
    """A judge of the form user reads the inner record of a replay: refuse replays made with other chain prompts."""
    now = chain_versions(settings)
    for key, d in store.items("replay"):
        old = d.get("chain_prompts")
        if d.get("perceived") and old is not None and old != now:
            changed = sorted(k for k in now if old.get(k) != now[k])
            raise ConfigError(
                f"{store.folder}: replay {key[0]} was made with other versions of {', '.join(changed)}; a judge of the "
                "form user would read an inner record the current prompts did not make: use a new run folder"
            )


def conversation_seed(seed: int, record_id: str) -> int:
    return seed + zlib.crc32(record_id.encode())


def needs_chain(judges: list[Judge]) -> bool:
    """Whether the simulated user must live through the replayed turns: only a judge of the form user reads that."""
    return any(card_form(j.card, ConversationForm).lived for j in judges)


def whole_dialog(dialog: EsconvDialog) -> list[dict[str, str]]:
    return [
        {"speaker": "user" if t.speaker == "seeker" else "supporter", "text": t.text} for t in dialog.merged_turns()
    ]


def seen_by(conv: Conversation, record: dict[str, Any], judge: Judge) -> tuple[Conversation, dict[str, Any]]:
    """The conversation as ``judge`` sees it (the replayed part, or the whole dialog with the inner record
    of the replayed part), and what the assessment records of that."""
    if judge.card.sees == "replayed":
        turns = conv.turns
    else:
        turns = [*conv.turns, *[Turn.model_validate(t) for t in record["dialog_turns"][len(conv.turns) :]]]
    seen = conv.model_copy(update={"turns": turns})
    return seen, {"saw": judge.card.sees, "supporter_turns_seen": sum(1 for t in turns if t.speaker == "supporter")}


def replay_work(dialog: EsconvDialog, opts: ValidateOptions, user_model: ChatModel | None, chain: bool) -> Work:
    """One conversation replayed: through the simulated user's chain when a judge reads what it perceived,
    else the real turns alone (no model call)."""
    profile = draft_profile(dialog, evaluation_only=True)
    plan = plan_replay(dialog, opts.max_supporter_turns)

    async def work() -> tuple[dict[str, Any], Events]:
        seed = conversation_seed(opts.seed, dialog.id)
        if chain:
            user = perceiving_user(user_model, profile, opts.user_agent, "a replay (a judge of the form user)")
            conv = await replay(user, dialog, profile, plan, seed=seed)
        else:
            conv = Conversation(id=dialog.id, profile_id=profile.id, supporter=SUPPORTER, seed=seed)
            conv.turns = [Turn.model_validate(t) for t in whole_dialog(dialog)[: len(plan.turns)]]
        record = {
            **conv.model_dump(mode="json"),
            "esconv": esconv_facts(dialog, plan),
            "profile": profile.model_dump(mode="json"),
            "dialog_turns": whole_dialog(dialog),
            "perceived": chain,
            **({"chain_prompts": chain_versions(opts.user_agent)} if chain else {}),
        }
        return record, [*conv.events, ("replay", "error" if conv.termination == "error" else "done")]

    return work


async def assess_replay(store: RunStore, dialog: EsconvDialog, record: dict[str, Any], judges: list[Judge],
                        models: dict[str, ChatModel]) -> bool:  # fmt: skip
    """Every judge on one stored replay, each shown what its card sees; False if the replay ended in error."""
    conv = Conversation.model_validate(record)
    if conv.termination == "error":
        return False
    if "dialog_turns" not in record:  # a replay stored before the whole dialog was kept
        record = {**record, "dialog_turns": whole_dialog(dialog)}
    profile = draft_profile(dialog, evaluation_only=True)
    await assess_all(store, (dialog.id,), conv, judges, models, profile, extra=lambda j: seen_by(conv, record, j))
    return True


async def replay_and_assess(store: RunStore, dialog: EsconvDialog, opts: ValidateOptions, user_model: ChatModel,
                            judges: list[Judge], models: dict[str, ChatModel]) -> bool:  # fmt: skip
    """One conversation outside a run's worker pool: replayed (or read back), then rated by every judge."""
    record = await unit(store, "replay", (dialog.id,), replay_work(dialog, opts, user_model, needs_chain(judges)))
    return await assess_replay(store, dialog, record, judges, models)


async def run_validation(
    plan: ValidatePlan | ValidateOptions, run_dir: Path, *, progress: bool = True, cache_path: Path | bool | None = True
) -> Summary:
    """Execute ``plan`` in ``run_dir`` (options are planned here first: the library's callers)."""
    plan = plan if isinstance(plan, ValidatePlan) else ValidatePlan.of(plan)
    opts, dialogs, judges, chain = plan.opts, plan.dialogs, plan.judges, plan.chain
    store = open_record(run_dir, KIND, plan.record)
    try:
        check_judges(store, judges)
        if chain:
            check_chain_prompts(store, opts.user_agent)

        perceived = store.field("replay", "perceived")  # 1, 0, or None for a replay stored before it was kept

        def not_lived(key: Key) -> bool:  # replayed without the chain, now that a judge needs it
            return chain and perceived.get(key) == 0

        more = unassessed(store, judges, "replay")
        had = len(finished(store, "replay") & set(dialogs))  # replays stored before this run
        if not stage_todo(store, "replay", list(dialogs), more, not_lived):  # nothing to do: no server started
            store.set_meta("status", "complete")
            return Summary(UNIT, len(dialogs), 0, ended_in_error(store, "replay", dialogs))
        wall = WallTime(store)  # marked after every conversation: a run killed outright keeps its time too
        async with ModelPool(cache_path=cache_path, sink=call_sink(store)) as pool:
            lives = chain and require(opts.user_agent, "perceives", "a replay (a judge of the form user)").needs_model
            user_model = await pool.get(opts.user, "user") if lives else None
            models = await judge_models(pool, judges)

            async def assess(key: Key, record: dict[str, Any]) -> None:
                await assess_replay(store, dialogs[key], record, judges, models)
                wall.mark()

            units = [(k, replay_work(d, opts, user_model, chain)) for k, d in dialogs.items()]
            workers = conversations_at_once([opts.user, *(j.model for j in judges)], opts.concurrency)
            await run_stage(store, "replay", units, workers=workers, progress=progress,
                            label="conversations", then=assess, more=more, redo_if=not_lived)  # fmt: skip
        wall.mark()
        store.set_meta("status", "complete")
        return Summary(UNIT, len(dialogs), len(dialogs) - had, ended_in_error(store, "replay", dialogs))
    finally:
        store.close()


def options_of(run_dir: Path) -> ValidateOptions:
    """The options a validate run was started with, read back from its folder."""
    store, cfg = read_run(run_dir, KIND)
    store.close()
    user = ModelSpec.model_validate(cfg["user"])
    return ValidateOptions(
        esconv=[Path(p) for p in cfg["esconv"]],
        limit=cfg["limit"],
        sample=cfg["sample"],
        seed=cfg["seed"],
        user=user,
        judge=user,
        max_supporter_turns=cfg["max_supporter_turns"],
        user_agent=stored_settings(cfg),
    )


async def rejudge(
    run_dir: Path, cards: list[str], judge: ModelSpec | None, *, scoring: str | None = None, progress: bool = True
) -> int:
    """Rate a validate run's conversations with more judge cards (its replays are reused); returns how many
    assessments were made now."""
    opts = options_of(run_dir)
    opts.judges, opts.scoring = cards, scoring
    if judge is not None:
        opts.judge = judge
    before = _count_assessments(run_dir)
    await run_validation(opts, run_dir, progress=progress)
    return _count_assessments(run_dir) - before


def _count_assessments(run_dir: Path) -> int:
    store = RunStore.open_existing(run_dir)
    try:
        return len(store.keys("assessment"))
    finally:
        store.close()
