"""Report sections for runs that are not EmoHarbor evaluations: validate runs, HEART runs, anything else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .html import dict_rows_table, esc, heat, note, table
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


def heart_html(folder: Path) -> str:
    """The HEART ratings table and order consistency, from the heart package's own report data."""
    try:
        from ..heart.pipeline import read_run
        from ..heart.reports import ratings_report

        store, config, _ = read_run(folder)
        try:
            data = ratings_report(store, config, bootstrap=200)
        finally:
            store.close()
    except Exception as e:  # the HEART package is optional to this report: say what went wrong, go on
        return note(
            f"This is a HEART run, but its ratings could not be read ({type(e).__name__}: {e}). "
            f"Use `emoharbor heart report {folder}`."
        )
    parts = [
        '<p class="hint">Bradley-Terry ratings (Elo scale) with 95% intervals; 200 bootstrap resamples here '
        "(the HEART report command uses the run's own setting).</p>"
    ]
    scopes = list(dict.fromkeys((r["judge"], r["subset"], r["variant"]) for r in data["ratings"]))
    for judge, subset, variant in scopes:
        rows = [r for r in data["ratings"] if (r["judge"], r["subset"], r["variant"]) == (judge, subset, variant)]
        dims = list(dict.fromkeys(r["dimension"] for r in rows))
        comps = list(dict.fromkeys(r["competitor"] for r in rows))
        by = {(r["competitor"], r["dimension"]): r for r in rows}
        body = [[esc(c), *[_rating(by.get((c, d))) for d in dims]] for c in comps]
        parts.append(f"<h4>{esc(variant)}: judge {esc(judge)}, histories {esc(subset)}</h4>")
        parts.append(table(["competitor", *[esc(d) for d in dims]], body))
    if not scopes:
        parts.append(note("no pair was scored in both orders, so there is nothing to rate yet"))
    parts.append("<h4>Order consistency</h4>" + dict_rows_table(data.get("order_consistency", [])))
    return "".join(parts)


def _rating(r: dict[str, Any] | None) -> str:
    if r is None or r.get("rating") is None:
        return '<span class="na">-</span>'
    ci = f" <small>[{r['low']:.0f}, {r['high']:.0f}]</small>" if r.get("low") is not None else ""
    return f'<span data-sort="{r["rating"]:.3f}">{r["rating"]:.0f}</span>{ci}'


def not_emoharbor_html(view: RunView) -> str:
    return note(
        f"{view.folder} holds a '{view.kind}' run, not an EmoHarbor run: this report has nothing to show for it."
    )
