"""Two raters rating at the same time against a real uvicorn server on 127.0.0.1: every answer, posted
one field per request from many threads at once, is stored; then every item is submitted."""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("python_multipart")

import httpx

from emoharbor.assess.dimensions import keys as conversation_keys
from web_helpers import make_study, serve

CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
THREADS_PER_RATER = 6


def test_two_raters_at_once_lose_no_answer(tmp_path: Path) -> None:
    setup = make_study(tmp_path, raters=2, overlap=2, attention=2)
    study = setup.study
    dims = [*study.heart_dimensions(), "overall"]
    rng = random.Random(3)
    expected: dict[tuple[str, str], dict[str, str]] = {}
    posts: list[tuple[str, str, int, str, str, str]] = []  # (rater name, token, position, csrf-less field, value)
    for name, token in setup.tokens.items():
        rater = study.rater_by_token(token)
        assert rater is not None
        for a in study.queue(rater.id):
            kind = study.item(a.item_id).rated
            if kind == "pair":
                form = {f"choice.{d}": rng.choice(["A", "B", "tie"]) for d in dims}
                form |= {f"strength.{d}": str(rng.randint(1, 5)) for d in dims}
                form["reason"] = f"{name} on item {a.position}: ünïcode & <b>tags</b>"
            else:
                form = {f"score.{d}": str(rng.randint(1, 5)) for d in conversation_keys()}
            expected[(rater.id, a.item_id)] = form
            posts += [(name, token, a.position, a.item_id, field, value) for field, value in form.items()]
    rng.shuffle(posts)  # the two raters' requests interleave

    with serve(tmp_path / "study") as base:
        clients = {name: httpx.Client(base_url=base, headers={"origin": base}) for name in setup.tokens}
        csrf = {}
        for name, token in setup.tokens.items():
            page = clients[name].get(f"/r/{token}/item/1")
            found = CSRF.search(page.text)
            assert found
            csrf[name] = found.group(1)

        def post(job: tuple[str, str, int, str, str, str]) -> int:
            name, token, n, _, field, value = job
            r = clients[name].post(
                f"/r/{token}/item/{n}", data={"csrf": csrf[name], "action": "autosave", field: value}
            )
            return r.status_code

        with ThreadPoolExecutor(THREADS_PER_RATER * 2) as pool:
            codes = list(pool.map(post, posts))
        assert codes == [200] * len(posts)

        def submit(job: tuple[str, str, int]) -> int:
            name, token, n = job
            r = clients[name].post(f"/r/{token}/item/{n}", data={"csrf": csrf[name], "action": "submit"})
            return r.status_code

        jobs = sorted({(name, token, n) for name, token, n, *_ in posts})
        with ThreadPoolExecutor(THREADS_PER_RATER * 2) as pool:
            assert set(pool.map(submit, jobs)) == {303}
        for c in clients.values():
            c.close()

    stored: dict[tuple[str, str], dict[str, str]] = {}
    for row in study.all_answers():
        stored.setdefault((row["rater_id"], row["item_id"]), {})[row["field"]] = row["value"]
    assert stored == expected
    assert len(posts) == sum(len(f) for f in expected.values()) > 200
    assert all(a.status == "submitted" for a in study.assignments())
    assert all(row["revisions"] == 1 for row in study.all_answers())
