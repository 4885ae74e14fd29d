"""How a set of profiles is spread over each attribute: counts for categorical fields, and for the
numeric ones (Big Five, emotion intensity, age) min / mean / max with a 5-bin histogram over the
field's whole range. ``render_stats`` prints it as plain-text tables."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .schema import Profile

BINS = 5
TRAITS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@dataclass(frozen=True)
class NumericSpread:
    """``bins[i]`` counts values in ``[edges[i], edges[i+1])``; the last bin also holds ``hi``."""

    lo: float
    hi: float
    min: float
    mean: float
    max: float
    bins: tuple[int, ...]

    @property
    def edges(self) -> tuple[float, ...]:
        step = (self.hi - self.lo) / BINS
        return tuple(self.lo + i * step for i in range(BINS + 1))


@dataclass(frozen=True)
class ProfileStats:
    total: int
    numeric: dict[str, NumericSpread]
    categorical: dict[str, dict[str, int]]  # field -> value -> count, most frequent first


def spread(values: Sequence[float], lo: float, hi: float) -> NumericSpread:
    """Min, mean, max and a histogram of ``values`` in ``BINS`` equal bins over ``[lo, hi]``."""
    if not values:
        return NumericSpread(lo, hi, 0.0, 0.0, 0.0, (0,) * BINS)
    bins = [0] * BINS
    width = (hi - lo) / BINS
    for v in values:
        i = math.floor((v - lo) / width + 1e-9)  # the epsilon keeps 0.6 in [0.6, 0.8) despite float error
        bins[min(max(i, 0), BINS - 1)] += 1
    return NumericSpread(lo, hi, min(values), sum(values) / len(values), max(values), tuple(bins))


def _counts(values: Sequence[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def age_group(age: int) -> str:
    for upper, label in ((17, "under 18"), (24, "18-24"), (39, "25-39"), (59, "40-59"), (74, "60-74")):
        if age <= upper:
            return label
    return "75+"


def _trait(name: str) -> Callable[[Profile], float]:
    return lambda p: float(getattr(p.personality, name))


NUMERIC: dict[str, tuple[Callable[[Profile], float], float, float]] = {
    **{t: (_trait(t), 0.0, 1.0) for t in TRAITS},
    "intensity": (lambda p: float(p.emotional_state.intensity), 0.0, 100.0),
    "age": (lambda p: float(p.age), 10.0, 100.0),
}
CATEGORICAL: dict[str, Callable[[Profile], str]] = {
    "age_group": lambda p: age_group(p.age),
    "gender": lambda p: p.gender or "(not given)",
    "problem_type": lambda p: p.situation.problem_type,
    "emotion": lambda p: p.emotional_state.emotion,
    "hidden_need_type": lambda p: p.needs.hidden_need_type,
    "risk_level": lambda p: p.risk_level,
    "disclosure_pace": lambda p: p.disclosure_pace,
    "verbosity": lambda p: p.communication_style.verbosity,
    "directness": lambda p: p.communication_style.directness,
    "formality": lambda p: p.communication_style.formality,
    "humour": lambda p: p.communication_style.humour,
    "evaluation_only": lambda p: str(p.evaluation_only).lower(),
}


def profile_stats(profiles: Sequence[Profile]) -> ProfileStats:
    numeric = {name: spread([get(p) for p in profiles], lo, hi) for name, (get, lo, hi) in NUMERIC.items()}
    categorical = {name: _counts([get(p) for p in profiles]) for name, get in CATEGORICAL.items()}
    return ProfileStats(len(profiles), numeric, categorical)


def _num(x: float, whole: bool) -> str:
    return f"{x:.0f}" if whole else f"{x:.2f}"


def render_stats(stats: ProfileStats) -> str:
    """Plain-text tables: one for the numeric fields, then one small table per categorical field."""
    lines = [f"{stats.total} profiles", ""]
    header = ["field", "min", "mean", "max"] + [f"bin{i + 1}" for i in range(BINS)] + ["bins over"]
    rows = [header]
    for name, s in stats.numeric.items():
        whole = s.hi > 1  # 0-100 and ages print as whole numbers, Big Five with two decimals
        edges = "/".join(_num(e, whole) for e in s.edges)
        rows.append([name, _num(s.min, whole), f"{s.mean:.2f}" if not whole else f"{s.mean:.1f}", _num(s.max, whole),
                     *(str(b) for b in s.bins), edges])  # fmt: skip
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    lines += ["  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])
              for r in rows]  # fmt: skip
    for name, counts in stats.categorical.items():
        lines += ["", f"{name} ({len(counts)} values)"]
        width = max((len(v) for v in counts), default=0)
        lines += [f"  {value.ljust(width)}  {n:>4}" for value, n in counts.items()]
    return "\n".join(lines)
