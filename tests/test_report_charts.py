"""The report's comparing charts and the paired-differences table: every supporter's estimates per dimension on
one axis, the forest plot of the differences from the baseline (whiskers only from MIN_N pairs up, a line at 0),
the validate scatter's jitter, and the colouring and small-n rules of the HTML tables."""

from __future__ import annotations

import asyncio
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from emoharbor.assess.dimensions import keys
from emoharbor.report.build import build_html
from emoharbor.report.html import PALETTE, est, side_of_zero
from emoharbor.report.leaderboard_html import difference_table, dimension_chart
from emoharbor.report.svg import Dots, forest, intervals, jitter, ticks_around_zero
from emoharbor.stats.bootstrap import MIN_N
from emoharbor.testing.fake_server import FakeOpenAIServer, default_reply
from emoharbor.validate.section import JITTER, validation_scatters
from report_helpers import small_run

SVG = ""  # inline SVG in HTML: no namespace
PERSONAL_PROMPT = "Pay close attention to this particular person"  # prompts/supporter_personal.txt


def varied_reply(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> str:
    """The fake's replies, except that the personal supporter says "zest" and a judge who sees it scores every
    dimension 2 higher and autonomy 1 (within 1-5): differences on both sides of 0."""
    text = default_reply(messages, schema)
    if schema is None and PERSONAL_PROMPT in str(messages[0].get("content", "")):
        return text + " zest"
    props = (schema or {}).get("properties", {})
    if set(keys()) <= set(props):
        said = any("zest" in str(m.get("content", "")) for m in messages)
        answer = json.loads(text)
        for k in keys():
            shift = (-4 if k == "autonomy" else 2) if said else 0
            item = answer[k]
            if isinstance(item, dict):
                item["score"] = max(1, min(5, item["score"] + shift))
            else:
                answer[k] = max(1, min(5, item + shift))
        return json.dumps(answer)
    return text


async def varied_run(folder: Path, profiles: str = "builtin:p00[1-6]*") -> Path:
    """Six built-in profiles x the plain and the personal supporter (3 turns, fake server, `varied_reply`):
    enough pairs for the differences to have intervals."""
    with FakeOpenAIServer(reply=varied_reply) as srv:
        return await small_run(folder, srv, profiles, name="wide")


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return asyncio.run(varied_run(tmp_path_factory.mktemp("wide") / "wide"))


def cell(mean: float | None, lo: float | None = None, hi: float | None = None, n: int = 10) -> dict[str, Any]:
    return {"mean": mean, "lo": lo, "hi": hi, "n": n}


def parts(svg: str) -> ET.Element:
    """The <svg> of a chart figure, parsed (the figure's caption is HTML around it)."""
    return ET.fromstring(svg[svg.index("<svg") : svg.index("</svg>") + len("</svg>")])


def of_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if e.get("class") == cls]


def test_every_supporter_per_row_on_one_axis_with_whiskers_only_where_n_allows() -> None:
    a = Dots("a", PALETTE[0], [cell(3.0, 2.5, 3.5), cell(4.0, n=MIN_N - 1), cell(None, n=0)])
    b = Dots("b", PALETTE[1], [cell(2.0, 1.5, 2.5), cell(2.5, 2.0, 3.0), cell(5.0, 4.2, 5.0)])
    svg = intervals(["x", "y", "z"], [a, b], title="t", x_label="score (1-5)", x_ticks=[1, 2, 3, 4, 5], split=2)
    root = parts(svg)
    assert root.tag == SVG + "svg" and root.find(SVG + "title") is not None and root.get("role") == "img"
    assert len(of_class(root, "circle", "est")) == 5  # a has no estimate in row z
    whiskers = of_class(root, "line", "whisker")
    assert len(whiskers) == 4  # a's row y has 4 < MIN_N values: the dot alone
    assert {w.get("stroke") for w in whiskers} == {PALETTE[0], PALETTE[1]}
    assert [t.text for t in of_class(root, "text", "small-n")] == ["n too small"]
    assert [t.text for t in of_class(root, "text", "na")] == ["n/a"]
    assert len(of_class(root, "line", "split")) == 1 and not of_class(root, "line", "zero")
    assert [t.text for t in of_class(root, "text", "label")] == ["x", "y", "z"]
    tips = [c.findtext(SVG + "title") for c in of_class(root, "circle", "est")]
    assert "a, x: 3.00 [2.50, 3.50] n=10" in tips and "a, y: 4.00 (n too small) n=4" in tips
    # the two series of a row sit one above the other, at the same heights in every row
    ys = [float(c.get("cy", 0)) for c in of_class(root, "circle", "est")]
    assert ys[0] < ys[1] and ys[2] < ys[3] and ys[1] - ys[0] == pytest.approx(ys[3] - ys[2])
    assert 'class="key"' in svg and "score (1-5)" in svg  # legend and axis label


