"""The validation table as plain text, Markdown, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import Any


def cell_text(c: dict[str, Any]) -> str:
    if c["value"] is None:
        return f"n/a (n={c['n']})"
    if c["lo"] is None:
        return f"{c['value']:.2f} (n={c['n']})"
    return f"{c['value']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}] n={c['n']}"


def table_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["judge", "score", *[data["target_labels"][t] for t in data["targets"]]]
    rows = [
        [r["judge"], r["score"], *[cell_text(r["cells"][t]) for t in data["targets"]]]
        for r in [*data["rows"], *data["differences"]]
    ]
    return header, rows


def _table(header: list[str], rows: list[list[str]], md: bool) -> str:
    if md:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    line = fmt(header)
    return "\n".join([line, "-" * len(line), *[fmt(r) for r in rows]])


def summary_lines(data: dict[str, Any]) -> list[str]:
    c = data["counts"]
    cfg = data["config"]
    cap = cfg.get("max_supporter_turns") or "none"
    lines = [
        f"conversations: {c['conversations']} ({', '.join(f'{k} {v}' for k, v in sorted(c['by_source'].items()))}); "
        f"replay errors {c['replay_errors']}; failed (ESConv label) {c['failed']}",
        f"supporter turns replayed: {c['supporter_turns_replayed']} of {c['supporter_turns_total']} "
        f"(cap {cap} per conversation; {c['truncated']} conversations cut at the cap)",
    ]
    for j, n in c["judges"].items():
        lines.append(f"judge {j}: scored {n['scored']}, unscored {n['unscored']}, not assessed {n['not_assessed']}")
    lines.append(
        f"models: user {cfg['user']['model']}, third-party judge {cfg['judge']['model']}; "
        f"paired bootstrap 95% intervals, {data['n_boot']} resamples, seed {data['seed']}"
    )
    calls = sum(int(u["calls"]) for u in data["usage_by_role"].values())
    tokens = sum(int(u["prompt_tokens"] + u["completion_tokens"]) for u in data["usage_by_role"].values())
    lines.append(
        f"wall time {data.get('wall_s', 0):.0f} s (all sessions of this run); {calls} model calls, {tokens} tokens"
    )
    return lines


def to_text(data: dict[str, Any], md: bool = False) -> str:
    header, rows = table_rows(data)
    head = "## " if md else "# "
    bullet = "- " if md else ""
    parts = [
        f"{head}Agreement with real help-seekers (ESConv survey)",
        _table(header, rows, md),
        "\n".join(bullet + line for line in summary_lines(data)),
    ]
    return "\n\n".join(parts)


def to_csv(data: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["judge", "score", "target", "value", "lo", "hi", "n"])
    for r in [*data["rows"], *data["differences"]]:
        for t in data["targets"]:
            c = r["cells"][t]
            w.writerow([r["judge"], r["score"], t, c["value"], c["lo"], c["hi"], c["n"]])
    return buf.getvalue()


def render_validation(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, default=str)
    if fmt == "csv":
        return to_csv(data)
    return to_text(data, md=(fmt == "md"))
