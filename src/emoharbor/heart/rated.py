"""A file of replies rated by people, read into HEART histories (a history source of ``format: rated``).

The file is CSV (``.csv``, with a header row) or JSON lines (``.jsonl``, ``.ndjson``). Its columns are the
generic format's (``presets.GENERIC_REQUIRED`` and ``GENERIC_OPTIONAL``: one rating per row) or a preset's
(``presets.PRESETS``: one history per row, with every competitor's reply, rating and rater). Either way each
row becomes ratings of replies; the replies to one history are its competitors' candidates, and its ratings
the pairs people implied (``rated_pairs``).

Everything is checked before anything is stored: a file that is neither CSV nor JSON lines, a missing or
unknown column, an empty history or reply, a rating that is not a number or lies outside the scale, a
competitor the source does not name, a reply or rating given twice, a history with one reply, a history whose
ratings imply no pair. Each is one ``DataError`` naming the file, the row (CSV, the header being row 1) or
line (JSON lines), and the field (and the column it came from).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import userfiles
from ..errors import DataError
from .analysis.humans import dimension_key
from .config import HistorySource
from .histories import History, LoadReport, Rating, Turn, infer_speakers
from .presets import GENERIC_OPTIONAL, GENERIC_REQUIRED, Preset
from .rated_pairs import pair_rows

UNNAMED = "unnamed"  # the rater of a rating that names none (one per history: the ratings of one person)
CSV_SUFFIXES = (".csv",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
Record = tuple[str, dict[str, Any]]  # (where: "row 3" / "line 4", the row's fields)


@dataclass(frozen=True)
class Entry:
    """One rating as the file gives it: where it is, its fields, and the column each field came from."""

    where: str
    fields: dict[str, Any]
    columns: dict[str, str] = field(default_factory=dict)

    def col(self, name: str) -> str:
        return self.columns.get(name, name)


def bad(path: Path, where: str, problem: str) -> DataError:
    return DataError(f"{path}: {where}: {problem}: fix the file")


def bad_field(path: Path, e: Entry, name: str, problem: str) -> DataError:
    col = e.col(name)
    return bad(path, e.where, f"field '{name}'" + (f" (column '{col}')" if col != name else "") + f" {problem}")


def read_records(path: Path) -> tuple[list[Record], list[str] | None]:
    """The file's rows with where each is, and the CSV header (None for JSON lines)."""
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + JSONL_SUFFIXES:
        raise DataError(f"{path}: neither a CSV (.csv) nor a JSON-lines (.jsonl) file: give the rated replies in one "
                        "of those")  # fmt: skip
    text = userfiles.read_text(path, "file of rated replies", DataError)
    if suffix in JSONL_SUFFIXES:
        return _json_lines(path, text), None
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = list(reader.fieldnames or [])
        rows: list[Record] = []
        for i, row in enumerate(reader):
            if None in row:
                raise bad(path, f"row {i + 2}", f"more cells than the header's {len(header)} columns")
            rows.append((f"row {i + 2}", dict(row)))
    except csv.Error as e:
        raise bad(path, f"line {reader.line_num}", f"not CSV ({e})") from None
    if not header:
        raise DataError(f"{path}: empty: a CSV file of rated replies opens with a header row")
    return rows, header


def _json_lines(path: Path, text: str) -> list[Record]:
    out: list[Record] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise bad(path, f"line {n}", f"not valid JSON ({e.msg})") from None
        if not isinstance(item, dict):
            raise bad(path, f"line {n}", "not a JSON object")
        out.append((f"line {n}", item))
    if not out:
        raise DataError(f"{path}: no rated replies in it (JSON lines of objects)")
    return out