def test_a_whisker_spans_its_interval_on_the_axis() -> None:
    svg = intervals(["x"], [Dots("a", "#000", [cell(3.0, 2.0, 4.0)])], title="t", x_label="s", x_ticks=[1, 3, 5])
    root = parts(svg)
    (w,) = of_class(root, "line", "whisker")
    (dot,) = of_class(root, "circle", "est")
    lo, hi, mid = float(w.get("x1", 0)), float(w.get("x2", 0)), float(dot.get("cx", 0))
    assert lo < mid < hi and mid - lo == pytest.approx(hi - mid, abs=0.2)


def test_the_forest_plot_has_a_line_at_zero_and_no_whisker_under_min_n() -> None:
    s = Dots(
        "personal", PALETTE[1], [cell(0.8, 0.3, 1.3), cell(-0.5, -0.9, -0.1), cell(1.0, n=3), cell(0.1, -2.7, 2.9)]
    )
    svg = forest(["warmth", "autonomy", "memory", "overall"], [s], title="personal minus plain", split=3)
    root = parts(svg)
    assert root.get("class") == "chart dots forest"
    (zero,) = of_class(root, "line", "zero")
    assert zero.get("x1") == zero.get("x2")
    ticks = [t.text for t in of_class(root, "text", "tick")]
    assert "0" in ticks and "+3" in ticks and "-3" in ticks  # the axis covers the widest interval
    assert len(of_class(root, "circle", "est")) == 4 and len(of_class(root, "line", "whisker")) == 3
    (small,) = of_class(root, "text", "small-n")
    assert small.text == "n too small"
    # a difference below 0 sits left of the line, one above it right
    x0 = float(zero.get("x1", 0))
    cx = [float(c.get("cx", 0)) for c in of_class(root, "circle", "est")]
    assert cx[0] > x0 > cx[1]


def test_ticks_around_zero_cover_the_values_in_a_few_even_steps() -> None:
    assert ticks_around_zero([]) == [-0.5, -0.25, 0.0, 0.25, 0.5]
    assert ticks_around_zero([0.3, None, -1.2]) == [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5]
    assert ticks_around_zero([4.0]) == [-4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]


def test_jitter_is_fixed_per_key_and_small() -> None:
    assert jitter("mine:1") == jitter("mine:1") != jitter("mine:2")
    offsets = [v for k in range(200) for v in jitter(f"c{k}", 0.15)]
    assert max(abs(v) for v in offsets) <= 0.15 and max(offsets) > 0.1 and min(offsets) < -0.1
    assert jitter("mine:1", seed=1) != jitter("mine:1")


def test_the_validate_scatter_is_jittered_and_says_so() -> None:
    rows = [{"judge": "user", "conversation": f"c{i}", "overall": 4.0, "seeker_empathy": 4, "failed": i == 0,
             "seeker_relevance": 4} for i in range(3)]  # fmt: skip
    rows += [{"judge": "user", "conversation": "c9", "overall": 1.0, "seeker_empathy": 1, "failed": True}]
    html = validation_scatters(rows)
    root = parts(html)
    dots = of_class(root, "circle", "dot")
    spots = {(d.get("cx"), d.get("cy")) for d in dots}
    assert len(dots) == 4 and len(spots) == 4  # three equal ratings, three places
    assert f"jittered by up to ±{JITTER}" in html and "Spearman rho 1.00 (n=4)" in html
    assert "the seeker&#x27;s own empathy rating (1-5)" in html and "judge&#x27;s overall score (1-5)" in html
    assert validation_scatters(rows) == html  # deterministic


def test_estimates_under_min_n_show_the_mean_alone() -> None:
    assert est(cell(3.1, None, None, MIN_N - 1)) == (
        '<span data-sort="3.100000">3.10</span> <small class="small-n">n too small</small> <small>n=4</small>'
    )
    assert est(cell(3.1, 2.8, 3.4, 12)) == '<span data-sort="3.100000">3.10</span> <small>[2.80, 3.40]</small> ' \
        "<small>n=12</small>"  # fmt: skip
    assert "[" not in est(cell(3.1, 2.8, 3.4, MIN_N - 1))  # an interval given anyway is not shown
    assert est(cell(-12.25, -20.0, -4.5), 1, with_n=False) == '<span data-sort="-12.250000">-12.2</span> ' \
        "<small>[-20.0, -4.5]</small>"  # fmt: skip
    assert est(cell(None, n=0)).startswith('<span class="na"')


