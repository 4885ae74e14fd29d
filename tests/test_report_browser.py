"""The HTML report in a real headless Chromium: it renders without console errors or network requests, its
charts and tables are there, sorting and filtering work, and a screenshot is taken. With EMOHARBOR_SCREENSHOTS=DIR
the screenshots (the page, and each comparing chart on its own) are also saved in DIR."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from emoharbor.report.build import write_report
from report_helpers import make_runs
from test_report_charts import varied_run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (install it: scripts/setup test)"),
    pytest.mark.slow,
]


CHARTS = {  # screenshot name -> the element of the wide run (enough pairs for intervals) or of the validate run
    "dimensions": "#run2-wide figure.chartbox:has(svg.dots:not(.forest))",
    "forest": "#run2-wide figure.chartbox:has(svg.forest)",
    "differences": "#run2-wide table.differences",
    "scatter": "#run1-val figure.chartbox:has(svg.scatter)",
    "forest_small_n": "#run0-eh figure.chartbox:has(svg.forest)",  # 2 pairs: dots alone, "n too small"
    "differences_small_n": "#run0-eh table.differences",
}


def boxes(page: Any, selector: str) -> list[Any]:
    """The bounding box of every element that ``selector`` finds (None for one that is not displayed)."""
    found = page.locator(selector)
    return [found.nth(i).bounding_box() for i in range(found.count())]


def open_report(html: Path, shot: Path, shots: Path | None = None) -> dict[str, Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    seen: dict[str, Any] = {"errors": [], "requests": []}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.on("request", lambda r: seen["requests"].append(r.url) if not r.url.startswith("file:") else None)
            page.goto(html.resolve().as_uri())
            page.wait_for_selector("body[data-report-ready='1']", timeout=15000)
            charts = page.locator("svg.dots")
            seen["dot_charts"] = [charts.nth(i).is_visible() for i in range(charts.count())]
            seen["dot_boxes"] = boxes(page, "svg.dots")
            seen["forests"] = page.locator("svg.forest").count()
            seen["trajectories"] = page.locator("svg.traj").count()
            seen["scatters"] = boxes(page, "svg.scatter")
            seen["whiskers"] = boxes(page, "#run2-wide svg.dots line.whisker")
            seen["zero_lines"] = boxes(page, "svg.dots line.zero")
            seen["difference_tables"] = boxes(page, "table.differences")
            seen["above"] = page.locator("#run2-wide table.differences td.above").count()
            seen["below"] = page.locator("#run2-wide table.differences td.below").count()
            seen["coloured_small_n"] = page.locator("#run0-eh table.differences td[class]").count()
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                for name, selector in CHARTS.items():
                    page.locator(selector).first.screenshot(path=str(shots / f"{name}.png"))
            seen["leaderboard_rows"] = page.locator("table.leaderboard tbody tr").count()
            seen["validation_rows"] = page.locator("table.validation tbody tr").count()
            seen["scatter_dots"] = page.locator("svg.scatter circle.dot").count()
            seen["conversations"] = page.locator("details.conv").count()
            # sorting: the first leaderboard's "overall" column, twice
            th = page.locator("table.leaderboard").first.locator("th", has_text="overall")
            th.click()
            seen["sort_first"] = th.get_attribute("data-dir")
            th.click()
            seen["sort_second"] = th.get_attribute("data-dir")
            # filtering the transcripts of the first run down to one supporter
            page.locator("input.filter").first.fill("personal")
            seen["visible_after_filter"] = page.locator("#run0-eh-convs details.conv:visible").count()
            page.locator("input.filter").first.fill("")
            page.locator("details.conv").first.locator("summary").click()
            seen["inner_visible"] = page.locator("details.conv").first.locator(".inner .thought").first.is_visible()
            page.screenshot(path=str(shot), full_page=False)
            if shots is not None:
                page.screenshot(path=str(shots / "report.png"), full_page=False)
        finally:
            browser.close()
    return seen


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    runs = asyncio.run(make_runs(tmp_path))
    wide = asyncio.run(varied_run(tmp_path / "wide"))
    html = write_report([runs["eh"], runs["val"], wide], tmp_path / "report.html")
    shot = tmp_path / "report.png"
    wanted = os.environ.get("EMOHARBOR_SCREENSHOTS")
    seen = open_report(html, shot, Path(wanted) if wanted else None)
    assert seen["errors"] == []
    assert seen["requests"] == []  # self-contained: nothing fetched
    # per EmoHarbor run and judge (2 x 2): every supporter per dimension, and the paired differences
    assert len(seen["dot_charts"]) == 8 and all(seen["dot_charts"]) and seen["forests"] == 4
    assert seen["trajectories"] == 8  # EmoHarbor: 1 + 2 each; validate: 1 + 1
    for box in seen["dot_boxes"] + seen["scatters"] + seen["difference_tables"]:
        assert box is not None and box["width"] > 100 and box["height"] > 100
    assert len(seen["zero_lines"]) == 4 and all(b is not None and b["height"] > 100 for b in seen["zero_lines"])
    assert seen["whiskers"] and all(b is not None and b["width"] > 0 for b in seen["whiskers"])
    assert len(seen["difference_tables"]) == 4 and seen["above"] > 0 and seen["below"] > 0
    assert seen["coloured_small_n"] == 0  # 2 pairs: nothing coloured
    assert seen["leaderboard_rows"] >= 2 and seen["validation_rows"] >= 10
    assert seen["scatter_dots"] == 8  # validate: 4 conversations x 2 judges
    assert seen["conversations"] == 20  # 4 + 4 + 12
    assert (seen["sort_first"], seen["sort_second"]) == ("asc", "desc")
    assert seen["visible_after_filter"] == 2
    assert seen["inner_visible"]
    assert shot.is_file() and shot.stat().st_size > 10_000
    if wanted:
        assert all((Path(wanted) / f"{name}.png").stat().st_size > 2_000 for name in [*CHARTS, "report"])
