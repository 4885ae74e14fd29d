"""What a HEART run is to do, built once per command and passed on: the config (with ``--set`` applied), the
folder its relative paths are read from, every judge's card (loaded once) and the run record made of them;
for a new run (``heart generate``, ``heart import-rated``) also its histories and every candidate's system
prompt, read once from the user's files. The checks of the files are made here, each file read once, before
any model is built or reached (``HeartKind.check``); the stages read the plan. A plan of a stored run
(``stored``) takes its histories from the store, not from the files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assess.cards import JudgeCard
from ..errors import ConfigError, DataError, EmoharborError, prefixed
from ..models.spec import ModelSpec
from ..store.record import hash_config
from .config import HeartConfig, resolve_path
from .dimensions import load_lexicon
from .histories import History, LoadReport
from .stages.candidates import system_prompt
from .stages.sources import load_histories
from .stages.strategies import load_strategies


def _skips(report: LoadReport) -> str:
    reasons = ", ".join(f"{n} {reason}" for reason, n in report.skipped.most_common()) or "none"
    first = f"; first: {report.notes[0]}" if report.notes else ""
    return f"{report.source}: {report.examined} items, skipped {reasons}{first}"


@dataclass(frozen=True)
class HeartPlan:
    cfg: HeartConfig
    base: Path  # the folder the config's relative paths are read from
    where: str  # the config's file (or the command), as errors name it
    cards: dict[str, JudgeCard]  # judge name -> its card
    histories: list[History] = field(default_factory=list)  # a new run's, read from its sources
    reports: list[LoadReport] = field(default_factory=list)  # what reading each source found
    systems: dict[str, tuple[str, str]] = field(default_factory=dict)  # candidate -> (system prompt, version)

    @property
    def record(self) -> dict[str, Any]:
        """The stored config: as written, with the version of every judge's card."""
        return self.cfg.resolved({name: card.version for name, card in self.cards.items()})

    @property
    def hash(self) -> str:
        return hash_config(self.record)

    def models(self) -> list[tuple[str, ModelSpec]]:
        """Every model of the run, by the field that gives it."""
        cfg = self.cfg
        return [*((f"candidates.{i}", c) for i, c in enumerate(cfg.candidates)),
                *((f"judges.{i}", j) for i, j in enumerate(cfg.judges)), ("labeller", cfg.labeller_spec())]  # fmt: skip

    @classmethod
    def of(cls, cfg: HeartConfig, base: Path, where: str) -> HeartPlan:
        """A new run's plan: its candidates' system prompts, its histories (at least one usable), its strategy
        and lexicon files and its judges' cards, each read once; an error names ``where`` and the field (a file
        of rated replies, the run's one source, names itself, its row and its field)."""
        systems = {}
        for i, spec in enumerate(cfg.candidates):
            with prefixed(f"{where}: field 'candidates.{i}.system_prompt'", ConfigError):
                systems[spec.name] = system_prompt(spec, base)
        try:
            loaded, reports = load_histories(cfg, base)
        except DataError as e:
            raise (e if cfg.rated_source() is not None else DataError(f"{where}: {e}")) from None
        if not loaded:
            raise DataError(f"{where}: no usable history in its sources ({'; '.join(_skips(r) for r in reports)})")
        for name, load in (("strategy_file", load_strategies), ("lexicon_file", load_lexicon)):
            path = getattr(cfg, name)
            if path:
                with prefixed(f"{where}: field '{name}'", DataError):
                    load(resolve_path(base, path))
        return cls(cfg, base, where, cards_of(cfg), loaded, reports, systems)

    @classmethod
    def stored(cls, cfg: HeartConfig, base: Path, where: str, versions: dict[str, str]) -> HeartPlan:
        """A stored run's plan (its histories are in the store): its judges' cards, which must be the versions
        the run started with (``versions``)."""
        cards = cards_of(cfg)
        changed = sorted(name for name, version in versions.items() if name not in cards
                         or cards[name].version != version)  # fmt: skip
        if changed:
            now = [cards[n].version if n in cards else "None" for n in changed]
            raise EmoharborError(
                f"{where}: the card of judge {', '.join(changed)} changed since the run started "
                f"({', '.join(versions[n] for n in changed)} then, {', '.join(now)} now): "
                "put the old card back or start a new run folder"
            )
        return cls(cfg, base, where, cards)


def cards_of(cfg: HeartConfig) -> dict[str, JudgeCard]:
    return {spec.name: spec.judge_card() for spec in cfg.judges}
