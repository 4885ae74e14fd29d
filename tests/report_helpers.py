"""Helpers for the report and validate tests: invented ESConv-format records (never copies of the corpus),
a scripted Chain-of-Agent user and judges, and a small EmoHarbor run against the fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emoharbor.assess.dimensions import keys
from emoharbor.config import RunConfig
from emoharbor.evaluate import run_evaluation
from emoharbor.testing.fake_server import FakeOpenAIServer

SHARED_ESCONV = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "esconv"


def invented_record(empathy: int, *, supporter_turns: int = 3, raw: bool = False) -> dict[str, Any]:
    """A made-up conversation in the ESConv layout: the first supporter turn says "zest" empathy-1 times;
    the seeker rates empathy and relevance ``empathy``, intensity 5 -> 6 - empathy."""
    seeker = [f"I keep worrying about my job, day {i}." for i in range(supporter_turns)]
    supporter = [("zest " * (empathy - 1) + "That sounds hard.").strip()] + [
        f"What happened next on day {i}?" for i in range(1, supporter_turns)
    ]
    turns: list[dict[str, Any]] = []
    for s, p in zip(seeker, supporter, strict=True):
        if raw:
            turns += [
                {"speaker": "seeker", "content": s, "annotation": {}},
                {"speaker": "supporter", "content": p, "annotation": {"strategy": "Question"}},
            ]
        else:
            turns += [{"speaker": "usr", "text": s}, {"speaker": "sys", "text": p, "strategy": "Question"}]
    survey = {
        "initial_emotion_intensity": "5",
        "final_emotion_intensity": str(6 - empathy),
        "empathy": str(empathy),
        "relevance": str(empathy),
    }
    return {
        "experience_type": "Current Experience",
        "emotion_type": "anxiety",
        "problem_type": "job crisis",
        "situation": "My manager said my team may be cut. I cannot sleep.",
        "survey_score": {"seeker": survey},
        "dialog": turns,
    }


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _latest_supporter_line(messages: list[dict[str, str]]) -> str:
    """The last "Supporter:" line of the conversation the simulated user's system message shows."""
    lines = [ln for m in messages for ln in m["content"].splitlines() if ln.startswith("Supporter:")]
    return lines[-1] if lines else ""


class ValidateScript:
    """Appraiser, Feeler and both judges, scripted: the user-judge scores 1 + (times "zest" was said), the
    third-party judge 5 minus that; the Feeler lowers intensity after a "zest" message. The user-judge answers
    no JSON at all for a transcript containing ``unparsable_marker``."""

    def __init__(self, unparsable_marker: str = "") -> None:
        self.marker = unparsable_marker

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> str:
        task = messages[-1]["content"]
        text = "\n".join(m["content"] for m in messages)
        if "Step: appraise." in task:
            return json.dumps(
                {
                    "understood": "my worry",
                    "needs_met": ["heard"],
                    "needs_missed": ["a plan"],
                    "about_me": True,
                    "disliked": False,
                    "fit": "mixed",
                    "crisis_referral": False,
                }
            )
        if "Step: feel." in task:
            down = "zest" in _latest_supporter_line(messages)
            return json.dumps(
                {
                    "thought": "they are kind" if down else "hm",
                    "better": 7 if down else 3,
                    "trust": 6 if down else 4,
                }
            )
        kinds = text.count("zest")
        if "the chat is over" in task:
            if self.marker and self.marker in text:
                return "I would rather not give numbers."
            score = max(1, min(5, 1 + kinds))
        elif "expert evaluator" in task:
            score = max(1, min(5, 5 - kinds))
        else:
            return "That sounds hard."
        return json.dumps({k: {"score": score, "evidence": f"said zest {kinds} times"} for k in keys()})


def fake_spec(url: str) -> dict[str, Any]:
    return {"model": "fake", "base_url": url, "max_retries": 1, "timeout_s": 10}


async def small_run(folder: Path, srv: FakeOpenAIServer, profiles: str = "builtin:p00[1-2]*", name: str = "t") -> Path:
    """Built-in profiles (default: two) x two supporters (plain and personal), 3 turns, against the fake server."""
    fake = fake_spec(srv.base_url)
    personal = {**fake, "name": "personal", "system_prompt": "builtin:personal"}
    roles = {"supporter": [{**fake, "name": "plain"}, personal], "user": fake, "judge": fake}
    cfg = RunConfig.model_validate({"name": name, "roles": roles, "profiles": [profiles], "max_turns": 3,
                                    "concurrency": 4})  # fmt: skip
    await run_evaluation(cfg, folder, progress=False, cache_path=None)
    return folder


async def make_runs(base: Path) -> dict[str, Path]:
    """An EmoHarbor run (fake server) and a validate run over four invented records (scripted chain)."""
    from emoharbor.data.esconv import load_esconv
    from emoharbor.models.scripted import ScriptedModel
    from emoharbor.store.run_store import RunStore
    from emoharbor.validate.run import ValidateOptions, replay_and_assess

    with FakeOpenAIServer() as srv:
        await small_run(base / "eh", srv)
    path = write_jsonl(base / "mine.jsonl", [invented_record(e) for e in (1, 2, 4, 5)])
    opts = ValidateOptions(esconv=[path], judges=["user", "third_party"], max_supporter_turns=2)
    store = RunStore.create_or_resume(base / "val", "validate", opts.resolved(), "h")
    model = ScriptedModel(ValidateScript())
    judges = opts.make_judges()
    for d in load_esconv(path):
        await replay_and_assess(store, d, opts, model, judges, {j.name: model for j in judges})
    store.close()
    return {"eh": base / "eh", "val": base / "val"}
