"""The whole report: one HTML file with its CSS and script inline, over one or more run folders."""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from .. import __version__, kinds
from ..run_view import RunView
from .html import esc, note, section, table
from .runs import load_run


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


def run_id(i: int, view: RunView) -> str:
    return f"run{i}-" + (re.sub(r"[^a-z0-9]+", "-", view.label.lower()).strip("-") or "run")


COMPARED = ["supporter", "conversations", "overall", "generic", "personal", "gap", "intensity change (end - start)"]


def comparison_table(views: list[RunView]) -> str:
    """Several runs side by side: each run's rows (``RunKind.side_by_side``: every supporter of an EmoHarbor
    run, by the user-judge), a row of dashes for a run without."""
    rows = []
    for v in views:
        kind = kinds.having(v.kind, "side_by_side")
        own = kind.side_by_side(v) if kind is not None else []
        rows += [[esc(v.label), esc(v.kind), *r] for r in own] or [[esc(v.label), esc(v.kind), *["-"] * len(COMPARED)]]
    return table(["run", "kind", *COMPARED], rows, tid="runs-compared")


def run_section(i: int, view: RunView, seed: int) -> tuple[str, str]:
    rid = run_id(i, view)
    kind = kinds.having(view.kind, "html")
    nothing = f"{view.folder} holds a '{view.kind}' run, not an EmoHarbor run: this report has nothing to show for it."
    body = kind.html(view, rid, seed) if kind is not None else note(nothing)
    head = f'<p class="runmeta">folder <code>{esc(view.folder)}</code>, kind <b>{esc(view.kind)}</b></p>'
    return rid, f'<section class="run" id="{rid}"><h2>{esc(view.label)}</h2>{head}{body}</section>'


def build_html(folders: list[Path], *, seed: int = 0, title: str = "") -> str:
    views = [load_run(f, seed=seed) for f in folders]
    sections = [run_section(i, v, seed) for i, v in enumerate(views)]
    nav = "".join(f'<a href="#{rid}">{esc(v.label)}</a>' for (rid, _), v in zip(sections, views, strict=True))
    body = ""
    if len(views) > 1:
        body += section("Runs side by side (user-judge)", comparison_table(views), sid="compare")
    body += "".join(html for _, html in sections)
    return page(title or "emoharbor report: " + ", ".join(v.label for v in views), body, nav=nav)


def page(title: str, body: str, *, nav: str = "") -> str:
    """One self-contained HTML page (the report's styles and scripts inline) around ``body``."""
    return Template(_asset("template.html")).substitute(
        title=esc(title),
        css=_asset("report.css"),
        js=_asset("report.js"),
        nav=nav,
        body=body,
        generated=esc(f"emoharbor {__version__}, {dt.datetime.now().isoformat(timespec='seconds')}"),
    )


def write_report(folders: list[Path], out: Path, **kw: Any) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_html(folders, **kw), encoding="utf-8")
    return out
