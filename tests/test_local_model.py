"""The real embedded model, local:smollm2, through llama.cpp's own server (xllamacpp), end to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emoharbor.models.pool import ModelPool
from emoharbor.models.spec import ModelSpec
from emoharbor.models.structured import ask_json
from emoharbor.store.run_store import RunStore, call_sink

pytestmark = pytest.mark.local_model


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not alive
        return f.read().split()[2] != "Z"


async def test_smollm2_chat_and_json_through_the_server(tmp_path: Path) -> None:
    store = RunStore.create_or_resume(tmp_path / "run", "test", {}, "h")
    spec = ModelSpec(model="local:smollm2", max_tokens=24, temperature=0.0)
    async with ModelPool(cache_path=tmp_path / "cache.sqlite", sink=call_sink(store)) as pool:
        model = await pool.get(spec, "supporter")
        server = next(iter(pool._servers.values()))
        assert server.proc is not None
        pid = server.proc.pid
        r = await model.chat([{"role": "user", "content": "Say hello."}])
        schema = {
            "type": "object",
            "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
            "required": ["score"],
        }
        js = await ask_json(model, [{"role": "user", "content": "Rate the weather from 1 to 5 as JSON."}], schema)
        again = await model.chat([{"role": "user", "content": "Say hello."}])
    assert r.text.strip() and r.usage.completion_tokens > 0 and r.endpoint.startswith("http://127.0.0.1:")
    assert js.data is not None and js.data["score"] in (1, 2, 3, 4, 5)  # grammar-constrained by the schema
    assert again.cached and again.text == r.text
    assert not alive(pid), "the server must stop when the run ends"
    calls = store.calls()
    assert [c["role"] for c in calls] == ["supporter"] * len(calls) and calls[0]["completion_tokens"] > 0


async def test_probability_weighted_scores_on_the_embedded_server(tmp_path: Path) -> None:
    """llama.cpp's server returns log-probabilities under its JSON grammar (from the logits before the
    grammar: the alternatives include tokens that are not scores, which the renormalisation drops)."""
    from emoharbor.assess.cards import load_card
    from emoharbor.assess.judge import check_logprobs, judge_conversation
    from emoharbor.simulate.conversation import Conversation, Turn

    card = load_card("third_party_overall")
    turns = [Turn(speaker="user", text="I failed my exam."), Turn(speaker="supporter", text="That must hurt.")]
    conv = Conversation(id="c", profile_id="p", supporter="s", turns=turns)
    async with ModelPool(cache_path=None) as pool:
        model = await pool.get(ModelSpec(model="local:smollm2", temperature=0.0), "judge")
        await check_logprobs(card, model)
        rec = await judge_conversation(card, model, "third_party_overall:local:smollm2", conv, None)
    assert rec["status"] == "ok" and rec["expected_error"] == ""
    probs = rec["probs"]["overall"]
    assert set(probs) <= {1, 2, 3, 4, 5} and sum(probs.values()) == pytest.approx(1.0)
    assert 1.0 <= rec["expected"]["overall"] <= 5.0 and rec["scores"]["overall"] in probs


def test_server_stops_when_emoharbor_is_interrupted(tmp_path: Path) -> None:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONFAULTHANDLER": "1"}
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "emoharbor.cli",
            "chat",
            "--profile",
            "builtin:p001*",
            "--supporter",
            "local:smollm2",
            "--user",
            "local:smollm2",
            "--max-turns",
            "30",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = None
    deadline = time.monotonic() + 120
    while child is None and time.monotonic() < deadline:
        out = subprocess.run(
            ["pgrep", "-P", str(p.pid), "-f", "emoharbor.models.native_server"], capture_output=True, text=True
        )
        child = int(out.stdout.split()[0]) if out.stdout.strip() else None
        time.sleep(0.2)
    assert child is not None, "the local server did not start"
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGABRT)  # the fault handler prints where every thread is
        _, err = p.communicate(timeout=30)
        pytest.fail(f"emoharbor did not stop within 60 s of Ctrl-C; where it was: {err[-4000:]}")
    assert p.returncode == 130 and "Traceback" not in err
    time.sleep(0.5)
    assert not alive(child)
