"""The kinds of run folder, in one table: what each is called, and where its leaderboard, its report section
and its extra export tables come from. A new kind of run plugs in here, and nowhere else.

Hooks are ``module:function`` paths, imported when used, so that reading this table imports nothing heavy:
- ``board(store, fmt, judge, scoring) -> (text, data)``: ``emoharbor leaderboard`` and ``report --format``;
- ``view(store, view, seed)``: fills the report's ``RunView``; ``html(view, rid, seed) -> str``: its section;
- ``export(store) -> {name: rows}``: more tables for ``emoharbor export``;
- ``rejudge(run_dir, cards, judge_model, *, scoring, progress) -> int``: ``emoharbor assess`` (more judges);
- ``tidy(store) -> rows``: the run's tidy table of results (``emoharbor.load_results``, ``export``).

``not_units`` names the kinds of record a run keeps beside its units (written by a stage itself, not by the
stage runner: HEART's histories, a stage's summary), which carry no ``status``; every other record is a unit
and says how it ended.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunKind:
    name: str  # as stored in the run's meta
    title: str  # in messages: "holds <title>, not ..."
    board: str = ""
    view: str = ""
    html: str = ""
    export: str = ""
    rejudge: str = ""
    tidy: str = ""
    not_units: tuple[str, ...] = ()


KINDS = {
    k.name: k
    for k in (
        RunKind("emoharbor", "an EmoHarbor run (emoharbor run)", board="emoharbor.assess.render:board",
                view="emoharbor.report.runs:load_emoharbor", html="emoharbor.report.build:emoharbor_body",
                rejudge="emoharbor.evaluate.run:rejudge", tidy="emoharbor.results:emoharbor_rows"),
        RunKind("validate", "a validate run", board="emoharbor.validate.render:board",
                view="emoharbor.report.runs:load_validate", html="emoharbor.report.build:validate_body",
                export="emoharbor.validate.analysis:export_tables", rejudge="emoharbor.validate.run:rejudge",
                tidy="emoharbor.results:validate_rows"),
        RunKind("heart", "a HEART run", html="emoharbor.report.build:heart_body", tidy="emoharbor.results:heart_rows",
                not_units=("history", "load_report", "stage", "human_judgment", "human_import")),
        RunKind("sensitivity", "a sensitivity run (emoharbor sensitivity)", board="emoharbor.sensitivity.report:board",
                view="emoharbor.sensitivity.report:load", html="emoharbor.sensitivity.report:html",
                export="emoharbor.sensitivity.report:export", tidy="emoharbor.sensitivity.report:tidy"),
        RunKind("heart_strategy_check", "a strategy check (emoharbor heart strategy-check)", not_units=("stage",)),
        RunKind("evolve_refine", "an evolve refine round", not_units=("stage",)),
    )
}  # fmt: skip


def title(kind: str) -> str:
    return KINDS[kind].title if kind in KINDS else f"a '{kind}' run"


def not_units(kind: str) -> frozenset[str]:
    """The kinds of record a run of ``kind`` keeps that are not units (they carry no status)."""
    return frozenset(KINDS[kind].not_units) if kind in KINDS else frozenset()


def hook(kind: str, part: str) -> Any:
    """The function ``part`` ("board", "view", "html", "export", "rejudge", "tidy") of ``kind``; None where it
    has none."""
    path = getattr(KINDS[kind], part) if kind in KINDS else ""
    if not path:
        return None
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def with_part(part: str) -> list[str]:
    """The kinds that have ``part``: those a command reading it accepts."""
    return [k for k, v in KINDS.items() if getattr(v, part)]
