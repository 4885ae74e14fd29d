"""Security of the rating app (FastAPI TestClient): tokens, one rater against another, HTML in dialogue
text, cross-site posts, headers, and what never appears on a rater's page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("python_multipart")

from fastapi.testclient import TestClient

from emoharbor.errors import EmoharborError
from emoharbor.web.app import create_app
from emoharbor.web.origins import origin_of, served_origins
from web_helpers import XSS, Setup, make_study

ORIGIN = {"origin": "http://testserver"}
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return make_study(tmp_path, attention=2)


@pytest.fixture
def client(setup: Setup, tmp_path: Path) -> TestClient:
    return TestClient(create_app(tmp_path / "study", ["http://testserver"]))


def csrf_of(client: TestClient, token: str, n: int = 1) -> str:
    page = client.get(f"/r/{token}/item/{n}")
    assert page.status_code == 200
    found = CSRF.search(page.text)
    assert found
    return found.group(1)


def pair_position(setup: Setup, token: str) -> int:
    rater = setup.study.rater_by_token(token)
    assert rater is not None
    return next(a.position for a in setup.study.queue(rater.id) if setup.study.item(a.item_id).rated == "pair")


def all_item_text(client: TestClient, token: str, total: int) -> str:
    return "".join(client.get(f"/r/{token}/item/{n}").text for n in range(1, total + 1))


def test_wrong_or_missing_tokens_get_nothing(client: TestClient, setup: Setup) -> None:
    token = setup.tokens["rater-1"]
    paths = ["/", "/r", "/r/", f"/r/{token[:-1]}", f"/r/{token}x", f"/r/{token[:-1]}/item/1", "/docs",
             f"/r/{token.upper()}/instructions", "/admin/", f"/admin/{token}", f"/admin/{setup.admin[:-2]}",
             "/openapi.json", f"/r/{token}/item/0", f"/r/{token}/item/999", f"/r/{token}/item/x"]  # fmt: skip
    for path in paths:
        r = client.get(path)
        assert r.status_code == 404, path
        assert "Help-seeker" not in r.text and "rater-" not in r.text and "Reply A" not in r.text, path
    r = client.post(f"/r/{token[:-1]}/item/1", data={"csrf": "x", "choice.overall": "A"}, headers=ORIGIN)
    assert r.status_code == 404
    assert client.get(f"/admin/{setup.admin}").status_code == 200
    assert client.get(f"/r/{token}").status_code == 200


def test_no_competitor_names_or_ids_on_rater_pages(client: TestClient, setup: Setup) -> None:
    token = setup.tokens["rater-1"]
    rater = setup.study.rater_by_token(token)
    assert rater is not None
    total = len(setup.study.queue(rater.id))
    text = all_item_text(client, token, total) + client.get(f"/r/{token}").text
    text += client.get(f"/r/{token}/instructions").text
    for secret in ["zeta-bot", "omega-bot", "competitor", "regular:", "sup-alpha", "sup-beta", "p1|", "attention",
                   *(it.id for it in setup.study.items())]:  # fmt: skip
        assert secret not in text, secret
    names = re.findall(r'name="([^"]+)"', text)
    assert set(names) <= {"viewport", "referrer", "robots", "csrf", "action", "reason"} | {
        n for n in names if re.fullmatch(r"(choice|strength|score)\.[a-z_]+", n)
    }


def test_one_rater_cannot_read_or_change_anothers_answers(client: TestClient, setup: Setup) -> None:
    t1, t2 = setup.tokens["rater-1"], setup.tokens["rater-2"]
    secret = "only rater two wrote this"
    # rater-2 writes a reason on every pair item
    r2 = setup.study.rater_by_token(t2)
    assert r2 is not None
    for a in setup.study.queue(r2.id):
        if setup.study.item(a.item_id).rated == "pair":
            r = client.post(f"/r/{t2}/item/{a.position}", headers=ORIGIN,
                            data={"csrf": csrf_of(client, t2), "reason": secret, "action": "autosave"})  # fmt: skip
            assert r.status_code == 200 and r.json() == {"saved": 1}
    r1 = setup.study.rater_by_token(t1)
    assert r1 is not None
    assert secret not in all_item_text(client, t1, len(setup.study.queue(r1.id)))
    # rater-1's page form and token cannot write into rater-2's answers
    r = client.post(f"/r/{t2}/item/1", headers=ORIGIN, data={"csrf": csrf_of(client, t1), "reason": "overwritten"})
    assert r.status_code == 403
    n = next(a.position for a in setup.study.queue(r1.id) if setup.study.item(a.item_id).rated == "pair")
    r = client.post(f"/r/{t1}/item/{n}", headers=ORIGIN, data={"csrf": csrf_of(client, t1), "reason": "mine"},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == f"/r/{t1}/item/{n}?saved=1"
    assert all(a["value"] != "overwritten" for a in setup.study.all_answers())
    mine = {(a["rater_id"], a["field"]) for a in setup.study.all_answers() if a["value"] == "mine"}
    assert mine == {(r1.id, "reason")}


def test_dialogue_html_is_shown_as_text(client: TestClient, setup: Setup) -> None:
    token = setup.tokens["rater-1"]
    r1 = setup.study.rater_by_token(token)
    assert r1 is not None
    text = all_item_text(client, token, len(setup.study.queue(r1.id)))
    assert "<script>window" not in text and '<img src="x"' not in text and 'onerror="window' not in text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=&#34;x&#34; onerror=&#34;" in text
    assert re.findall(r"<script[^>]*>", text) == ['<script src="/static/rate.js" defer>'] * len(
        setup.study.queue(r1.id)
    )
    # a rater's own reason with HTML in it comes back escaped too
    n = pair_position(setup, token)
    r = client.post(f"/r/{token}/item/{n}", headers=ORIGIN, data={"csrf": csrf_of(client, token), "reason": XSS})
    assert r.status_code == 200
    page = client.get(f"/r/{token}/item/{n}").text
    assert "&lt;script&gt;window" in page and "<script>window" not in page


def test_posts_need_same_origin_and_the_csrf_token(client: TestClient, setup: Setup) -> None:
    token = setup.tokens["rater-1"]
    good = csrf_of(client, token)
    url = f"/r/{token}/item/{pair_position(setup, token)}"
    data = {"csrf": good, "action": "autosave", "reason": "x"}
    cases = [
        ({}, data),  # neither Origin nor Referer
        ({"origin": "http://evil.example"}, data),
        ({"origin": "null"}, data),
        ({"referer": "http://evil.example/r/x"}, data),
        ({"origin": "http://testserver.evil.example"}, data),
        (ORIGIN, {**data, "csrf": ""}),
        (ORIGIN, {**data, "csrf": good[:-1] + ("0" if good[-1] != "0" else "1")}),
        (ORIGIN, {**data, "csrf": "é" * 64}),
        (ORIGIN, {k: v for k, v in data.items() if k != "csrf"}),
    ]
    for headers, form in cases:
        r = client.post(url, headers=headers, data=form)
        assert r.status_code == 403, (headers, form)
    assert setup.study.all_answers() == []
    assert client.post(url, headers={"referer": f"http://testserver{url}"}, data=data).status_code == 200
    assert client.post(url, headers=ORIGIN, data=data).status_code == 200
    for bad in [{"choice.overall": "C"}, {"strength.overall": "9"}, {"competitor": "human"}, {"action": "drop"},
                {"score.warmth": "3", "choice.overall": "A"}]:  # fmt: skip
        r = client.post(url, headers=ORIGIN, data={"csrf": good, **bad})
        assert r.status_code == 400, bad


def test_strict_headers(client: TestClient, setup: Setup) -> None:
    for path in [f"/r/{setup.tokens['rater-1']}", f"/r/{setup.tokens['rater-1']}/item/1", "/nope",
                 f"/admin/{setup.admin}", "/static/style.css"]:  # fmt: skip
        h = client.get(path).headers
        csp = h["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert h["x-frame-options"] == "DENY" and h["cache-control"] == "no-store"
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "same-origin"


def test_submitted_items_are_locked(client: TestClient, setup: Setup) -> None:
    token = setup.tokens["rater-1"]
    rater = setup.study.rater_by_token(token)
    assert rater is not None
    a = setup.study.queue(rater.id)[0]
    item = setup.study.item(a.item_id)
    csrf = csrf_of(client, token)
    r = client.post(f"/r/{token}/item/1", headers=ORIGIN, data={"csrf": csrf, "action": "submit"})
    assert r.status_code == 422 and "Please answer these before submitting" in r.text
    if item.rated == "pair":
        form = {f"choice.{d}": "tie" for d in [*setup.study.heart_dimensions(), "overall"]}
    else:
        form = {f"score.{d}": "3" for d in ["validation", "warmth", "need_alignment", "style_fit", "specificity",
                                             "attunement", "memory", "autonomy", "helpfulness", "relief"]}  # fmt: skip
    r = client.post(f"/r/{token}/item/1", headers=ORIGIN, data={"csrf": csrf, "action": "submit", **form},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == f"/r/{token}/item/2"  # the next open item
    r = client.post(f"/r/{token}/item/1", headers=ORIGIN, data={"csrf": csrf, "action": "autosave", **form})
    assert r.status_code == 409
    page = client.get(f"/r/{token}/item/1").text
    assert "<fieldset disabled>" in page and "can no longer be changed" in page
    assert "Item 1 of" in page and "1 submitted" in page


def test_origin_is_checked_against_the_served_address_not_the_host_header(tmp_path: Path, setup: Setup) -> None:
    """A page of another site that has its name resolve to this server (DNS rebinding) sends Host and Origin
    that agree with each other: that is no proof the form came from here."""
    app = create_app(tmp_path / "study", ["http://127.0.0.1:8765", "https://rate.example.org"])
    token = setup.tokens["rater-1"]
    local = TestClient(app, base_url="http://127.0.0.1:8765")
    good = csrf_of(local, token)
    url = f"/r/{token}/item/{pair_position(setup, token)}"
    data = {"csrf": good, "action": "autosave", "reason": "x"}
    rebound = {"host": "evil.example:8765", "origin": "http://evil.example:8765"}
    assert local.post(url, headers=rebound, data=data).status_code == 403
    assert local.post(url, headers={"origin": "http://localhost:8765"}, data=data).status_code == 403
    for origin in ["http://127.0.0.1:8765", "https://rate.example.org", "https://RATE.example.org:443"]:
        assert local.post(url, headers={"origin": origin}, data=data).status_code == 200, origin
    assert local.post(url, headers={"referer": f"https://rate.example.org{url}"}, data=data).status_code == 200
    with pytest.raises(EmoharborError, match="needs the address it is served at"):
        create_app(tmp_path / "study", ["not a url"])


def test_the_served_origins() -> None:
    assert origin_of("HTTP://Example.org/x") == "http://example.org:80" and origin_of("ftp://x") is None
    assert origin_of("http://[::1]:9/") == "http://[::1]:9" and origin_of("http://x:port") is None
    assert served_origins("127.0.0.1", 8765, []) == ["http://127.0.0.1:8765", "http://localhost:8765"]
    assert served_origins("0.0.0.0", 80, ["https://rate.example.org/"]) == [
        "http://127.0.0.1:80", "http://localhost:80", "https://rate.example.org:443"]  # fmt: skip
    assert served_origins("10.0.0.5", 8000, []) == ["http://10.0.0.5:8000"]
