"""Every bad input of tests/test_bad_inputs.py (its case lists, imported from there), each tried in a fresh
empty folder, as a Markdown table: what was tried, the exit status and the message. Each must end with exit
status 2 and one line ``error: ...``, having made nothing; the last line says whether all did.

    .venv/bin/python bench/bad_inputs.py > bad_inputs.md
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))  # the case lists, and the helpers the test module imports

import test_bad_inputs as cases  # noqa: E402

WIDTH = 140


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    here = Path.cwd()
    rows: list[str] = []
    bad: list[str] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="emoharbor-bad-inputs-") as top:
        os.environ["EMOHARBOR_CACHE_DIR"] = str(Path(top) / "cache")
        os.environ.pop(cases.NO_KEY, None)
        for n, case in enumerate(cases.CASES, 1):
            if missing := cases.missing_modules(case):
                skipped.append(f"{case.what} (needs {', '.join(missing)})")
                continue
            work = Path(top) / f"case{n}"
            work.mkdir()
            os.chdir(work)
            try:
                cases.prepare(case)
                before = {p: Path(p).read_bytes() for p in case.unchanged}
                outcomes = cases.attempt(case)
                found = cases.problems(case, outcomes, before)
            finally:
                os.chdir(here)
            first = outcomes[0]
            message = first.lines[0] if first.lines else "(nothing on stderr)"
            message = message.replace(f"{work.resolve()}/", "")  # the case's own folder, as the user's cwd
            codes = ", ".join(str(o.code) for o in outcomes)
            more = f" (+{len(outcomes) - 1} more commands)" if len(outcomes) > 1 else ""
            tried = f"{case.what}: `emoharbor {' '.join(case.args)}`{more}"
            rows.append(f"| {len(rows) + 1} | {cell(tried)} | {codes} | {cell(message[:WIDTH])} |")
            if found:
                bad.append(f"{case.what}: {'; '.join(found)}")
    print("| # | what was tried | exit status | message (first 140 characters) |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print()
    for s in skipped:
        print(f"- skipped: {s}")
    for b in bad:
        print(f"- NOT AS IT SHOULD BE: {b}")
    every = "every one exits 2 with one line `error: ...`" if not bad else f"{len(bad)} do not exit 2 with one line"
    print(f"{len(rows)} bad inputs tried; {every}, and none made what it must not.")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
