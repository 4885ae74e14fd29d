"""The whole report: one HTML file with its CSS and script inline, over one or more run folders."""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from .. import __version__, kinds
from .breakdowns import breakdowns_html
from .health import health_html
from .html import esc, est, note, section, table
from .leaderboard_html import dimensions_html, leaderboard_html, trajectories_html
from .other_sections import not_emoharbor_html
from .runs import RunView, load_run
from .transcripts import transcripts_html


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


def run_id(i: int, view: RunView) -> str:
    return f"run{i}-" + (re.sub(r"[^a-z0-9]+", "-", view.label.lower()).strip("-") or "run")


def emoharbor_body(view: RunView, rid: str, seed: int) -> str:
    user_board = view.boards.get("user") or next(iter(view.boards.values()))
    supporters = [r["supporter"] for r in user_board["rows"]]
    parts = [note(n) for n in view.notes]
    parts.append(section("Leaderboard", leaderboard_html(view.boards, rid), level=3))
    parts.append(section("Dimensions: every supporter on one axis", dimensions_html(view.boards), level=3))
    parts.append(section("Emotion intensity", trajectories_html(view.conversations, supporters, seed), level=3))
    parts.append(section("Where personalisation fails: by profile attribute", breakdowns_html(view), level=3))
    parts.append(section("Run health", health_html(view), level=3))
    parts.append(section(f"Transcripts ({len(view.conversations)})", transcripts_html(view, rid), level=3))
    return "".join(parts)


def comparison_table(views: list[RunView]) -> str:
    """Several runs side by side: every supporter of every EmoHarbor run, by the user-judge."""
    rows = []
    for v in views:
        board = v.boards.get("user")
        if v.kind != "emoharbor" or board is None:
            rows.append([esc(v.label), esc(v.kind), "-", "-", "-", "-", "-", "-", "-"])
            continue
        for r in board["rows"]:
            rows.append(
                [
                    esc(v.label),
                    esc(v.kind),
                    esc(r["supporter"]),
                    str(r["conversations"]),
                    est(r["overall"]),
                    est(r["generic"]),
                    est(r["personal"]),
                    est(r["gap"]),
                    est(r["intensity_change"], 1),
                ]
            )
    header = [
        "run",
        "kind",
        "supporter",
        "conversations",
        "overall",
        "generic",
        "personal",
        "gap",
        "intensity change (end - start)",
    ]
    return table(header, rows, tid="runs-compared")


def run_section(i: int, view: RunView, seed: int) -> tuple[str, str]:
    rid = run_id(i, view)
    body = kinds.of(view.kind).html(view, rid, seed) if kinds.has(view.kind, "html") else not_emoharbor_html(view)
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
