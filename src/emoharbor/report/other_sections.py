"""Report sections for runs that are not EmoHarbor evaluations: validate runs and anything else (HEART runs:
``heart_section``)."""

from __future__ import annotations

from typing import Any

from .html import esc, heat, note, table
from .runs import RunView


def _cell(c: dict[str, Any], target: str, difference: bool = False) -> str | tuple[str, str]:
    if c["value"] is None:
        return f'<span class="na" data-sort="">n/a</span> <small>n={c["n"]}</small>'
    ci = f" <small>[{c['lo']:.2f}, {c['hi']:.2f}]</small>" if c["lo"] is not None else ""
    html = f'<span data-sort="{c["value"]:.6f}">{c["value"]:.2f}</span>{ci} <small>n={c["n"]}</small>'
    centre = 0.5 if target == "not_failed" and not difference else 0.0
    return html, heat(c["value"] - centre, 0.5)


def validation_html(data: dict[str, Any], run_id: str) -> str:
    from ..validate.render import summary_lines

    targets = data["targets"]
    header = ["judge", "score", *[esc(data["target_labels"][t]) for t in targets]]
    rows = [
        [esc(r["judge"]), esc(r["score"]), *[_cell(r["cells"][t], t, r in data["differences"]) for t in targets]]
        for r in [*data["rows"], *data["differences"]]
    ]
    lines = "".join(f"<li>{esc(x)}</li>" for x in summary_lines(data))
    return (
        '<p class="hint">Spearman rho of each judge score with the seekers\' own ratings, and AUROC for telling '
        "successful from failed conversations (0.5 = chance); paired bootstrap 95% intervals and n per cell. "
        "Green: agrees with the seekers; red: the opposite. The last rows are the user-judge minus the "
        "third-party judge on the same conversations.</p>"
        + table(header, rows, tid=f"{run_id}-validation", cls="validation")
        + f"<ul>{lines}</ul>"
    )


def not_emoharbor_html(view: RunView) -> str:
    return note(
        f"{view.folder} holds a '{view.kind}' run, not an EmoHarbor run: this report has nothing to show for it."
    )
