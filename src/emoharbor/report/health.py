"""A run's health: how conversations ended, what went unscored, whether the simulated user's inner state
agrees with itself, retries, errors, tokens and cost per role."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..assess.evidence import assessment_evidence
from ..run_view import RunView
from ..simulate.coherence import total_coherence
from ..tables import num
from .html import esc, note, section, table
from .timings import timings_html


def termination_table(view: RunView) -> str:
    sups = sorted({c.supporter for c in view.conversations})
    reasons = sorted({c.termination for c in view.conversations})
    counts = Counter((c.supporter, c.termination) for c in view.conversations)
    rows = [[esc(s), *[str(counts[(s, r)]) for r in reasons], str(sum(counts[(s, r)] for r in reasons))] for s in sups]
    return table(["supporter", *[esc(r) for r in reasons], "total"], rows)


def scoring_table(view: RunView) -> str:
    rows = []
    for judge in view.judges:
        for sup in sorted({c.supporter for c in view.conversations}):
            mine = [c for c in view.conversations if c.supporter == sup and c.termination != "error"]
            recs = [view.assessments.get(c.id, {}).get(judge) for c in mine]
            scored = sum(1 for a in recs if a is not None and a.scored)
            unscored = sum(1 for a in recs if a is not None and not a.scored)
            retried = sum(1 for a in recs if a is not None and a.attempts > 1)
            evidence: Counter[str] = Counter()
            for c, a in zip(mine, recs, strict=True):
                evidence += assessment_evidence(a, c)
            rows.append([esc(judge), esc(sup), str(len(mine)), str(scored), str(unscored),
                         str(len(mine) - scored - unscored), str(retried),
                         f"{evidence['quoted']} / {evidence['not_a_quote']} / {evidence['placeholder']}"])  # fmt: skip
    if not rows:
        return note("no assessments in this run")
    header = ["judge", "supporter", "conversations", "scored", "unscored", "not assessed", "needed a re-ask",
              "evidence: quoted / not a quote / placeholder"]  # fmt: skip
    return table(header, rows) + note(
        "Evidence per dimension score: quoted (four words in a row from a supporter message), not a quote "
        '(a paraphrase or a note of what was missing), placeholder ("..." or empty).'
    )


def coherence_table(view: RunView) -> str:
    sups = sorted({c.supporter for c in view.conversations})
    counts = {s: total_coherence(c for c in view.conversations if c.supporter == s) for s in sups}
    if not any(k.checked for k in counts.values()):
        return note("no inner state to check (no supporter turn with a good or poor fit and a parsed feeling)")
    rows = [[esc(s), f"{k.incoherent} / {k.checked}", num(k.rate)] for s, k in counts.items()]
    header = ["supporter", "inner state coherence: incoherent turns / turns checked", "share incoherent"]
    return table(header, rows) + note(
        "A turn is incoherent when the simulated user's appraisal and its emotion intensity disagree: a good "
        "fit after which intensity rose, or a poor fit after which it fell. Checked: turns with a good or poor "
        "fit and a parsed feeling."
    )


def usage_table(view: RunView) -> str:
    if not view.usage_by_role:
        return note("no model calls recorded")
    rows = [
        [esc(role), str(int(u["calls"])), str(int(u["cached"])), str(int(u.get("superseded", 0))),
         *[str(int(u[k])) for k in ("retries", "errors", "prompt_tokens", "completion_tokens")],
         f"{u['cost_usd']:.4f}", str(int(u.get("cached_prompt_tokens", 0.0) + u.get("cached_completion_tokens", 0.0))),
         f"{u.get('cached_cost_usd', 0.0):.4f}", f"{u['latency_s']:.0f}"]
        for role, u in view.usage_by_role.items()
    ]  # fmt: skip
    header = ["role", "calls", "from cache", "of redone units", "retries", "errors", "prompt tokens spent",
              "completion tokens spent", "cost USD spent", "tokens from cache", "cost USD saved by the cache",
              "model time s"]  # fmt: skip
    return table(header, rows)


def events_table(view: RunView) -> str:
    if not view.events:
        return note("no events recorded")
    out = table(["event", "count"], [[esc(k), str(v)] for k, v in sorted(view.events.items())])
    written = view.events.get("readout_written", 0)
    if written:
        out += note(f"{written} reactions of the simulated user kept its written values (fit, steps): the backend "
                    "gave no token log-probabilities, so no probability-weighted readout was made")  # fmt: skip
    return out


def sensitivity_line(view: RunView) -> str:
    """The simulated user's measured sensitivity (``emoharbor sensitivity``, recorded in the cache folder) for
    the run's user model and prompts, or a note that it has not been measured; "" for a run whose simulated
    user read no reactions (the simple user, a validate run without a judge of the form user)."""
    from ..measurements import lookup, not_measured

    if not view.user_model:
        return ""
    rec = lookup(view.user_model, view.user_prompts)
    if rec is None:
        text = not_measured(view.user_model)
        head, _, cmd = text.partition(": `")
        return f'<p class="note sensitivity">{esc(head)}: <code>{esc(cmd.rstrip("`"))}</code></p>'
    return f'<p class="sensitivity" title="{esc(rec.get("run", ""))}">{esc(rec["line"])}.</p>'


def agreement_lines(view: RunView) -> str:
    """The simulated user's measured agreement with people (``emoharbor seekers``, and any suite that records
    its figures the same way) for the run's user model and prompts, one line a suite; "" where none is
    recorded."""
    from ..measurements import quoted

    return "".join(f'<p class="agreement {esc(suite)}" title="{esc(rec.get("run", ""))}">{esc(rec["line"])}.</p>'
                   for suite, rec in quoted(view.user_model, view.user_prompts, view.user_settings))  # fmt: skip


def units_health(view: RunView) -> str:
    """The health of a run of scored units without conversations (sensitivity, seekers): its status, the
    tokens, cost, retries and errors per role, the events."""
    health = f"<p>Run status: <b>{esc(view.meta.get('status', '?'))}</b>.</p>"
    health += "<h4>Tokens, cost, retries and errors per role</h4>" + usage_table(view)
    return health + "<h4>Events (parse failures, retries, ...)</h4>" + events_table(view)


def units_section(view: RunView, rid: str, title: str, table_html: Callable[[Any, str], str], kind: str) -> str:
    """The section of a run of scored units: its table (``table_html(view.data, rid)``) under ``title``, then
    its health; a note where the run's ``kind`` ("sensitivity") could not be read."""
    if view.data is None:
        return note(f"This {kind} run could not be read.")
    return section(title, table_html(view.data, rid), level=3) + section("Run health", units_health(view), level=3)


