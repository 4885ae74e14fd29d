"""The kinds of run, in one table: a kind is one object (a ``RunKind``) that says what the kind is called and
does everything the commands that read or make any run ask of it. A new kind of run is its own module and
one line in ``kind_table.BUILT_IN`` (or one ``register`` call): see docs/extending.md.

What a kind does (a part it leaves as the base class has it, it has not: ``has``):
- ``board(store, fmt, ...) -> (text, data)``: ``emoharbor leaderboard``, ``report --format`` and the table a
  run command prints at its end;
- ``view(store, view, seed)``: fills the report's ``RunView`` (its common fields, and ``view.data``: what the
  kind's own section reads); ``html(view, rid, seed) -> str``: its section of ``emoharbor report``;
  ``side_by_side(view) -> rows of cells``: its rows of the report's "runs side by side" table (several runs;
  ``report.build.COMPARED``: supporter, conversations, overall, generic, personal, gap, intensity change;
  without it, a row of dashes);
- ``judges(store, folder, rows)``: adds its judges to the rows of ``emoharbor judges`` (one per judge and
  scoring: each one's judgments and cost, ``report.judges_table.add``, and its own figures),
  ``judge_columns()`` the columns those figures fill (header, the cell of a row) and ``judges_note`` the line
  printed under the table about them;
- ``export(store) -> {name: rows}``: more tables for ``emoharbor export``;
- ``rejudge(run_dir, cards, judge_model, *, scoring, progress) -> int``: ``emoharbor assess`` (more judges);
- ``tidy(store) -> rows``: the run's tidy table of results (``emoharbor.load_results``, ``export``);
- ``check(plan, new=...)`` and ``execute(plan, folder, progress=...) -> Summary``: a command that makes a run
  of the kind, through ``commands.runs.run_kind`` (preflight, the run, its summary line, its board, the exit
  status when every unit ended in error).

This module imports no kind of run and names none: ``TABLE`` holds each kind as a ``module:Class`` path (the
built-in ones put there by ``kind_table``), imported the first time the kind is asked for. A kind of one's own
is named ``module:NAME`` after the module that registers it, and its runs store that name: a command reading
one in another process imports the module (``register``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import ConfigError, WrongKind
from .registry import add, import_owner

if TYPE_CHECKING:
    from collections.abc import Callable

    from .run_view import RunView
    from .store.run_store import RunStore

Rows = list[dict[str, Any]]
JudgeRows = dict[tuple[str, str], dict[str, Any]]  # (judge, scoring) -> its row of ``emoharbor judges``


@dataclass(frozen=True)
class Summary:
    """What a run command did: ``units`` of its kind (``unit``: "conversation"), ``done_now`` of them by this
    command, ``errors`` ended in error (the next run of the command does them again); ``lead`` opens the line
    ("3 cases, ")."""

    unit: str
    units: int
    done_now: int
    errors: int
    lead: str = ""

    def line(self, wall_s: float) -> str:
        return (
            f"{self.lead}{self.units} {self.unit}s ({self.done_now} new, {self.units - self.done_now} already done, "
            f"{self.errors} ended in error) in {wall_s:.0f} s"
        )

    @property
    def all_failed(self) -> bool:
        return self.units > 0 and self.errors == self.units


class RunKind:
    """One kind of run. A subclass sets ``name`` (as stored in the run's meta) and ``title`` (in messages:
    "holds <title>, not ...") and overrides the parts it has; the base class's parts say it has none."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    judges_note: ClassVar[str] = ""  # printed under ``emoharbor judges``: how to read its columns

    def board(self, store: RunStore, fmt: str, *, judge: str | None = None, scoring: str = "argmax",
              baseline: str | None = None, seed: int = 0) -> tuple[str, Any]:  # fmt: skip
        raise NotImplementedError

    def view(self, store: RunStore, view: RunView, seed: int) -> None:
        raise NotImplementedError

    def html(self, view: RunView, rid: str, seed: int) -> str:
        raise NotImplementedError

    def side_by_side(self, view: RunView) -> list[list[Any]]:
        raise NotImplementedError

    def judges(self, store: RunStore, folder: Path, rows: JudgeRows) -> None:
        raise NotImplementedError

    def judge_columns(self) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
        return []

    def export(self, store: RunStore) -> dict[str, Rows]:
        raise NotImplementedError

    async def rejudge(self, run_dir: Path, cards: list[str], judge: Any, *, scoring: str | None = None,
                      progress: bool = True) -> int:  # fmt: skip
        raise NotImplementedError

    def tidy(self, store: RunStore) -> Rows:
        raise NotImplementedError

    def check(self, plan: Any, *, new: bool) -> None:
        """The checks made before a run folder is written, with one meaning in every kind: the plan's own (its
        files were read when it was made; its size), then every model the run names is built (its files,
        packages and key are there), the folder new or not, so that a bad spec is named on a resume too; the
        endpoints are reached only for a new run (``new``: the folder holds no run yet; a resumed one may have
        nothing left to ask). The models' part is ``preflight.check_run_models``."""
        raise NotImplementedError

    async def execute(self, plan: Any, folder: Path, *, progress: bool = True) -> Summary:
        raise NotImplementedError


