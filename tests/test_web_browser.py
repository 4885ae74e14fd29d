"""The rating app in a real headless Chromium (Playwright): a rater opens the link, rates items with mouse
and keyboard, leaves, comes back, finishes; the export holds exactly those answers. Dialogue text with
HTML in it never runs. Screenshots of both rating pages are saved in tmp_path (and, when
EMOHARBOR_SCREENSHOT_DIR is set, there too)."""

from __future__ import annotations

import csv
import os
import re
import shutil
from collections.abc import Iterator
from itertools import cycle
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests", allow_module_level=True)
pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

from emoharbor.assess.dimensions import keys as conversation_keys  # noqa: E402
from emoharbor.web.build import attention_bank  # noqa: E402
from emoharbor.web.export import export_study  # noqa: E402
from web_helpers import CONVERSATIONS, HISTORIES, Setup, history_of, make_study, reply_owner, serve  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip
HEART_DIMS = ["human_alignment", "empathic_responsiveness", "attunement", "resonance", "task_following", "overall"]
Page = Any


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def screenshot(page: Page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"emoharbor-rating-{name}.png"
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header at the top of a full-page shot
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("EMOHARBOR_SCREENSHOT_DIR"):
        shutil.copy(path, Path(os.environ["EMOHARBOR_SCREENSHOT_DIR"]) / path.name)


class Rater:
    """Rates whatever item the page shows and remembers the rows the export must then hold."""

    def __init__(self, page: Page, tmp_path: Path) -> None:
        self.page, self.tmp = page, tmp_path
        self.pairs: set[tuple[str, ...]] = set()
        self.scores: set[tuple[str, ...]] = set()
        self.choices = cycle(["A", "B", "tie", "B", "A", "A", "tie"])
        self.numbers = cycle(["4", "2", "5", "1", "3"])
        self.shots: set[str] = set()
        self.reason = ""

    def kind(self) -> str:
        return str(self.page.get_attribute("#rating", "data-kind"))

    def plan_pair(self) -> list[tuple[str, str, str]]:
        """(dimension, A/B/tie, strength) for this pair, and the export rows it must give."""
        a_text = self.page.inner_text("#reply-a .text")
        b_text = self.page.inner_text("#reply-b .text")
        good = {spec["good"] for spec in attention_bank()["pair"]}
        if a_text in good or b_text in good:  # an attention check: pick the sensible reply; not exported
            self.reason = "the other reply is off-topic or rude"
            return [(d, "A" if a_text in good else "B", "5") for d in HEART_DIMS]
        hid = history_of(self.page.inner_text(".dialogue .turn .text"))
        owner = {"A": reply_owner(a_text, hid), "B": reply_owner(b_text, hid)}
        comps = [c for c in ("human", "zeta-bot", "omega-bot") if c in owner.values()]
        plan = [(d, next(self.choices), next(self.numbers)) for d in HEART_DIMS]
        reason = f"reason for {hid}"
        for d, choice, strength in plan:
            winner = "tie" if choice == "tie" else owner[choice]
            self.pairs.add((hid, comps[0], comps[1], "rater-1", d, winner, "" if choice == "tie" else strength,
                            reason, owner["A"]))  # fmt: skip
        self.reason = reason
        return plan

    def plan_conversation(self) -> list[tuple[str, str]]:
        first = self.page.inner_text(".dialogue .turn .text")
        cid = next(k for k, turns in CONVERSATIONS.items() if turns[0][1] == first)
        plan = [(d, next(self.numbers)) for d in conversation_keys()]
        self.scores |= {(cid, "rater-1", d, s) for d, s in plan}
        return plan

    def click(self, name: str, value: str) -> None:
        self.page.locator(f'input[name="{name}"][value="{value}"]').locator("xpath=..").click()

    def rate(self, how: str) -> None:
        """Rate the item on the page by mouse or keyboard and submit it."""
        kind = self.kind()
        if kind == "pair":
            plan = self.plan_pair()
            radios = sum(2 if choice != "tie" else 1 for _, choice, _ in plan)
            for d, choice, strength in plan:
                if how == "mouse":
                    self.click(f"choice.{d}", choice)
                    if choice != "tie":
                        self.click(f"strength.{d}", strength)
                else:
                    self.page.keyboard.press({"A": "a", "B": "b", "tie": "t"}[choice])
                    if choice != "tie":
                        self.page.keyboard.press(strength)
            if how == "mouse":
                self.page.fill("#reason", self.reason)
            else:
                self.page.keyboard.press("r")
                self.page.keyboard.type(self.reason)
                self.page.keyboard.press("Escape")
        else:
            radios = 10
            for d, score in self.plan_conversation():
                if how == "mouse":
                    self.click(f"score.{d}", score)
                else:
                    self.page.keyboard.press(score)
        assert self.page.locator("input[type=radio]:checked").count() == radios
        if kind == "pair":
            assert self.page.input_value("#reason") == self.reason
        if kind not in self.shots:
            screenshot(self.page, self.tmp, kind if kind == "conversation" else "pair")
            self.shots.add(kind)
        with self.page.expect_navigation():
            if how == "mouse":
                self.page.click("#submit")
            else:
                self.page.keyboard.press("Control+Enter")


def progress(page: Page) -> tuple[int, int]:
    m = re.search(r"Item (\d+) of (\d+)", page.inner_text("#progress"))
    assert m
    return int(m.group(1)), int(m.group(2))


def test_rate_leave_come_back_finish_and_export(browser: Any, tmp_path: Path) -> None:
    setup: Setup = make_study(tmp_path, raters=1, overlap=1, attention=1, limit=2)
    dialogs: list[str] = []
    errors: list[str] = []  # console errors, such as a Content-Security-Policy violation
    with serve(tmp_path / "study") as base:
        link = f"{base}/r/{setup.tokens['rater-1']}"
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(link)
        assert "Welcome, rater-1" in page.inner_text("h1") and "0 of 5" in page.inner_text(".progress-line")
        page.click("#start")
        rater = Rater(page, tmp_path)
        assert progress(page) == (1, 5)
        rater.rate("mouse")
        assert progress(page) == (2, 5)
        rater.rate("keyboard")
        # item 3: one answer, saved as it is given; then the rater leaves
        assert progress(page) == (3, 5)
        kind = rater.kind()
        first = "choice.human_alignment" if kind == "pair" else "score.validation"
        rater.click(first, "B" if kind == "pair" else "2")
        sync_api.expect(page.locator("#status")).to_have_text("Saved")  # (a JS predicate would break the CSP)
        ctx.close()

        ctx = browser.new_context(viewport={"width": 1280, "height": 900})  # another day: nothing kept in the browser
        page = ctx.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(link)
        assert "2 of 5" in page.inner_text(".progress-line") and page.inner_text("#start").startswith("Continue")
        page.click("#start")
        assert progress(page) == (3, 5)
        assert page.locator(f'input[name="{first}"]:checked').get_attribute("value") == ("B" if kind == "pair" else "2")
        rater.page = page
        rater.rate("mouse")
        rater.rate("keyboard")
        rater.rate("mouse")
        assert "All done" in page.inner_text("#all-done")
        page.goto(f"{base}/admin/{setup.admin}")
        row = page.inner_text("#raters tbody tr")
        assert row.split("\t")[:7] == ["rater-1", "5", "5", "0", "1", "0", "0"]
        ctx.close()
    assert dialogs == [] and errors == []
    assert rater.shots == {"pair", "conversation"}

    summary = export_study(setup.study, tmp_path / "humans.csv")
    assert summary["attention_checks_left_out"] == 1
    with (tmp_path / "humans.csv").open(encoding="utf-8") as f:
        pairs = {tuple(r.values()) for r in csv.DictReader(f)}
    assert pairs == rater.pairs and len(pairs) == 2 * 6
    with (tmp_path / "humans-conversations.csv").open(encoding="utf-8") as f:
        scores = {(r["conversation_id"], r["rater"], r["dimension"], r["score"]) for r in csv.DictReader(f)}
    assert scores == rater.scores and len(scores) == 2 * 10


def test_dialogue_html_never_runs(browser: Any, tmp_path: Path) -> None:
    setup = make_study(tmp_path, raters=1, overlap=1)
    token = setup.tokens["rater-1"]
    seen, dialogs = [], []
    with serve(tmp_path / "study") as base:
        page = browser.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for n in range(1, len(setup.study.queue(setup.study.raters()[0].id)) + 1):
            page.goto(f"{base}/r/{token}/item/{n}")
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.locator(".dialogue img, .reply img").count() == 0
            seen.append(page.inner_text("main"))
        page.close()
    assert dialogs == []
    text = "\n".join(seen)
    assert '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> & "quotes"' in text
    assert HISTORIES["regular:1"][0] in text


def test_the_please_answer_banner_is_scrolled_into_view(browser: Any, tmp_path: Path) -> None:
    setup = make_study(tmp_path, raters=1, overlap=1)
    with serve(tmp_path / "study") as base:
        page = browser.new_page(viewport={"width": 1280, "height": 600})
        page.goto(f"{base}/r/{setup.tokens['rater-1']}/item/1")
        rows = page.locator("tr.dim")
        rater = Rater(page, tmp_path)
        for i in range(rows.count() - 1):  # every answer but the last: the first open row is far down the page
            dim = str(rows.nth(i).get_attribute("data-dim"))
            if rater.kind() == "pair":
                rater.click(f"choice.{dim}", "tie")
            else:
                rater.click(f"score.{dim}", "3")
        sync_api.expect(page.locator("#status")).to_have_text("Saved")
        with page.expect_navigation():
            page.click("#submit")
        banner = page.locator(".banner.alert")
        sync_api.expect(banner).to_contain_text("Please answer these before submitting")
        sync_api.expect(banner).to_be_in_viewport(ratio=1)
        assert progress(page) == (1, len(setup.study.queue(setup.study.raters()[0].id)))
        last = str(page.locator("tr.dim").last.get_attribute("data-dim"))  # the keys still answer the open row
        page.keyboard.press("t" if rater.kind() == "pair" else "3")
        name = f"choice.{last}" if rater.kind() == "pair" else f"score.{last}"
        assert page.locator(f'input[name="{name}"]:checked').count() == 1
        page.close()
