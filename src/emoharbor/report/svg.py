"""Inline SVG charts: estimates with their intervals on one axis (every supporter per dimension; the paired
differences as a forest plot), intensity trajectories with a band, and a scatter."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..stats.bootstrap import TOO_SMALL, too_small
from ..tables import NA, interval, num
from .html import esc


def _pts(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


@dataclass
class Dots:
    """One series of a dot-and-interval chart: per row an estimate ``{"mean", "lo", "hi", "n"}``."""

    name: str
    colour: str
    cells: list[dict[str, Any]]


def intervals(
    labels: list[str],
    series: list[Dots],
    *,
    title: str,
    x_label: str,
    x_ticks: list[float],
    y_label: str = "",
    reference: float | None = None,
    split: int = 0,
    digits: int = 2,
    note: str = "",
    width: int = 560,
    cls: str = "dots",
) -> str:
    """Every series' estimates on one axis: a row per label, in it each series a dot (offset vertically, in the
    series' colour) with its 95% interval as a whisker. Under ``MIN_N`` values the dot alone, labelled "n too
    small"; no estimate: "n/a" at the axis' left end. ``reference``: a vertical line there (0 for differences);
    ``split``: a rule above that row (the group means after the dimensions); ``cls``: the SVG's classes."""
    left, right, top, bottom = 150, 70, 8, 36
    step = 11
    band = max(20, step * len(series) + 8)
    height = top + band * len(labels) + bottom
    pw = width - left - right
    x0, x1 = x_ticks[0], x_ticks[-1]

    def x_of(v: float) -> float:
        return left + pw * (min(max(v, x0), x1) - x0) / (x1 - x0)

    parts = _svg(cls, title, width, height)
    bottom_y = top + band * len(labels)
    for v in x_ticks:
        x = x_of(v)
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom_y}"/>'
            f'<text class="tick" x="{x:.1f}" y="{bottom_y + 14}" text-anchor="middle">{_tick(v, reference)}</text>'
        )
    parts.append(f'<text class="tick" x="{left + pw / 2}" y="{height - 4}" text-anchor="middle">{esc(x_label)}</text>')
    if y_label:
        parts.append(
            f'<text class="tick" transform="translate(12 {top + band * len(labels) / 2}) rotate(-90)" '
            f'text-anchor="middle">{esc(y_label)}</text>'
        )
    if reference is not None:
        x = x_of(reference)
        parts.append(f'<line class="zero" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom_y}"/>')
    if 0 < split < len(labels):
        rule = top + band * split
        parts.append(f'<line class="split" x1="20" y1="{rule}" x2="{left + pw}" y2="{rule}"/>')
    for i, label in enumerate(labels):
        centre = top + band * i + band / 2
        parts.append(f'<text class="label" x="{left - 8}" y="{centre + 4:.1f}" text-anchor="end">{esc(label)}</text>')
        for j, s in enumerate(series):
            y = centre + step * (j - (len(series) - 1) / 2)
            parts += _dot(s, i, label, x_of, y, left, digits)
    return _figure(parts, title, [(s.colour, s.name) for s in series], note)


def _dot(s: Dots, i: int, label: str, x_of: Callable[[float], float], y: float, left: int, digits: int) -> list[str]:
    """One series' estimate in one row: whisker and dot, or the dot and "n too small", or "n/a"."""
    e = s.cells[i] if i < len(s.cells) else {}
    mean = e.get("mean")
    if mean is None:
        return [f'<text class="na" x="{left + 2}" y="{y + 3:.1f}" fill="{s.colour}">{NA}</text>']
    out = []
    small = too_small(e.get("n"))
    lo, hi = e.get("lo"), e.get("hi")
    if not small and lo is not None and hi is not None:
        out.append(
            f'<line class="whisker" stroke="{s.colour}" x1="{x_of(lo):.1f}" y1="{y:.1f}" x2="{x_of(hi):.1f}" '
            f'y2="{y:.1f}"/>'
        )
        shown = interval(mean, lo, hi, digits)
    else:
        shown = num(mean, digits) + (f" ({TOO_SMALL})" if small else "")
    x = x_of(mean)
    tip = f"<title>{esc(s.name)}, {esc(label)}: {shown} n={e.get('n', 0)}</title>"
    out.append(f'<circle class="est" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{s.colour}">{tip}</circle>')
    if small:
        out.append(f'<text class="small-n" x="{x + 7:.1f}" y="{y + 3:.1f}" fill="{s.colour}">{TOO_SMALL}</text>')
    return out


def _tick(v: float, reference: float | None) -> str:
    """A tick's label: ``3``, ``0.5``; signed around a reference at 0 (``-0.5``, ``0``, ``+0.5``)."""
    if reference == 0 and v != 0:
        return f"{v:+g}"
    return f"{v:g}"


