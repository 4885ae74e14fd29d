"""The pace of relief: how fast the simulated user's distress falls while it hears a real talk, beside how fast the
real seeker's fell, and the ``intensity_step`` that would make the two meet (a calibration).

Per replayed talk that was replayed whole (no cap) and whose seeker gave an initial and a final intensity:

- people: the seeker's own intensity drop (1-5) on the simulated 0-100 scale, over the talk's supporter turns
  (``profiles.esconv_import.seeker_relief``);
- the simulated user: its intensity fallen per supporter turn heard, at the run's ``intensity_step``;
- the Feeler's step per supporter turn as a share of its bound (``feel_better / intensity_step``, -1..1): what
  the relief would be at any other step, before the 0-100 bounds clip it.

The fitted step is people's mean relief per turn over the Feeler's mean share (a ratio of means), with a
percentile interval from resampling the talks; it is fitted on one file (ESConv train) and checked on another
(valid, or whole talks in ``emoharbor realism``). No fit where the Feeler's mean share is not above 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..profiles.esconv_import import seeker_relief
from ..simulate.agents import stored_settings
from ..stats.bootstrap import MIN_N
from ..stats.clusters import cluster_draws, ratio_rows
from ..stats.correlation import percentile
from ..tables import interval


def _talk(replay: dict[str, Any], step: int) -> tuple[float, float, float] | None:
    """(people's relief a turn, the simulated relief a turn, the Feeler's share a turn) of one replay."""
    facts = replay.get("esconv") or {}
    survey = facts.get("survey") or {}
    if facts.get("truncated") or replay.get("termination") == "error":
        return None
    people = seeker_relief(survey.get("initial_emotion_intensity"), survey.get("final_emotion_intensity"),
                           int(facts.get("supporter_turns_total") or 0))  # fmt: skip
    feels = [((t.get("inner") or {}).get("feeling") or {}) for t in replay["turns"] if t["speaker"] == "supporter"]
    heard = [f["feel_better"] for f in feels if f.get("feel_better") is not None]
    states = replay.get("states") or []
    if people is None or not heard or len(states) < 2:
        return None
    sim = (states[0]["intensity"] - states[-1]["intensity"]) / len(feels)
    return people, sim, float(np.mean(heard)) / step


def _estimate(value: float | None, boots: np.ndarray, n: int, n_boot: int) -> dict[str, Any]:
    if value is None or not np.isfinite(value):
        return {"value": None, "lo": None, "hi": None, "n": n}
    if n < MIN_N:
        return {"value": float(value), "lo": None, "hi": None, "n": n}
    e = percentile(float(value), boots, n, n_boot, 0.95)
    return {"value": e.value, "lo": e.lo, "hi": e.hi, "n": n}


def pace(replays: dict[str, dict[str, Any]], config: dict[str, Any], *, seed: int = 0,
         n_boot: int = 2000) -> dict[str, Any]:  # fmt: skip
    """The pace of relief of a validate run's replays (by dialog id) that the simulated user lived, at the
    ``intensity_step`` of the run's user (its ``config``)."""
    step = int(getattr(stored_settings(config), "intensity_step", 0))
    rows = [r for d in replays.values() if step and d.get("perceived") and (r := _talk(d, step)) is not None]
    out: dict[str, Any] = {"talks": len(rows), "intensity_step": step}
    if not rows:
        return out
    people, sim, share = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    n = len(rows)
    draws = cluster_draws(n, n_boot, seed)
    ones = np.ones(n)
    mean = {name: _estimate(float(v.mean()), ratio_rows(v, ones, draws), n, n_boot)
            for name, v in (("people", people), ("simulated", sim), ("share", share))}  # fmt: skip
    fit = float(people.mean() / share.mean()) if share.mean() > 0 else None
    out.update(mean, fitted_step=_estimate(fit, ratio_rows(people, share, draws), n, n_boot))
    return out


def pace_lines(p: dict[str, Any]) -> list[str]:
    """The pace in words (the validate report's lines); none where no talk was replayed whole with a survey."""
    if not p.get("talks"):
        return []

    def show(e: dict[str, Any], digits: int = 1) -> str:
        return interval(e["value"], e["lo"], e["hi"], digits)

    fit = p["fitted_step"]
    said = (f"the intensity_step that matches them: {show(fit)} (--set user_agent.intensity_step=N)"
            if fit["value"] is not None else "no step matches them: the Feeler's mean step is not relief")  # fmt: skip
    return [f"pace of relief ({p['talks']} talks replayed whole with the seeker's survey): the simulated user "
            f"{show(p['simulated'])} intensity points a supporter turn at intensity_step {p['intensity_step']}, "
            f"the seekers {show(p['people'])}; the Feeler's step {show(p['share'], 2)} of its bound; "
            f"{said}"]  # fmt: skip
