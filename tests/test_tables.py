"""`emoharbor.tables`: the one way result tables, numbers and intervals are written, in the commands and the report."""

from __future__ import annotations

import csv
import io

from emoharbor.report.html import est, plain
from emoharbor.tables import NA, bounds, cell, csv_table, interval, md_table, num, text_table

HEADER = ["judge", "score", "rho"]
ROWS: list[list[object]] = [["user", "overall", "0.41 [0.20, 0.60]"], ["third_party:x", "warmth", None]]


def test_numbers_and_intervals_have_one_precision_rule() -> None:
    assert num(3.2) == "3.20" and num(3.14159, 3) == "3.142" and num(-12.25, 1) == "-12.2"
    assert num(0.25, signed=True) == "+0.25" and num(-0.25, signed=True) == "-0.25"
    assert num(None) == NA == "n/a" and num("inf") == "inf"
    assert interval(3.2, 2.9, 3.5) == "3.20 [2.90, 3.50]"
    assert interval(-4.0, -10.25, 1.5, digits=1) == "-4.0 [-10.2, 1.5]"
    assert interval(1012.3456, 980.0, 1040.5) == "1012.35 [980.00, 1040.50]"
    assert interval(3.2, None, None) == "3.20"  # no interval (one value, or no bootstrap)
    assert interval(None, None, None) == "n/a" and interval(None, 1.0, 2.0, na="not compared") == "not compared"
    assert interval(0.1, -0.004, 0.2, 3, signed=True) == "+0.100 [-0.004, +0.200]"  # a margin over a baseline
    assert interval(0.1, None, None, signed=True) == "+0.10"
    assert bounds(2.9, 3.5) == "[2.90, 3.50]" and bounds(None, 3.5) == ""


def test_cells_of_any_kind() -> None:
    assert [cell(v) for v in (0.5, 1234.56, -0.1234, 7, None, "kind", True)] == [
        "0.500",
        "1234.6",
        "-0.123",
        "7",
        "n/a",
        "kind",
        "True",
    ]


def test_plain_text_table_is_aligned_without_trailing_spaces() -> None:
    assert text_table(HEADER, ROWS) == (
        "judge          score    rho\n"
        "---------------------------\n"
        "user           overall  0.41 [0.20, 0.60]\n"
        "third_party:x  warmth   n/a"
    )
    assert text_table(["a", "b"], []) == "a  b\n----"


def test_markdown_table() -> None:
    expected = "| judge | score | rho |\n|---|---|---|\n| user | overall | 0.41 [0.20, 0.60] |\n"
    expected += "| third_party:x | warmth | n/a |"
    assert md_table(HEADER, ROWS) == expected
    assert text_table(HEADER, ROWS, md=True) == expected
    floats = md_table(["x", "share"], [["a", 0.5], ["b", 1000.0]])
    assert floats == "| x | share |\n|---|---|\n| a | 0.500 |\n| b | 1000.0 |"


def test_csv_table_writes_raw_values_with_newline_ends() -> None:
    out = csv_table(["supporter", "mean", "lo", "n", "note"], [["a", 0.5, None, 3, 'said "hi", twice']])
    assert out == 'supporter,mean,lo,n,note\na,0.5,,3,"said ""hi"", twice"\n'
    assert list(csv.reader(io.StringIO(out)))[1] == ["a", "0.5", "", "3", 'said "hi", twice']
    assert csv_table([], []) == "\n"


def test_html_cells_use_the_same_formatting() -> None:
    assert est({"mean": 3.2, "lo": 2.9, "hi": 3.5, "n": 12}) == (
        '<span data-sort="3.200000">3.20</span> <small>[2.90, 3.50]</small> <small>n=12</small>'
    )
    assert est({"value": -4.0, "lo": None, "hi": None, "n": 1}, 1, value_key="value") == (
        '<span data-sort="-4.000000">-4.0</span> <small class="small-n">n too small</small> <small>n=1</small>'
    )
    assert est({"mean": None, "lo": None, "hi": None, "n": 0}) == (
        '<span class="na" data-sort="">n/a</span> <small>n=0</small>'
    )
    assert plain(0.5) == '<span data-sort="0.500000">0.500</span>' and plain(None) == '<span class="na">n/a</span>'
    assert plain("a<b") == "a&lt;b"
