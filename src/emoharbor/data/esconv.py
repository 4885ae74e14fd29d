"""ESConv conversations, in either of the two published formats.

- "usr/sys" JSON lines (``train.jsonl``, ``valid.jsonl``): turns have ``text``, ``speaker`` ("usr"|"sys"),
  and ``strategy`` on supporter turns; in MultiESC's release (``valid_feedback.jsonl``) seeker turns also carry
  ``feedback`` (the seeker's 1-5 rating of the supporter's replies before it, null where not asked) and the
  record ``init_intensity`` / ``final_intensity`` instead of ``survey_score``.
- the original raw JSON array (``failed_dev.json``): turns have ``content``, ``speaker``
  ("seeker"|"speaker" for the seeker, "supporter"|"listener" for the supporter) and ``annotation``
  with ``strategy`` or ``feedback``.

The user gives the path; the dataset is research-only and never ships with emoharbor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import userfiles
from ..errors import DataError

Speaker = Literal["seeker", "supporter"]
SPEAKERS: dict[str, Speaker] = {"usr": "seeker", "seeker": "seeker", "speaker": "seeker",
                                 "sys": "supporter", "supporter": "supporter", "listener": "supporter"}  # fmt: skip
SURVEY_FIELDS = ("initial_emotion_intensity", "final_emotion_intensity", "empathy", "relevance")


@dataclass(frozen=True)
class EsconvTurn:
    speaker: Speaker
    text: str
    strategy: str | None = None
    feedback: int | None = None  # the seeker's per-turn rating (raw: annotation.feedback; MultiESC: feedback)


@dataclass
class EsconvDialog:
    id: str  # "<file stem>:<0-based record index>"
    source: str
    index: int
    emotion_type: str
    problem_type: str
    situation: str
    experience_type: str
    survey: dict[str, int | None]  # the seeker's own ratings, 1..5, None where missing
    turns: list[EsconvTurn] = field(default_factory=list)
    from_failed_set: bool = False  # the record was collected as a failed conversation

    def merged_turns(self) -> list[EsconvTurn]:
        """Consecutive turns by the same speaker joined into one (the corpus has a few)."""
        out: list[EsconvTurn] = []
        for t in self.turns:
            if out and out[-1].speaker == t.speaker:
                prev = out[-1]
                out[-1] = EsconvTurn(t.speaker, f"{prev.text} {t.text}", prev.strategy or t.strategy,
                                     t.feedback if t.feedback is not None else prev.feedback)  # fmt: skip
            else:
                out.append(t)
        return out

    @property
    def intensity_drop(self) -> int | None:
        a, b = self.survey.get("initial_emotion_intensity"), self.survey.get("final_emotion_intensity")
        return None if a is None or b is None else a - b

    @property
    def failed(self) -> bool:
        """Whether the record comes from the failed set, or meets ESConv's own failure rule."""
        drop, low = self.intensity_drop, [self.survey.get("empathy"), self.survey.get("relevance")]
        return self.from_failed_set or (drop is not None and drop <= 0) or any(v is not None and v <= 2 for v in low)