def ticks_around_zero(values: list[float | None], most: int = 4) -> list[float]:
    """Symmetric ticks that cover ``values``: at most ``most`` steps of 0.25, 0.5, 1, 2 or 4 on each side of 0,
    at least two."""
    top = max((abs(v) for v in values if v is not None), default=0.0)
    for size in (0.25, 0.5, 1.0, 2.0, 4.0):
        k = max(2, math.ceil(top / size - 1e-9))
        if k <= most:
            break
    return [size * i for i in range(-k, k + 1)]


def forest(labels: list[str], series: list[Dots], *, title: str, split: int = 0, note: str = "") -> str:
    """Paired differences per row (a dot and its 95% interval per series) on one axis around a line at 0."""
    values = [e.get(k) for s in series for e in s.cells for k in ("mean", "lo", "hi")]
    return intervals(
        labels,
        series,
        title=title,
        x_label="difference (supporter minus baseline, same profiles and repeats)",
        y_label="dimension, then the group means",
        x_ticks=ticks_around_zero(values),
        reference=0.0,
        split=split,
        note=note,
        cls="dots forest",
    )


def jitter(key: str, spread: float = 0.15, seed: int = 0) -> tuple[float, float]:
    """A fixed offset in [-spread, spread] on each axis for ``key`` (the same key, the same offset: a chart
    redrawn from the same run looks the same)."""
    rng = random.Random(f"{seed}|{key}")
    return rng.uniform(-spread, spread), rng.uniform(-spread, spread)


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
    turns = max([len(s.mean) for s in series] + [len(ln) for s in series for _, ln in s.lines] + [2])
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM

    def xy(t: int, v: float) -> tuple[float, float]:
        return LEFT + pw * t / (turns - 1), TOP + ph * (1 - v / 100)

    xs, ys = [(xy(t, 0)[0], t) for t in range(turns)], [(xy(0, v)[1], v) for v in range(0, 101, 25)]
    parts = _axes("traj", title, width, height, xs, ys, "supporter messages heard (0 = before the first)")
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


def _svg(cls: str, title: str, width: int, height: int) -> list[str]:
    """The opening of a chart's SVG, with its title (``_figure`` closes it)."""
    view = f'viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
    return [f'<svg class="chart {cls}" role="img" {view}>', f"<title>{esc(title)}</title>"]


LEFT, RIGHT, TOP, BOTTOM = 40, 12, 12, 34  # the margins of the trajectories and the scatter


def _axes(cls: str, title: str, width: int, height: int, xs: list[tuple[float, int]], ys: list[tuple[float, int]],
          x_label: str, y_label: str | None = None) -> list[str]:  # fmt: skip
    """The opening of a chart in those margins: a grid line with its tick per (y, value) of ``ys``, a tick under
    the plot per (x, value) of ``xs``, the x axis' label and (given, even "") the y axis'."""
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    parts = _svg(cls, title, width, height)
    for y, v in ys:
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}"/>'
                     f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v}</text>')  # fmt: skip
    parts += [f'<text class="tick" x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{v}</text>' for x, v in xs]
    parts.append(f'<text class="tick" x="{LEFT + pw / 2}" y="{height - 2}" text-anchor="middle">{esc(x_label)}</text>')
    if y_label is not None:
        parts.append(f'<text class="tick" transform="translate(10 {TOP + ph / 2}) rotate(-90)" text-anchor="middle">'
                     f"{esc(y_label)}</text>")  # fmt: skip
    return parts


def _figure(parts: list[str], title: str, keys: list[tuple[str, str]], note: str = "") -> str:
    """The chart's SVG parts closed and framed, with the title, a legend of (colour, meaning) and a note."""
    legend = "".join(f'<span class="key"><i style="background:{c}"></i>{esc(k)}</span>' for c, k in keys)
    below = f'<br><span class="chartnote">{esc(note)}</span>' if note else ""
    caption = f'<figcaption><b class="charttitle">{esc(title)}</b> {legend}{below}</figcaption>'
    return f'<figure class="chartbox">{"".join(parts)}</svg>{caption}</figure>'


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
    note: str = "",
    width: int = 360,
    height: int = 260,
) -> str:
    """One dot per point over integer ticks (the axes run half a step past the first and last tick);
    ``keys``: (colour, meaning) for the legend; ``note``: a line under it (that the points are jittered)."""
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    x0, x1, y0, y1 = x_ticks[0] - 0.5, x_ticks[-1] + 0.5, y_ticks[0] - 0.5, y_ticks[-1] + 0.5

    def xy(x: float, y: float) -> tuple[float, float]:
        return LEFT + pw * (x - x0) / (x1 - x0), TOP + ph * (1 - (y - y0) / (y1 - y0))

    xs, ys = [(xy(v, y0)[0], v) for v in x_ticks], [(xy(x0, v)[1], v) for v in y_ticks]
    parts = _axes("scatter", title, width, height, xs, ys, x_label, y_label)
    for p in points:
        x, y = xy(p.x, p.y)
        tip = f"<title>{esc(p.tip)}</title>"
        parts.append(f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{p.colour}">{tip}</circle>')
    return _figure(parts, title, keys, note)