def _check_columns(path: Path, names: list[str], where: str, preset: Preset | None) -> None:
    """The header's columns (CSV) or a line's keys (JSON lines) hold what the format reads; the generic format
    has no other columns (a misspelt optional column would be read as absent)."""
    if preset is not None:
        missing = [c for c in preset.columns() if c not in names]
        if missing:
            raise DataError(f"{path}: {where}lacks the columns {missing}, which the {preset.name} preset reads (is it "
                            f"a file of {preset.cite}?)")  # fmt: skip
        return
    missing = [c for c in GENERIC_REQUIRED if c not in names]
    unknown = [c for c in names if c not in GENERIC_REQUIRED + GENERIC_OPTIONAL]
    if missing or unknown:
        what = f"lacks the columns {missing}" if missing else f"has the column '{unknown[0]}'"
        raise DataError(f"{path}: {where}{what}: the generic format's columns are {', '.join(GENERIC_REQUIRED)} and "
                        f"optionally {', '.join(GENERIC_OPTIONAL)}")  # fmt: skip


def entries(path: Path, preset: Preset | None) -> list[Entry]:
    """Every rating of the file (a preset's row gives one per competitor)."""
    rows, header = read_records(path)
    if header is not None:
        _check_columns(path, header, "the header ", preset)
    out: list[Entry] = []
    for where, row in rows:
        if header is None:
            _check_columns(path, list(row), f"{where}: ", preset)
        if preset is None:
            out.append(Entry(where, row))
            continue
        for c in preset.competitors:
            cols = {**preset.shared, **{f: col.format(c=c) for f, col in preset.per_reply.items()}}
            out.append(Entry(where, {"competitor": c, **{f: row[col] for f, col in cols.items()}}, cols))
    return out


def competitors_in(path: Path) -> list[str]:
    """The competitors of a generic file, in the order they first appear (``heart import-rated`` names them)."""
    names = (e.fields.get("competitor") for e in entries(path, None))
    return list(dict.fromkeys(n.strip() for n in names if isinstance(n, str) and n.strip()))


def _text(path: Path, e: Entry, name: str, *, required: bool) -> str:
    value = e.fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise bad_field(path, e, name, "is empty")
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise bad_field(path, e, name, f"must be text, not {type(value).__name__}")
    return str(value).strip()


def _turns(path: Path, e: Entry) -> list[str]:
    """The history: the seeker's message, or a JSON array of turns (oldest first, alternating, the seeker's last)."""
    value = e.fields.get("history")
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise bad_field(
                path, e, "history", f"starts with '[' but is not a JSON array of turns ({err.msg})"
            ) from None
    if isinstance(value, list):
        if not value or any(not isinstance(t, str) or not t.strip() for t in value):
            raise bad_field(path, e, "history", "must be a list of non-empty turns (text)")
        return [t.strip() for t in value]
    return [_text(path, e, "history", required=True)]


def _score(path: Path, e: Entry, scale: tuple[float, float]) -> float:
    value = e.fields.get("score")
    try:
        if isinstance(value, bool):
            raise ValueError
        score = float(str(value).strip())
    except ValueError:
        raise bad_field(path, e, "score", f"{value!r} is not a number") from None
    low, high = scale
    if not math.isfinite(score) or not low <= score <= high:
        raise bad_field(path, e, "score", f"{value!r} is outside the scale {low:g}-{high:g}")
    return score


@dataclass
class Group:
    """One history's rows, as they are read."""

    id: str
    first: str  # where its first row is
    turns: list[str]
    situation: str = ""
    emotion: str = ""
    replies: dict[str, str] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # competitor -> where its reply was first given
    ratings: list[Rating] = field(default_factory=list)
    rated: dict[tuple[str, ...], str] = field(default_factory=dict)  # a rating's identity -> where it was given