PARTS = ("board", "view", "html", "side_by_side", "judges", "export", "rejudge", "tidy", "check", "execute")

# each kind's name -> the kind, or where its class is (``module:Class``; see above)
TABLE: dict[str, str | RunKind] = {}


def register(kind: RunKind) -> None:
    """Add a kind defined outside emoharbor (a user's own module) to the table. Its name is ``module:NAME``,
    the importable module that defines it and a word (``mypkg.kinds:echo``): its runs store that name, so a
    command reading one in another process (``report``, ``export``, ``judges``) imports that module, which
    registers the kind as it loads. A name of another form is refused; the same module registering again (a
    reload) replaces its own entry."""
    module = type(kind).__module__
    word = kind.name.partition(":")[2]
    if kind.name != f"{module}:{word}" or not word or module == "__main__":
        raise ConfigError(f"run kind {kind.name!r} of module {module}: a kind of your own is named MODULE:NAME, "
                          "MODULE the importable module that defines it (not the script run), so that a command "
                          "reading its runs imports it")  # fmt: skip
    add(TABLE, kind.name, kind, module=module, what="run kind")


def get(name: str) -> RunKind | None:
    """The kind called ``name``; None for a name the table does not hold. A kind of one's own (``module:NAME``)
    not in the table yet is looked for by importing its module (a module that will not import is an error)."""
    if name not in TABLE and ":" in name:
        import_owner(name, "run kind")
    entry = TABLE.get(name)
    if entry is None or isinstance(entry, RunKind):
        return entry
    module, _, cls = entry.partition(":")
    made: RunKind = getattr(importlib.import_module(module), cls)()
    TABLE[name] = made
    return made


def of(name: str) -> RunKind:
    """The kind called ``name``, which the caller knows is in the table."""
    found = get(name)
    if found is None:
        raise KeyError(name)
    return found


def title(name: str) -> str:
    """The kind's title, for messages (also about a kind whose module will not import: by its name)."""
    try:
        found = get(name)
    except ConfigError:
        found = None
    return found.title if found is not None else f"a '{name}' run"


def has(name: str, part: str) -> bool:
    """Whether the kind ``name`` has ``part`` (one of ``PARTS``): its class overrides the base's."""
    found = get(name)
    return found is not None and getattr(type(found), part) is not getattr(RunKind, part)


def with_part(part: str) -> list[str]:
    """The kinds that have ``part``: those a command reading it accepts (in the table's order)."""
    return [name for name in list(TABLE) if has(name, part)]


def having(name: str, part: str) -> RunKind | None:
    """The kind called ``name`` if it has ``part``; None else (a kind without it, or a name not in the table)."""
    return of(name) if has(name, part) else None


def open_run(folder: Path, part: str) -> tuple[RunStore, RunKind]:
    """The run in ``folder`` and its kind, which must have ``part`` (a plug-in kind's module is imported by the
    name the run stored); a run of a kind without it is refused, naming the kinds that have it."""
    from .store.run_store import RunStore

    store = RunStore.open_existing(folder)
    name = store.meta()["kind"]
    kind = having(name, part)
    if kind is None:
        store.close()
        raise WrongKind(folder, name, tuple(with_part(part)))
    return store, kind
