"""The browsable transcripts: every turn with the user's inner record beside it, then the assessments with
their evidence quotes. One collapsible block per conversation; a filter box narrows them down."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..assess.dimensions import keys
from ..run_view import RunView
from ..simulate.conversation import Conversation, Turn
from ..store.records import Assessment
from .html import esc, table

MAX_SHOWN = 400  # conversations shown in full; more would make the file heavy


def _list(items: list[Any]) -> str:
    return esc(", ".join(str(x) for x in items)) if items else "-"


def inner_html(turn: Turn) -> str:
    inner = turn.inner or {}
    if not inner or inner.get("opening"):
        return '<div class="inner empty">(opening: no inner record yet)</div>' if inner else ""
    state = inner.get("state") or {}
    appraisal = inner.get("appraisal") or {}
    lines = []
    if state:
        lines.append(f'<div class="thought">"{esc(state.get("thought") or "-")}"</div>')
        lines.append(f"<div>intensity <b>{state.get('intensity')}</b> trust <b>{state.get('trust')}</b></div>")
    if appraisal:
        fit, understood = esc(appraisal.get("fit", "?")), esc(appraisal.get("understood", ""))
        lines.append(f"<div>fit <b>{fit}</b>; understood: {understood}</div>")
        lines.append(f"<div>needs met: {_list(appraisal.get('needs_met', []))}</div>")
        lines.append(f"<div>needs missed: {_list(appraisal.get('needs_missed', []))}</div>")
    elif "appraisal" in inner:
        lines.append('<div class="na">appraisal did not parse</div>')
    if inner.get("decision") and inner.get("decision") != "continue":
        lines.append(f"<div>decision: <b>{esc(inner['decision'])}</b></div>")
    return f'<div class="inner">{"".join(lines)}</div>'


def turns_html(conv: Conversation, user_label: str) -> str:
    rows = []
    for t in conv.turns:
        who = user_label if t.speaker == "user" else "Supporter"
        rows.append(
            f'<div class="turn {t.speaker}"><div class="msg"><b>{esc(who)}</b> {esc(t.text)}</div>{inner_html(t)}</div>'
        )
    return f'<div class="turns">{"".join(rows)}</div>'


def _score_text(a: Assessment, k: str) -> str:
    """The score written, and the probability-weighted one beside it where the card asked for it."""
    ex = (a.expected or {}).get(k)
    return f"{a.scores[k]}" + (f" ({ex:.2f})" if ex is not None else "")


def assessments_html(per_judge: dict[str, Assessment]) -> str:
    if not per_judge:
        return '<p class="note">not assessed</p>'
    judges = sorted(per_judge, key=lambda j: (j != "user", j))
    header = ["dimension", *[esc(j) for j in judges]]
    rows = []
    extra = sorted({k for a in per_judge.values() for k in a.scores} - set(keys()))  # a card's own rubric
    for k in [*keys(), *extra]:
        row = [esc(k)]
        for j in judges:
            a = per_judge[j]
            if not a.scored:
                row.append('<span class="na">unscored</span>')
            elif k not in a.scores:
                row.append('<span class="na">-</span>')
            else:
                row.append(f"<b>{_score_text(a, k)}</b> <q>{esc(a.evidence.get(k, ''))}</q>")
        rows.append(row)
    errs = "".join(
        f'<p class="note">{esc(j)}: unscored after {per_judge[j].attempts} tries: {esc(per_judge[j].error[:300])}</p>'
        for j in judges
        if not per_judge[j].scored
    )
    return table(header, rows, sortable=False, cls="assess") + errs


def overall(a: Assessment | None) -> str:
    if a is None:
        return "not assessed"
    if not a.scored:
        return "unscored"
    return f"{np.mean([v for v in a.scores.values() if v is not None]):.2f}"


def conversation_html(view: RunView, conv: Conversation) -> str:
    per_judge = view.assessments.get(conv.id, {})
    extra = view.extras.get(conv.id)
    facts = ""
    if extra:
        sv = extra.get("survey", {})
        facts = (
            f'<p class="facts">ESConv: {esc(extra.get("problem_type"))}, {esc(extra.get("emotion_type"))}; '
            f"seeker's survey: empathy {sv.get('empathy')}, relevance {sv.get('relevance')}, intensity "
            f"{sv.get('initial_emotion_intensity')} -> {sv.get('final_emotion_intensity')}; "
            f"{'failed' if extra.get('failed') else 'not failed'}; supporter turns replayed "
            f"{extra.get('supporter_turns_replayed')} of {extra.get('supporter_turns_total')}</p>"
        )
    traj = " -> ".join(str(s.intensity) for s in conv.states)
    events = ", ".join(f"{e}" for e, _ in conv.events) or "none"
    summary = (
        f"<code>{esc(conv.id)}</code> <span class='sup'>{esc(conv.supporter)}</span> "
        f"{esc(conv.termination)}, {len(conv.turns)} turns, user-judge overall {overall(per_judge.get('user'))}"
    )
    search = f"{conv.id} {conv.supporter} {conv.profile_id} {conv.termination}".lower()
    return (
        f'<details class="conv" data-search="{esc(search)}"><summary>{summary}</summary>{facts}'
        f"<p>profile <code>{esc(conv.profile_id)}</code>; intensity {esc(traj)}; events: {esc(events)}</p>"
        + turns_html(conv, "Seeker (simulated user's view)" if extra else "User")
        + "<h4>Assessments</h4>"
        + assessments_html(per_judge)
        + "</details>"
    )


def transcripts_html(view: RunView, run_id: str) -> str:
    convs = sorted(view.conversations, key=lambda c: (c.supporter, c.id))
    shown = convs[:MAX_SHOWN]
    more = (
        f'<p class="note">{len(convs) - len(shown)} more not shown (export the run for all)</p>'
        if len(convs) > len(shown)
        else ""
    )
    box = (
        f'<input class="filter" type="search" placeholder="filter by id, supporter, profile, ending" '
        f'data-target="{esc(run_id)}-convs" aria-label="filter conversations">'
    )
    return (
        box + f'<div id="{esc(run_id)}-convs">' + "".join(conversation_html(view, c) for c in shown) + "</div>" + more
    )
