"""Reading the configured history sources (HEART files, ESConv conversations, files of replies rated by people)
with their limits."""

from __future__ import annotations

import random
from pathlib import Path

from ...data.esconv import EsconvDialog, parse_record
from ...data.selection import select
from ...errors import DataError
from ..config import HeartConfig, HistorySource, resolve_path
from ..histories import SEEKER, SUPPORTER, UNUSABLE, History, LoadReport, Skip, Turn, parse_heart_item, read_items
from ..rated import read_rated


def _limit(histories: list[History], report: LoadReport, src: HistorySource) -> tuple[list[History], LoadReport]:
    """The source's ``first`` or ``sample`` of its usable histories, counted in its report."""
    used = select(histories, src.first, src.sample, src.seed)
    report.used = len(used)
    return used, report


def load_heart_source(src: HistorySource, path: Path) -> tuple[list[History], LoadReport]:
    report = LoadReport(source=str(path), name=src.name)
    out: list[History] = []
    for index, item, where in read_items(path):
        if src.sample is None and src.first is not None and len(out) >= src.first:
            break  # "first N": stop once N usable histories are found
        report.examined += 1
        try:
            if isinstance(item, Skip):
                raise item
            h = parse_heart_item(item, f"{src.name}:{index}", src.subset, str(path), src.unknown_speakers, src.opener)
        except Skip as s:
            if s.reason not in UNUSABLE:
                raise DataError(f"{path}: {where}: {s.detail}: fix the file") from None
            report.skip(where, s.reason, s.detail)
            continue
        report.inferred += h.speakers_inferred
        out.append(h)
    report.usable = len(out)
    return _limit(out, report, src)


def esconv_histories(dialog: EsconvDialog, src: HistorySource) -> list[History]:
    """Histories cut just after seeker turns; the supporter's real next reply is the human candidate.
    ``Skip`` when the conversation has no such cut."""
    turns = dialog.merged_turns()
    cuts = [
        i
        for i in range(len(turns) - 1)
        if turns[i].speaker == SEEKER and turns[i + 1].speaker == SUPPORTER and i + 1 >= src.min_history_turns
    ]
    if not cuts:
        raise Skip("no_cut", f"no seeker turn followed by a supporter reply after {src.min_history_turns} turns")
    rng = random.Random(f"{src.seed}:{dialog.id}")
    chosen = sorted(rng.sample(cuts, min(src.cuts_per_dialog, len(cuts))))
    return [
        History(
            id=f"{src.name}:{dialog.id}@{i + 1}",
            subset=src.subset,
            source=dialog.source,
            turns=[Turn(t.speaker, t.text) for t in turns[: i + 1]],
            emotion_type=dialog.emotion_type,
            problem_type=dialog.problem_type,
            situation=dialog.situation,
            human_reply=turns[i + 1].text,
        )
        for i in chosen
    ]


def load_esconv_source(src: HistorySource, path: Path) -> tuple[list[History], LoadReport]:
    report = LoadReport(source=str(path), name=src.name)
    failed = "failed" in path.name.lower()
    dialogs: list[tuple[EsconvDialog, str]] = []  # every record is read (and its skips counted) before any is cut
    for index, item, where in read_items(path):
        report.examined += 1
        if isinstance(item, Skip):
            report.skip(where, item.reason, item.detail)
            continue
        try:
            dialogs.append((parse_record(item, str(path), index, failed), where))
        except DataError as e:
            report.skip(where, "bad_record", str(e))
    out: list[History] = []
    for dialog, where in dialogs:
        try:
            out.extend(esconv_histories(dialog, src))
        except Skip as s:
            report.skip(where, s.reason, s.detail)
    report.usable = len(out)
    return _limit(out, report, src)


def load_rated_source(src: HistorySource, path: Path) -> tuple[list[History], LoadReport]:
    """A file of rated replies: every history is checked, then ``first`` or ``sample`` of them kept."""
    return _limit(*read_rated(src, path), src)


LOADERS = {"heart": load_heart_source, "esconv": load_esconv_source, "rated": load_rated_source}


def load_histories(config: HeartConfig, base_dir: Path) -> tuple[list[History], list[LoadReport]]:
    histories: list[History] = []
    reports: list[LoadReport] = []
    for i, src in enumerate(config.histories):
        path = resolve_path(base_dir, src.path)
        try:
            got, report = LOADERS[src.format](src, path)
        except DataError as e:  # a file that cannot be read at all: which source of the config it is (a file of
            # rated replies is the run's one source: its errors name the file, the row and the field)
            raise (e if src.format == "rated" else DataError(f"field 'histories.{i}': {e}")) from None
        histories.extend(got)
        reports.append(report)
    ids = [h.id for h in histories]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise DataError(f"history ids repeat across sources: {dup}; give the sources distinct names")
    return histories, reports