def _add(path: Path, g: Group, e: Entry, src: HistorySource) -> None:
    """One rating of ``e`` into its history's group, refusing what contradicts the rows before."""
    turns = _turns(path, e)
    if turns != g.turns:
        raise bad_field(path, e, "history", f"differs from the history's text in {g.first} (history {g.id!r})")
    for name in ("situation", "emotion"):
        text, have = _text(path, e, name, required=False), getattr(g, name)
        if text and have and text != have:
            raise bad_field(path, e, name, f"differs from the one in {g.first} (history {g.id!r})")
        setattr(g, name, have or text)
    competitor = _text(path, e, "competitor", required=True)
    if competitor not in src.rated_competitors():
        raise bad_field(path, e, "competitor", f"{competitor!r} is not one of the source's competitors "
                                               f"{src.rated_competitors()}")  # fmt: skip
    reply = _text(path, e, "reply", required=True)
    if g.replies.setdefault(competitor, reply) != reply:
        raise bad_field(path, e, "reply", f"is not the reply {competitor} gave to this history in "
                                          f"{g.where[competitor]}")  # fmt: skip
    g.where.setdefault(competitor, e.where)
    rater = _text(path, e, "rater", required=False) or UNNAMED
    dim_text = _text(path, e, "dimension", required=False)
    dimension = dimension_key(dim_text) if dim_text else src.rated_dimension()
    if dimension is None:
        raise bad_field(path, e, "dimension", f"{dim_text!r} is not overall nor a HEART dimension")
    across = src.rated_pairing() == "across_raters"
    identity = (competitor, dimension) if across else (competitor, rater, dimension)
    if identity in g.rated:
        why = (
            "with pairing across_raters each reply has one rating per dimension"
            if across
            else f"rater {rater} rated it before"
            if rater != UNNAMED
            else "no rater is named to tell the two apart"
        )
        raise bad_field(path, e, "score", f"rates {competitor}'s reply on {dimension} again (first in "
                                          f"{g.rated[identity]}): {why}")  # fmt: skip
    g.rated[identity] = e.where
    g.ratings.append(Rating(competitor, rater, dimension, _score(path, e, src.rated_scale())))


def _history(path: Path, g: Group, src: HistorySource) -> History:
    if len(g.replies) < 2:
        only = next(iter(g.replies))
        raise bad(path, g.first, f"history {g.id!r} has one reply (competitor {only}): a pair needs two replies "
                                 "to the same history")  # fmt: skip
    speakers = infer_speakers(len(g.turns), [None] * len(g.turns), "any")  # alternation ending on the seeker
    h = History(id=g.id, subset=src.subset, source=str(path),
                turns=[Turn(s, t) for s, t in zip(speakers, g.turns, strict=True)], emotion_type=g.emotion,
                situation=g.situation, speakers_inferred=len(g.turns) > 1, replies=g.replies,
                ratings=g.ratings)  # fmt: skip
    if not pair_rows(h, src.rated_competitors(), src.rated_pairing()):
        hint = ("no rater rated two of its replies (pairing same_rater: give pairing across_raters when each "
                "reply was rated by other people)" if src.rated_pairing() == "same_rater" else
                "no two of its replies were rated on the same dimension")  # fmt: skip
        raise bad(path, g.first, f"history {g.id!r}: its ratings imply no pair: {hint}")
    return h


def read_rated(src: HistorySource, path: Path) -> tuple[list[History], LoadReport]:
    """Every history of the file, in the order its first row comes, each with its replies and ratings."""
    report = LoadReport(source=str(path), name=src.name)
    es = entries(path, src.rated_preset())
    named = [bool(_text(path, e, "history_id", required=False)) for e in es]
    groups: dict[str, Group] = {}
    for e, has_id in zip(es, named, strict=True):
        if has_id != named[0]:
            why = "is given in some rows and not in others: give every row one, or none (rows with the same "
            raise bad_field(path, e, "history_id", why + "history text are one history)")
        turns = _turns(path, e)
        key = _text(path, e, "history_id", required=False) if has_id else json.dumps(turns)
        if key not in groups:
            hid = f"{src.name}:{key if has_id else len(groups)}"
            groups[key] = Group(hid, e.where, turns)
        _add(path, groups[key], e, src)
    report.examined = len({e.where for e in es})
    unused = [c for c in src.rated_competitors() if not any(c in g.replies for g in groups.values())]
    if unused:
        raise DataError(f"{path}: the competitors {unused} of the source have no reply in the file: leave them out "
                        "of 'competitors'")  # fmt: skip
    histories = [_history(path, g, src) for g in groups.values()]
    report.usable = len(histories)
    return histories, report
