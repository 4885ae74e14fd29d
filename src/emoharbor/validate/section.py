"""A validate run's section of ``emoharbor report``: the validation table, each judge's scores against the
seekers' ratings, the simulated intensity, the run's health and the replayed conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..report.health import health_html
from ..report.html import esc, est, heat, note, section, table
from ..report.leaderboard_html import trajectories_html
from ..report.runs import by_conversation
from ..report.svg import Point, jitter, scatter
from ..report.transcripts import transcripts_html
from ..stats.bootstrap import too_small
from ..stats.correlation import spearman
from ..store.record import user_model
from ..tables import num
from .render import all_rows, is_difference, summary_lines
from .replay import SUPPORTER

if TYPE_CHECKING:
    from ..run_view import RunView
    from ..store.run_store import RunStore


def load_view(store: RunStore, view: RunView, seed: int) -> None:
    """The replays as the view's conversations (with their ESConv facts and profiles), their assessments, and
    ``view.data``: the validation table (``table``) and every judge's scores (``scores``)."""
    from ..profiles.schema import Profile
    from ..simulate.conversation import Conversation
    from ..store.records import assessments
    from .analysis import score_rows, validation_table

    records = {k[0]: d for k, d in store.items("replay")}  # by dialog id, the key's one part
    view.conversations = [Conversation.model_validate(d) for d in records.values()]
    view.assessments = by_conversation(assessments(store))
    view.extras = {k: d["esconv"] for k, d in records.items()}
    view.profiles = {d["profile_id"]: Profile.model_validate(d["profile"]) for d in records.values()}
    view.data = {"table": validation_table(store, seed=seed), "scores": score_rows(store)}
    lived = [d["chain_prompts"] for d in records.values() if d.get("perceived") and d.get("chain_prompts")]
    if lived:  # replayed through the chain: the user whose reactions a sensitivity run measures
        view.user_model = user_model(store.config())
        view.user_prompts = dict(lived[0])


def section_html(view: RunView, rid: str, seed: int) -> str:
    assert view.data is not None
    scatters = validation_scatters(view.data["scores"], seed)
    intensity = trajectories_html(view.conversations, [SUPPORTER], seed)
    return "".join([
        section("Agreement with real help-seekers", validation_html(view.data["table"], rid), level=3),
        section("Judge scores against the seekers' ratings", scatters, level=3),
        section("Simulated intensity while hearing the real supporter", intensity, level=3),
        section("Run health", health_html(view), level=3),
        section(f"Replayed conversations ({len(view.conversations)})", transcripts_html(view, rid), level=3),
    ])  # fmt: skip


FAILED, SUCCEEDED = "#c0392b", "#2e86c1"


def _cell(c: dict[str, Any], target: str, difference: bool = False) -> str | tuple[str, str]:
    if c["value"] is None or too_small(c["n"]):
        return est(c, value_key="value")
    centre = 0.5 if target == "not_failed" and not difference else 0.0
    return est(c, value_key="value"), heat(c["value"] - centre, 0.5)


def validation_html(data: dict[str, Any], run_id: str) -> str:
    targets = data["targets"]
    header = ["judge", "score", "scoring", *[esc(data["target_labels"][t]) for t in targets]]
    rows = [
        [
            esc(r["judge"]),
            esc(r["score"]),
            esc(r.get("scoring", "")),
            *[_cell(r["cells"][t], t, is_difference(data, r)) for t in targets],
        ]
        for r in all_rows(data)
    ]
    lines = "".join(f"<li>{esc(x)}</li>" for x in summary_lines(data))
    return (
        '<p class="hint">Spearman rho of each judge score with the seekers\' own ratings, and AUROC for telling '
        "successful from failed conversations (0.5 = chance); paired bootstrap 95% intervals and n per cell. "
        "Green: agrees with the seekers; red: the opposite. Scoring: argmax, the scores the judge wrote; "
        "expected, its probability-weighted scores. The baseline rows need no model (message lengths, turns, "
        "reply similarity, from the turns the judges saw); the best-baseline rows are a judge minus the best "
        "of them on the conversations it scored: a judge whose margin interval does not lie above 0 has not "
        "shown it measures more than message length. The last rows are the user-judge minus the third-party "
        "judge on the same conversations.</p>"
        + table(header, rows, tid=f"{run_id}-validation", cls="validation")
        + f"<ul>{lines}</ul>"
    )


JITTER = 0.15  # points on the 1-5 grid are moved up to this much on each axis, so that equal ones do not hide


def validation_scatters(rows: list[dict[str, Any]], seed: int = 0) -> str:
    """Per judge: its overall score against the seeker's own empathy rating, one dot per conversation,
    coloured by ESConv's failed label, with Spearman's rho in the title. The dots are jittered (a fixed offset
    per conversation, the same in every judge's chart) so that equal ratings do not hide each other."""
    charts = []
    for judge in dict.fromkeys(r["judge"] for r in rows if "judge" in r):
        mine = [
            r
            for r in rows
            if r.get("judge") == judge and r["overall"] is not None and r.get("seeker_empathy") is not None
        ]
        points = []
        for r in mine:
            dx, dy = jitter(r["conversation"], JITTER, seed)
            tip = (f"{r['conversation']}: seeker empathy {r['seeker_empathy']}, relevance {r.get('seeker_relevance')}, "
                   f"{judge} overall {num(r['overall'])}")  # fmt: skip
            points.append(Point(r["seeker_empathy"] + dx, r["overall"] + dy, FAILED if r["failed"] else SUCCEEDED, tip))
        if points:
            rho = spearman([r["overall"] for r in mine], [r["seeker_empathy"] for r in mine])
            charts.append(
                scatter(
                    points,
                    title=f"{judge}: overall score against the seeker's rating, Spearman rho {num(rho)} "
                    f"(n={len(points)})",
                    x_label="the seeker's own empathy rating (1-5)",
                    y_label="judge's overall score (1-5)",
                    x_ticks=[1, 2, 3, 4, 5],
                    y_ticks=[1, 2, 3, 4, 5],
                    keys=[(FAILED, "failed"), (SUCCEEDED, "not failed")],
                    note=f"points are jittered by up to ±{JITTER} on both axes so that equal scores do not hide "
                    "each other; hover a point for its exact values. The interval of rho is in the table above.",
                )
            )
    if not charts:
        return note("no conversation has both a judge's score and the seeker's empathy rating yet")
    return f'<div class="charts">{"".join(charts)}</div>'