def health_html(view: RunView) -> str:
    status, config_hash = esc(view.meta.get("status", "?")), esc(view.meta.get("config_hash", ""))
    parts = [f"<p>Run status: <b>{status}</b>; config hash <code>{config_hash}</code>.</p>"]
    history = json.loads(view.meta.get("history", "[]"))
    if history:  # resumed with settings that change no output
        when = [f"<li>{esc(_when(h['at']))}: {esc(', '.join(h['changed']))}</li>" for h in history]
        parts.append(f"<p>Resumed with other settings (they change no output):</p><ul>{''.join(when)}</ul>")
    parts += [
        sensitivity_line(view) + agreement_lines(view),
        "<h3>How conversations ended</h3>",
        termination_table(view),
        "<h3>Scoring</h3>",
        scoring_table(view),
        "<h3>Inner state coherence</h3>",
        coherence_table(view),
        "<h3>Tokens, cost, retries and errors per role</h3>",
        usage_table(view),
        "<h3>Where the model's time went (the server's timings)</h3>",
        timings_html(view.timings_by_step),
        "<h3>Events (parse failures, repetitions, retries, ...)</h3>",
        events_table(view),
    ]
    errors = [c for c in view.conversations if c.termination == "error"]
    if errors:
        items = "".join(f"<li><code>{esc(c.id)}</code>: {esc(c.error[:300])}</li>" for c in errors)
        parts.append(f"<h3>Conversations that ended in error ({len(errors)})</h3><ul>{items}</ul>")
    return "".join(parts)


def _when(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
