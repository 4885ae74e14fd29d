"""The HTML report in a real headless Chromium: it renders without console errors or network requests, its
charts and tables are there, sorting and filtering work, and a screenshot is taken."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from emoharbor.report.build import write_report
from report_helpers import make_runs

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (install it: scripts/setup test)"),
    pytest.mark.slow,
]


def open_report(html: Path, shot: Path) -> dict[str, Any]:
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
            seen["radars"] = page.locator("svg.radar").count()
            seen["trajectories"] = page.locator("svg.traj").count()
            seen["radar_box"] = page.locator("svg.radar").first.bounding_box()
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
        finally:
            browser.close()
    return seen


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    runs = asyncio.run(make_runs(tmp_path))
    html = write_report([runs["eh"], runs["val"]], tmp_path / "report.html")
    shot = tmp_path / "report.png"
    seen = open_report(html, shot)
    assert seen["errors"] == []
    assert seen["requests"] == []  # self-contained: nothing fetched
    assert seen["radars"] == 2 and seen["trajectories"] == 5  # EmoHarbor: 1 + 2; validate: 1 + 1
    assert seen["radar_box"] is not None and seen["radar_box"]["width"] > 100
    assert seen["leaderboard_rows"] >= 2 and seen["validation_rows"] >= 10
    assert seen["scatter_dots"] == 8  # validate: 4 conversations x 2 judges
    assert seen["conversations"] == 8
    assert (seen["sort_first"], seen["sort_second"]) == ("asc", "desc")
    assert seen["visible_after_filter"] == 2
    assert seen["inner_visible"]
    assert shot.is_file() and shot.stat().st_size > 10_000
