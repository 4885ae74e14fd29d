"""Invented ESConv talks for the realism suite, in both formats (no text of the corpus)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seekers_helpers import Turn, multiesc_record, raw_record, write_lines, write_raw


def job_talk(k: int, last: str = "Thanks, I will try that tomorrow. Bye.") -> list[Turn]:
    """Five seeker turns, the supporter opening: cuts before the seeker's third, fourth and fifth turns; the
    seeker's second turn is two messages (one turn)."""
    return [
        ("supporter", f"Hello, what brings you here tonight {k}?", None),
        ("seeker", "hi", None),
        ("supporter", "How are you feeling?", None),
        ("seeker", "not great honestly.", None),
        ("seeker", f"I lost my job at the warehouse {k} weeks ago.", None),
        ("supporter", "I am sorry. That is a lot to carry.", None),
        ("seeker", "yeah my rent is due and I keep checking my bank app", None),
        ("supporter", "Have you been able to talk to anyone about it?", None),
        ("seeker", "my sister knows but she is far away. I feel like such a failure", None),
        ("supporter", "Losing a job does not make you a failure. Maybe list three places to apply this week?", None),
        ("seeker", last, None),
    ]


def talk_files(folder: Path, talks: int = 3) -> tuple[Path, Path]:
    """``talks`` raw-format talks and as many MultiESC-format ones (three cuts each)."""
    raw = write_raw(folder / "failed_mine.json", [raw_record(job_talk(k)) for k in range(talks)])
    lines = write_lines(folder / "valid_mine.jsonl", [multiesc_record(job_talk(k + 10)) for k in range(talks)])
    return raw, lines


def risky_later(folder: Path) -> Path:
    """A talk whose seeker speaks of suicide only in the last turn: the cuts before it are drafted without it."""
    turns = job_talk(0, last="sometimes I think about suicide")
    return write_raw(folder / "failed_risk.json", [raw_record(turns)])


def record_with(turns: list[Turn], **more: Any) -> dict[str, Any]:
    return {**raw_record(turns), **more}