def test_the_differences_table_colours_only_intervals_that_exclude_zero() -> None:
    assert side_of_zero(cell(0.5, 0.1, 0.9)) == "above" and side_of_zero(cell(-0.5, -0.9, -0.1)) == "below"
    assert side_of_zero(cell(0.5, -0.1, 0.9)) == "" and side_of_zero(cell(0.5, 0.1, 0.9, MIN_N - 1)) == ""
    cells = {
        "warmth": {**cell(0.8, 0.3, 1.3, 8), "p_above_0": 1.0, "p": 0.001, "p_holm": 0.01},
        "autonomy": {**cell(-0.6, -1.0, -0.2, 8), "p_above_0": 0.0, "p": 0.001, "p_holm": 0.01},
        "memory": {**cell(0.1, -0.4, 0.6, 8), "p_above_0": 0.6, "p": 0.8, "p_holm": 1.0},
        "overall": {**cell(1.5, None, None, 3), "p_above_0": None, "p": None},
    }
    html = difference_table(cells, ["warmth", "autonomy", "memory", "overall"], tid="d")
    root = ET.fromstring(html)
    header = [th.text for th in root.iter("th")]
    assert header == ["score", "pairs", "difference [95% interval]", "P(difference > 0)", "p (Holm)"]
    body = [[td for td in tr.iter("td")] for tr in root.iter("tr")][1:]
    assert [r[0].text for r in body] == ["warmth", "autonomy", "memory", "overall"]
    assert [r[2].get("class") for r in body] == ["above", "below", None, None]
    assert [r[1].text for r in body] == ["8", "8", "8", "3"]
    assert "".join(body[3][2].itertext()).strip() == "1.50 n too small" and body[3][4].text == "-"
    assert "".join(body[0][2].itertext()) == "0.80 [0.30, 1.30]" and body[0][3].text == "1.00"
    assert body[0][4].text == "0.010" and body[3][3].text == "n/a"


def test_the_dimension_chart_has_every_dimension_and_group_mean_of_every_supporter() -> None:
    def row(sup: str, mean: float, n: int) -> dict[str, Any]:
        e = cell(mean, mean - 0.3, mean + 0.3, n) if n >= MIN_N else cell(mean, n=n)
        return {"supporter": sup, "dimensions": {k: e for k in keys()}, "overall": e, "generic": e, "personal": e}

    board = {"judge": "user", "dimension_keys": keys(), "rows": [row("a", 4.0, 9), row("b", 2.0, 3)]}
    root = parts(dimension_chart(board, {"a": PALETTE[0], "b": PALETTE[1]}))
    labels = [t.text for t in of_class(root, "text", "label")]
    assert labels == [*keys(), "overall", "generic", "personal"]
    assert len(of_class(root, "circle", "est")) == 2 * 13 and len(of_class(root, "line", "whisker")) == 13
    assert len(of_class(root, "text", "small-n")) == 13  # b: under MIN_N everywhere, labelled, no whisker
    assert [t.text for t in of_class(root, "text", "tick")][:5] == ["1", "2", "3", "4", "5"]


def test_a_run_with_enough_pairs_gets_intervals_and_coloured_differences(wide: Path) -> None:
    html = build_html([wide])
    assert 'class="chart radar"' not in html
    assert html.count('class="chart dots"') == 2 and html.count('class="chart dots forest"') == 2  # per judge
    svgs = [parts(m) for m in re.findall(r'<svg class="chart dots forest".*?</svg>', html, flags=re.S)]
    (root,) = [r for r in svgs if (r.findtext("title") or "").startswith("Each supporter minus plain, user judge")]
    assert len(of_class(root, "line", "zero")) == 1 and len(of_class(root, "line", "whisker")) == 13  # 6 pairs
    user = html[html.index('id="run0-wide-diff-user-personal"') :]
    user = user[: user.index("</table>")]
    assert '<td class="above">' in user and '<td class="below">' in user  # autonomy lower, the rest higher
    assert "<td>6</td>" in user and "n too small" not in user
