"""Agreement statistics on categorical labels: raw agreement, Cohen's kappa, Krippendorff's alpha (nominal)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import permutations


def agreement(pairs: Sequence[tuple[str, str]], *, ignore: str | None = None) -> tuple[float | None, int]:
    """Share of pairs with equal labels, and how many pairs counted; with ``ignore`` (e.g. "tie"),
    pairs where either label is ``ignore`` are left out."""
    used = [(x, y) for x, y in pairs if ignore is None or (x != ignore and y != ignore)]
    if not used:
        return None, 0
    return sum(x == y for x, y in used) / len(used), len(used)


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa for two raters: (p_o - p_e) / (1 - p_e), p_e from each rater's own label shares.
    None when undefined (no pairs, or both raters always use one and the same label)."""
    n = len(pairs)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in pairs) / n
    first = Counter(x for x, _ in pairs)
    second = Counter(y for _, y in pairs)
    p_e = sum(first[c] * second[c] for c in first) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def krippendorff_alpha(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's alpha for nominal labels; each unit is the labels its raters gave (missing
    ratings simply absent). Units with fewer than two labels are not pairable and are left out.

    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k, with the coincidences
    o_ck = sum over units of (number of ordered c-k pairs of distinct raters) / (m_u - 1).
    None when undefined (fewer than two pairable labels, or only one label value in use).
    """
    coincidence: dict[tuple[str, str], float] = defaultdict(float)
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        for x, y in permutations(unit, 2):
            coincidence[(x, y)] += 1.0 / (m - 1)
    totals: dict[str, float] = defaultdict(float)
    for (x, _), v in coincidence.items():
        totals[x] += v
    n = sum(totals.values())
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if n < 2 or expected == 0:
        return None
    observed = sum(v for (x, y), v in coincidence.items() if x != y)
    return 1.0 - (n - 1) * observed / expected
