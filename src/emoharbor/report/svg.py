"""Inline SVG charts: a radar over the 10 dimensions, intensity trajectories with a band, and a scatter."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .html import esc


def _pts(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def radar(
    labels: list[str],
    mean: list[float | None],
    lo: list[float | None],
    hi: list[float | None],
    *,
    colour: str,
    title: str,
    size: int = 300,
    lowest: float = 1.0,
    highest: float = 5.0,
) -> str:
    """One supporter's scores (1-5) on each axis: the mean as a filled polygon, the 95% interval as dashed
    outlines; the rings are the levels 1 to 5 (the centre is 0). A dimension without a score sits at the
    centre and is marked n/a in its label."""
    width = size + 120  # room for the labels left and right
    cx, cy = width / 2, size / 2
    r = size / 2 - 28
    n = len(labels)

    def at(i: int, v: float | None) -> tuple[float, float]:
        frac = 0.0 if v is None else min(max(v, lowest), highest) / highest
        ang = -math.pi / 2 + 2 * math.pi * i / n
        return cx + r * frac * math.cos(ang), cy + r * frac * math.sin(ang)

    parts = [
        f'<svg class="chart radar" role="img" viewBox="0 0 {width} {size}" width="{width}" height="{size}">',
        f"<title>{esc(title)}</title>",
    ]
    for level in range(int(lowest), int(highest) + 1):
        ring = [at(i, float(level)) for i in range(n)]
        parts.append(f'<polygon class="grid" points="{_pts(ring)}"/>')
    for i, lab in enumerate(labels):
        x, y = at(i, highest)
        parts.append(f'<line class="axis" x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}"/>')
        lx, ly = cx + (r + 10) * (x - cx) / r, cy + (r + 10) * (y - cy) / r
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        text = lab + (" (n/a)" if mean[i] is None else "")
        parts.append(f'<text class="label" x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor}">{esc(text)}</text>')
    for bound in (lo, hi):
        if any(v is not None for v in bound):
            parts.append(
                f'<polygon class="ci" stroke="{colour}" points="{_pts([at(i, v) for i, v in enumerate(bound)])}"/>'
            )
    parts.append(
        f'<polygon class="mean" fill="{colour}" stroke="{colour}" '
        f'points="{_pts([at(i, v) for i, v in enumerate(mean)])}"/>'
    )
    for i, v in enumerate(mean):
        if v is not None:
            x, y = at(i, v)
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{esc(labels[i])}: '
                f"{v:.2f}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


@dataclass
class Series:
    name: str
    colour: str
    mean: list[float | None]  # per turn
    lo: list[float | None] = field(default_factory=list)
    hi: list[float | None] = field(default_factory=list)
    n: list[int] = field(default_factory=list)
    lines: list[tuple[str, list[int]]] = field(default_factory=list)  # (conversation id, intensity per turn)


def trajectories(series: list[Series], *, title: str, width: int = 520, height: int = 260) -> str:
    """Emotion intensity (0-100) per turn: each conversation as a thin line, each series' mean as a thick
    line with its 95% band. The mean at a turn covers the conversations that reached it (n in the tooltip)."""
    left, right, top, bottom = 40, 12, 12, 34
    turns = max([len(s.mean) for s in series] + [len(ln) for s in series for _, ln in s.lines] + [2])
    pw, ph = width - left - right, height - top - bottom

    def xy(t: int, v: float) -> tuple[float, float]:
        return left + pw * t / (turns - 1), top + ph * (1 - v / 100)

    parts = [
        f'<svg class="chart traj" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
        f"<title>{esc(title)}</title>",
    ]
    for v in range(0, 101, 25):
        _, y = xy(0, v)
        parts.append(
            f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v}</text>'
        )
    for t in range(turns):
        x, _ = xy(t, 0)
        parts.append(f'<text class="tick" x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{t}</text>')
    parts.append(
        f'<text class="tick" x="{left + pw / 2}" y="{height - 2}" text-anchor="middle">'
        "supporter messages heard (0 = before the first)</text>"
    )
    for s in series:
        band = [
            (t, lo, hi) for t, (lo, hi) in enumerate(zip(s.lo, s.hi, strict=False)) if lo is not None and hi is not None
        ]
        if len(band) >= 2:
            upper = [xy(t, hi) for t, _, hi in band]
            lower = [xy(t, lo) for t, lo, _ in reversed(band)]
            parts.append(f'<polygon class="band" fill="{s.colour}" points="{_pts(upper + lower)}"/>')
        for conv_id, line in s.lines:
            if len(line) >= 2:
                drawn = _pts([xy(t, v) for t, v in enumerate(line)])
                tip = f"<title>{esc(conv_id)}</title>"
                parts.append(f'<polyline class="conv" stroke="{s.colour}" points="{drawn}">{tip}</polyline>')
        at_turn = [(t, m) for t, m in enumerate(s.mean) if m is not None]
        if at_turn:
            parts.append(
                f'<polyline class="meanline" stroke="{s.colour}" points="{_pts([xy(t, m) for t, m in at_turn])}"/>'
            )
            for t, m in at_turn:
                x, y = xy(t, m)
                n = s.n[t] if t < len(s.n) else 0
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{s.colour}"><title>{esc(s.name)}, '
                    f"turn {t}: mean {m:.1f} (n={n})</title></circle>"
                )
    return _figure(parts, title, [(s.colour, s.name) for s in series])


def _figure(parts: list[str], title: str, keys: list[tuple[str, str]]) -> str:
    """The chart's SVG parts closed and framed, with the title and a legend of (colour, meaning)."""
    legend = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(k)}</span>' for c, k in keys)
    return f'<figure class="chartbox">{"".join(parts)}</svg><figcaption>{esc(title)} {legend}</figcaption></figure>'


@dataclass
class Point:
    x: float
    y: float
    colour: str
    tip: str


def scatter(
    points: list[Point],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_ticks: list[int],
    y_ticks: list[int],
    keys: list[tuple[str, str]],
    width: int = 360,
    height: int = 260,
) -> str:
    """One dot per point over integer ticks (the axes run half a step past the first and last tick);
    ``keys``: (colour, meaning) for the legend."""
    left, right, top, bottom = 40, 12, 12, 34
    pw, ph = width - left - right, height - top - bottom
    x0, x1, y0, y1 = x_ticks[0] - 0.5, x_ticks[-1] + 0.5, y_ticks[0] - 0.5, y_ticks[-1] + 0.5

    def xy(x: float, y: float) -> tuple[float, float]:
        return left + pw * (x - x0) / (x1 - x0), top + ph * (1 - (y - y0) / (y1 - y0))

    parts = [
        f'<svg class="chart scatter" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
        f"<title>{esc(title)}</title>",
    ]
    for v in y_ticks:
        _, y = xy(x0, v)
        parts.append(
            f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v}</text>'
        )
    for v in x_ticks:
        x, _ = xy(v, y0)
        parts.append(f'<text class="tick" x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{v}</text>')
    parts.append(
        f'<text class="tick" x="{left + pw / 2}" y="{height - 2}" text-anchor="middle">{esc(x_label)}</text>'
        f'<text class="tick" transform="translate(10 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
        f"{esc(y_label)}</text>"
    )
    for p in points:
        x, y = xy(p.x, p.y)
        tip = f"<title>{esc(p.tip)}</title>"
        parts.append(f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{p.colour}">{tip}</circle>')
    return _figure(parts, title, keys)