def _score(value: Any, where: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        v = int(str(value).strip())
    except ValueError:
        raise DataError(f"{where}: '{value}' is not a rating from 1 to 5") from None
    if not 1 <= v <= 5:
        raise DataError(f"{where}: {v} is not a rating from 1 to 5")
    return v


def record_where(source: str, index: int) -> str:
    """How an error names a record (``index`` 0-based): ``FILE: record N``."""
    return f"{source}: record {index + 1}"


def turn_where(source: str, index: int, turn: int) -> str:
    """How an error names a turn of a record (both 0-based): ``FILE: record N: dialog turn M``."""
    return f"{record_where(source, index)}: dialog turn {turn + 1}"


def parse_turn(rec: Any, where: str) -> EsconvTurn:
    """One turn of a record's ``dialog``, in either format (``where`` names it in an error)."""
    if not isinstance(rec, dict):
        raise DataError(f"{where}: a turn must be an object")
    who = SPEAKERS.get(str(rec.get("speaker", "")).strip().lower())
    if who is None:
        raise DataError(f"{where}: field 'speaker': unknown speaker {rec.get('speaker')!r}")
    if "text" in rec:
        text, strategy = rec["text"], rec.get("strategy")
        feedback = _score(rec.get("feedback"), f"{where}: field 'feedback'")
    elif "content" in rec:
        ann = rec.get("annotation") or {}
        if not isinstance(ann, dict):
            raise DataError(f"{where}: field 'annotation' must be an object")
        text, strategy = rec["content"], ann.get("strategy")
        feedback = _score(ann.get("feedback"), f"{where}: field 'annotation.feedback'")
    else:
        raise DataError(f"{where}: a turn needs 'text' (usr/sys format) or 'content' (raw format)")
    if not isinstance(text, str):
        raise DataError(f"{where}: field 'text' must be a string")
    return EsconvTurn(who, text.strip(), strategy if isinstance(strategy, str) else None, feedback)


def _survey(rec: dict[str, Any], where: str) -> dict[str, int | None]:
    """The seeker's own ratings: ``survey_score.seeker``, or MultiESC's ``init_intensity`` / ``final_intensity``
    (its records have no survey)."""
    if "survey_score" not in rec and ("init_intensity" in rec or "final_intensity" in rec):
        multi = {"initial_emotion_intensity": "init_intensity", "final_emotion_intensity": "final_intensity"}
        return {k: _score(rec.get(multi[k]), f"{where}: field '{multi[k]}'") if k in multi else None
                for k in SURVEY_FIELDS}  # fmt: skip
    survey_score = rec.get("survey_score") or {}
    if not isinstance(survey_score, dict):
        raise DataError(f"{where}: field 'survey_score' must be an object (with 'seeker' ratings)")
    seeker = survey_score.get("seeker") or {}
    if not isinstance(seeker, dict):
        raise DataError(f"{where}: field 'survey_score.seeker' must be an object")
    return {k: _score(seeker.get(k), f"{where}: field 'survey_score.seeker.{k}'") for k in SURVEY_FIELDS}


def parse_record(rec: Any, source: str, index: int, failed_set: bool = False) -> EsconvDialog:
    where = record_where(source, index)
    if not isinstance(rec, dict):
        raise DataError(f"{where}: not an object")
    dialog = rec.get("dialog")
    if not isinstance(dialog, list):
        raise DataError(f"{where}: field 'dialog' must be a list of turns")
    survey = _survey(rec, where)
    turns = [parse_turn(t, turn_where(source, index, i)) for i, t in enumerate(dialog)]
    turns = [t for t in turns if t.text]
    if not turns:
        raise DataError(f"{where}: field 'dialog' has no turns with text: nothing to replay")
    texts = {k: str(rec.get(k) or "") for k in ("emotion_type", "problem_type", "situation", "experience_type")}
    return EsconvDialog(id=f"{Path(source).stem}:{index}", source=source, index=index, **texts, survey=survey,
                        turns=turns, from_failed_set=failed_set)  # fmt: skip


def _type(value: Any) -> str:
    names: dict[type, str] = {dict: "object", str: "string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "number")


def read_records(p: Path) -> list[Any]:
    """The records of an ESConv file as JSON values, in either format (not parsed yet); one line naming the
    file when it is in neither."""
    text = userfiles.read_text(p, "ESConv file", DataError)
    array = text.lstrip().startswith("[")
    records: list[Any] | None = None
    if array or p.suffix.lower() == ".json":
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            if array:
                raise DataError(f"{p}: not valid JSON ({e.msg}, line {e.lineno})") from None
        if records is not None and not isinstance(records, list):  # the raw format is one array of records
            raise DataError(f"{p}: the top level must be a JSON array of ESConv records, not a JSON {_type(records)}")
    if records is None:  # JSON lines (in a .json file too): read one by one
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(f"{p}: line {n} is not valid JSON ({e.msg})") from None
    if not records:
        raise DataError(f"{p}: no ESConv records in it")
    return records


def is_failed_set(p: Path) -> bool:
    """Whether a file's name says it holds conversations collected as failed (as ``failed_dev.json`` does)."""
    return "failed" in p.name.lower()


def load_esconv(path: str | Path, *, failed_set: bool | None = None) -> list[EsconvDialog]:
    """``failed_set``: whether the file holds conversations collected as failed; by default, whether
    its name says "failed" (as ``failed_dev.json`` does)."""
    p = Path(path)
    failed = is_failed_set(p) if failed_set is None else failed_set
    return [parse_record(r, str(p), i, failed) for i, r in enumerate(read_records(p))]
