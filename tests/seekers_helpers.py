"""Invented ESConv records with per-turn ratings, in both formats (no text of the corpus): the raw format of
``failed_dev.json`` (``annotation.feedback``) and MultiESC's ``valid_feedback.jsonl`` (``feedback`` on usr
turns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (speaker, text, rating): "seeker" or "supporter"; a rating only on the seeker's turns
Turn = tuple[str, str, int | None]


def raw_record(turns: list[Turn], *, intensity: int = 4) -> dict[str, Any]:
    dialog = []
    for who, text, rating in turns:
        note: dict[str, Any] = {} if who == "seeker" else {"strategy": "Question"}
        if rating is not None:
            note["feedback"] = str(rating)
        dialog.append({"speaker": "seeker" if who == "seeker" else "supporter", "content": text, "annotation": note})
    survey = {"initial_emotion_intensity": str(intensity), "final_emotion_intensity": "2", "empathy": "3",
              "relevance": "3"}  # fmt: skip
    return {"experience_type": "Current Experience", "emotion_type": "anxiety", "problem_type": "job crisis",
            "situation": "I was let go from the bakery where I worked.", "survey_score": {"seeker": survey,
                                                                                      "supporter": {}},
            "dialog": dialog}  # fmt: skip


def multiesc_record(turns: list[Turn], *, intensity: int = 3) -> dict[str, Any]:
    dialog: list[dict[str, Any]] = []
    for who, text, rating in turns:
        if who == "seeker":
            dialog.append({"text": text, "speaker": "usr", "feedback": None if rating is None else str(rating)})
        else:
            dialog.append({"text": text, "speaker": "sys", "strategy": "Question"})
    return {"emotion_type": "sadness", "problem_type": "breakup with partner", "situation": "My partner moved out.",
            "init_intensity": intensity, "final_intensity": 2, "dialog": dialog}  # fmt: skip


def write_raw(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def bakery_talk(k: int, ratings: tuple[int, int, int]) -> list[Turn]:
    """A raw-format talk of three rated blocks (ratings in order); the second block is two messages."""
    a, b, c = ratings
    return [
        ("seeker", f"I was let go from the bakery, day {k}.", None),
        ("supporter", f"That sounds painful, losing the bakery job {k}.", None),
        ("seeker", "It was my whole routine.", a),
        ("supporter", "What did you like most about the bakery mornings?", None),
        ("supporter", "Take your time.", None),
        ("seeker", "The smell of bread and my coworkers.", b),
        ("supporter", "Have you tried applying somewhere else?", None),
        ("seeker", "Not yet.", c),
    ]


def breakup_talk(k: int, ratings: tuple[int, int]) -> list[Turn]:
    """A MultiESC-format talk that the supporter opens (its first block is rated with no context), then a
    block left unrated, then a rated one."""
    a, b = ratings
    return [
        ("supporter", f"Hello , what is on your mind today {k} ?", None),
        ("seeker", "My partner moved out last month .", a),
        ("supporter", "I am sorry , that must hurt .", None),
        ("seeker", "It does , every evening .", None),
        ("supporter", "What do you miss most about your partner in the evenings ?", None),
        ("seeker", "Cooking together .", b),
    ]


def rated_files(folder: Path, talks: int = 3) -> tuple[Path, Path]:
    """A raw file and a MultiESC file of ``talks`` talks each, ratings varied from talk to talk."""
    raw = [raw_record(bakery_talk(k, (1 + k % 3, 5 - k % 2, 2 + k % 4))) for k in range(talks)]
    multi = [multiesc_record(breakup_talk(k, (5 - k % 3, 2 + k % 2))) for k in range(talks)]
    return write_raw(folder / "failed_mine.json", raw), write_lines(folder / "feedback_mine.jsonl", multi)
