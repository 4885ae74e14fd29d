"""Fixtures for the rating-app tests: a tiny HEART-like run and EmoHarbor-like run written with RunStore
(dialogue text written for these tests), a study with invited raters, and a real uvicorn server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from emoharbor.config import RunConfig
from emoharbor.heart.config import HeartConfig
from emoharbor.heart.histories import History, Turn
from emoharbor.heart.plan import HeartPlan, cards_of
from emoharbor.heart.stages import pipeline
from emoharbor.heart.stages.candidates import record
from emoharbor.simulate.conversation import Conversation
from emoharbor.simulate.conversation import Turn as ConvTurn
from emoharbor.store.run_store import RunStore
from emoharbor.web.assign import assign
from emoharbor.web.build import create_study
from emoharbor.web.study import Study

XSS = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> & "quotes"'
HISTORIES = {
    "regular:0": [
        "Hi, what brings you here today?",
        "My flatmate keeps eating my food and I'm too shy to say anything.",
    ],
    "regular:1": ["I snapped at my kid this morning and I feel awful.", "What happened?", f"He spilled juice. {XSS}"],
    "regular:2": ["Work has been so quiet I'm worried they'll let me go."],
}
REPLIES = {
    "human": {
        "regular:0": "That sounds frustrating, and speaking up can feel really awkward. What would you like to say?",
        "regular:1": "Mornings can be so stressful. It's clear you care a lot about him.",
        "regular:2": "That uncertainty is hard to sit with. Has anything been said to you?",
    },
    "zeta-bot": {
        "regular:0": "It makes sense you feel stuck. Maybe a short note on the fridge could start the talk?",
        "regular:1": "Feeling awful shows how much you love him. You could tell him you're sorry.",
        "regular:2": "Worrying about your job is exhausting. What would help you feel steadier this week?",
    },
    "omega-bot": {
        "regular:0": "Just tell them to stop.",
        "regular:1": f"Kids spill things. {XSS}",
        "regular:2": "",  # an empty reply: its pairs are not usable
    },
}
COMPETITORS = ["human", "zeta-bot", "omega-bot"]
CONVERSATIONS = {
    "p1|sup-alpha|0": [("user", "I've been feeling left out since my friends started a new group chat."),
                  ("supporter", "Being left out by people you care about really stings. How did you find out?"),
                  ("user", "I saw a screenshot. Nobody mentioned it to me.")],
    "p2|sup-beta|0": [("user", "My exam results came out and they're worse than I hoped."),
                   ("supporter", f"Results aren't everything. {XSS}"),
                   ("user", "I guess. I still feel bad.")],
}  # fmt: skip
PAIR_COUNT = 7  # 3 + 3 + 1 (omega-bot's empty reply leaves one pair on regular:2)


def heart_run(folder: Path) -> Path:
    config = HeartConfig.model_validate({
        "histories": [{"path": "unused.json"}],
        "candidates": [{"model": "scripted", "name": "zeta-bot"}, {"model": "scripted", "name": "omega-bot"}],
        "judges": [{"model": "scripted", "name": "fair"}],
    })  # fmt: skip
    store = pipeline.open_run(folder, HeartPlan(config, folder, str(folder), cards_of(config)))  # histories put below
    try:
        for hid, lines in HISTORIES.items():
            speakers = ["seeker" if (len(lines) - 1 - i) % 2 == 0 else "supporter" for i in range(len(lines))]
            h = History(hid, "regular", "test", [Turn(s, t) for s, t in zip(speakers, lines, strict=True)],
                        human_reply=REPLIES["human"][hid])  # fmt: skip
            store.put("history", (hid,), h.to_dict())
            for comp in COMPETITORS:
                text = REPLIES[comp][hid]
                store.put("candidate", (hid, comp), record(h, comp, "ok" if text else "unscored", text))
    finally:
        store.close()
    return folder


def emoharbor_run(folder: Path) -> Path:
    cfg = RunConfig()
    store = RunStore.create_or_resume(folder, "emoharbor", cfg.resolved(), cfg.config_hash())
    try:
        for key, turns in CONVERSATIONS.items():
            profile, supporter, _ = key.split("|")
            conv = Conversation(id=key, profile_id=profile, supporter=supporter,
                                turns=[ConvTurn(speaker=s, text=t) for s, t in turns])  # type: ignore[arg-type]  # fmt: skip
            store.put("conversation", (profile, supporter, "0"), conv.model_dump(mode="json"))
        broken = Conversation(id="p3|sup-alpha|0", profile_id="p3", supporter="sup-alpha", termination="error")
        store.put("conversation", ("p3", "sup-alpha", "0"), broken.model_dump(mode="json"))
    finally:
        store.close()
    return folder


@dataclass
class Setup:
    study: Study
    tokens: dict[str, str]  # rater name -> personal token
    admin: str
    heart: Path


def make_study(
    tmp: Path,
    *,
    raters: int = 2,
    overlap: int = 2,
    conversations: bool = True,
    attention: int = 0,
    limit: int | None = None,
) -> Setup:
    heart = heart_run(tmp / "heart")
    emo = emoharbor_run(tmp / "emo") if conversations else None
    study, _ = create_study(tmp / "study", heart_run=heart, emoharbor_run=emo, overlap=overlap, attention=attention,
                            limit=limit, seed=1)  # fmt: skip
    invited = study.add_raters([f"rater-{i + 1}" for i in range(raters)])
    assign(study, overlap, 1)
    return Setup(study, {r.name: tok for r, tok in invited}, study.new_admin_token(), heart)


def reply_owner(text: str, history_id: str | None = None) -> str:
    """The competitor whose reply this is (the tests read it off the page)."""
    owners = [c for c in COMPETITORS for h, t in REPLIES[c].items() if t and t == text and history_id in (None, h)]
    assert len(owners) == 1, (text, owners)
    return owners[0]


def history_of(first_line: str) -> str:
    return next(h for h, lines in HISTORIES.items() if lines[0] == first_line)


@contextmanager
def serve(study_folder: Path) -> Iterator[str]:
    """Run the rating app over ``study_folder`` with uvicorn on 127.0.0.1 in a thread; yields the base URL."""
    import uvicorn

    from emoharbor.web.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(study_folder, [f"http://127.0.0.1:{port}"])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def shown_label(side: str, first: str) -> str:
    """The button (A = left, B = right, or tie) that picks ``side`` ("a" | "b" | "tie") given whose reply is A."""
    return "tie" if side == "tie" else ("A" if side == first else "B")


def pair_form(sides: dict[str, str], first: str, strength: str = "3", reason: str = "") -> dict[str, str]:
    form = {"reason": reason}
    for dim, side in sides.items():
        form[f"choice.{dim}"] = shown_label(side, first)
        if side != "tie":
            form[f"strength.{dim}"] = strength
    return form
