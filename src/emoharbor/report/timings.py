"""Where the model's time went, per role and prompt file, as the server reported it (llama.cpp's ``timings``
on the embedded model): prompt tokens read afresh against those reused from its KV cache, tokens generated,
and the seconds of each. One table for the text a run command prints at its end and for the HTML report."""

from __future__ import annotations

from typing import Any

from ..tables import text_table
from .html import esc, note, table

HEADER = ["role: prompt", "calls", "prompt tokens", "evaluated", "reused", "reused %", "prompt s", "generated tokens",
          "generation s", "call s (slot wait incl.)"]  # fmt: skip


def timing_rows(by_step: dict[str, dict[str, float]]) -> list[list[Any]]:
    """A row per role and prompt file and a total, from ``RunStore.timings_by_step``; [] when no call was timed."""
    if not by_step:
        return []
    total = {k: sum(u[k] for u in by_step.values()) for k in next(iter(by_step.values()))}

    def row(name: str, u: dict[str, float]) -> list[Any]:
        seen = u["prompt_evaluated"] + u["prompt_reused"]
        share = f"{100 * u['prompt_reused'] / seen:.0f}" if seen else "n/a"
        return [name, int(u["calls"]), int(u["prompt_tokens"]), int(u["prompt_evaluated"]), int(u["prompt_reused"]),
                share, f"{u['prompt_s']:.0f}", int(u["completion_tokens"]), f"{u['generated_s']:.0f}",
                f"{u['latency_s']:.0f}"]  # fmt: skip

    return [*(row(r, u) for r, u in by_step.items()), row("all", total)]


def timings_text(by_step: dict[str, dict[str, float]]) -> str:
    """The table as aligned text with a line on how to read it; "" when no call was timed."""
    rows = timing_rows(by_step)
    if not rows:
        return ""
    return (
        "Where the model's time went (the server's own timings; calls served from the cache excluded):\n"
        + text_table(HEADER, rows)
        + "\nevaluated: prompt tokens read afresh; reused: read from the server's KV cache (a prefix it had "
        "seen). Calls overlap on the server's slots, so their seconds add up to more than the wall time."
    )


def timings_html(by_step: dict[str, dict[str, float]]) -> str:
    rows = timing_rows(by_step)
    if not rows:
        return note("no call reported the server's timings (only the embedded llama.cpp server does)")
    return table(HEADER, [[esc(str(c)) for c in r] for r in rows])
