"""Where the model's time went, per role and prompt file, as the server reported it (llama.cpp's ``timings``
on the embedded model): prompt tokens read afresh against those reused from its KV cache, tokens generated,
and the seconds of each. One table for the text a command prints at its end and for the HTML report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..tables import text_table
from .html import esc, note, table

HEADER = ["role: prompt", "calls", "prompt tokens", "evaluated", "reused", "reused %", "prompt s",
          "generated tokens", "generation s", "call s (slot wait incl.)"]  # fmt: skip
SUMS = ("calls", "prompt_tokens", "prompt_evaluated", "prompt_reused", "prompt_s", "completion_tokens",
        "generated_s", "latency_s")  # fmt: skip


def by_step(calls: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per role and prompt file ("user: user_appraise"), the sums of ``SUMS`` over the calls whose server
    reported its timings (rows as ``RunStore.calls`` or ``store.run_store.call_row`` give them). Calls served
    from the cache have none; calls of superseded attempts count: their time was spent."""
    out: dict[str, dict[str, float]] = {}
    for c in calls:
        if c.get("prompt_ms") is None:
            continue
        name = f"{c['role']}: {c['prompt']}" if c.get("prompt") else str(c["role"])
        u = out.setdefault(name, dict.fromkeys(SUMS, 0.0))
        parts = {"calls": 1, "prompt_tokens": c["prompt_tokens"], "prompt_evaluated": c["prompt_evaluated"],
                 "prompt_reused": c["prompt_reused"], "prompt_s": c["prompt_ms"] / 1000,
                 "completion_tokens": c["completion_tokens"], "generated_s": (c["generated_ms"] or 0) / 1000,
                 "latency_s": c["latency_s"]}  # fmt: skip
        for key, value in parts.items():
            u[key] += float(value or 0)
    return dict(sorted(out.items()))


def timing_rows(steps: dict[str, dict[str, float]]) -> list[list[Any]]:
    """A row per role and prompt file and a total, from ``by_step``; [] when no call was timed."""
    if not steps:
        return []
    total = {k: sum(u[k] for u in steps.values()) for k in SUMS}

    def row(name: str, u: dict[str, float]) -> list[Any]:
        seen = u["prompt_evaluated"] + u["prompt_reused"]
        share = f"{100 * u['prompt_reused'] / seen:.0f}" if seen else "n/a"
        return [name, int(u["calls"]), int(u["prompt_tokens"]), int(u["prompt_evaluated"]), int(u["prompt_reused"]),
                share, f"{u['prompt_s']:.0f}", int(u["completion_tokens"]), f"{u['generated_s']:.0f}",
                f"{u['latency_s']:.0f}"]  # fmt: skip

    return [*(row(r, u) for r, u in steps.items()), row("all", total)]


def timings_text(steps: dict[str, dict[str, float]]) -> str:
    """The table as aligned text with a line on how to read it; "" when no call was timed."""
    rows = timing_rows(steps)
    if not rows:
        return ""
    return (
        "Where the model's time went (the server's own timings; calls served from the cache excluded):\n"
        + text_table(HEADER, rows)
        + "\nevaluated: prompt tokens read afresh; reused: read from the server's KV cache (a prefix it had "
        "seen). Calls overlap on the server's slots, so their seconds add up to more than the wall time."
    )


def timings_html(steps: dict[str, dict[str, float]]) -> str:
    rows = timing_rows(steps)
    if not rows:
        return note("no call reported the server's timings (only the embedded llama.cpp server does)")
    return table(HEADER, [[esc(str(c)) for c in r] for r in rows])
