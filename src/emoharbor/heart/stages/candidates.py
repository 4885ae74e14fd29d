"""Candidate next replies: one per (history, competitor). Models write theirs; the human's is the real one."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ... import userfiles
from ...config import SupporterSpec
from ...errors import ConfigError
from ...models.base import ChatModel, Message, ModelCallError
from ...prompts import load_prompt
from ...simulate.conversation import words
from ...simulate.supporter import supporter_prompt
from ..config import resolve_path
from ..histories import SEEKER, History

Events = list[tuple[str, str]]
LABEL = re.compile(r"^\s*\**\s*(?:supporter|assistant|response|reply|listener|helper)\s*\**\s*:\s*\**\s*", re.I)
QUOTES = ('"', "“", "”")
SHOWN = "heart_history"  # the words a history is shown in: its situation line, its speakers


def transcript(history: History) -> str:
    said = load_prompt(SHOWN).entries()
    seeker, supporter = said["seeker"].render(), said["supporter"].render()
    return "\n".join(f"{seeker if t.speaker == SEEKER else supporter}: {t.text}" for t in history.turns)


def context_line(history: History, show_situation: bool) -> str:
    if show_situation and history.situation:
        return load_prompt(SHOWN).entries()["situation"].render(situation=history.situation) + "\n"
    return ""


def system_prompt(spec: SupporterSpec, base_dir: Path) -> tuple[str, str]:
    """The candidate's system prompt and its version (part of the cache key). None or ``builtin:heart``:
    the HEART candidate prompt; ``builtin:default`` / ``builtin:personal``: the EmoHarbor supporter
    prompts; ``@PATH``: a file (relative to the config); anything else: the text itself."""
    if spec.system_prompt in (None, "builtin:heart"):
        p = load_prompt("heart_candidate_system")
        return p.text.strip(), p.version
    text = spec.system_prompt
    if text.startswith("builtin:"):
        try:
            p = supporter_prompt(text)
        except ConfigError as e:
            raise ConfigError(f"candidate {spec.name}: {e}, or builtin:heart") from None
        return p.text.strip(), p.version
    if text.startswith("@"):
        path = resolve_path(base_dir, text[1:])
        text = userfiles.read_text(path, f"candidate {spec.name}: system prompt file")
    return text.strip(), f"custom@{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def candidate_messages(history: History, system: str, show_situation: bool) -> list[Message]:
    user = load_prompt("heart_candidate_user").render(
        context=context_line(history, show_situation), transcript=transcript(history)
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user.strip()}]


def clean_reply(text: str) -> tuple[str, Events]:
    """Strip a speaker label and wrapping quotes the model added; each strip is counted."""
    events: Events = []
    out = text.strip()
    if LABEL.match(out):
        out = LABEL.sub("", out, count=1).strip()
        events.append(("candidate_label_stripped", ""))
    if len(out) >= 2 and out[0] in QUOTES and out[-1] in QUOTES:
        out = out[1:-1].strip()
        events.append(("candidate_quotes_stripped", ""))
    return " ".join(out.split()), events


def record(history: History, competitor: str, status: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "history_id": history.id,
        "subset": history.subset,
        "competitor": competitor,
        "status": status,
        "text": text,
        "words": words(text),
        **extra,
    }


def given_candidate(history: History, competitor: str, reply: str | None, source: str) -> tuple[dict[str, Any], Events]:
    """A reply the file gives (the human supporter's, or one of a file of rated replies); none or an empty one
    is unscored (``missing``), never judged."""
    text = (reply or "").strip()
    if not text:
        why = f"the file has no {competitor} reply" if reply is None else f"the {competitor} reply is empty"
        return record(history, competitor, "unscored", reason="missing", error=why), [
            (f"{competitor}_reply_missing", history.id)
        ]
    return record(history, competitor, "ok", text, source=source), []


async def model_candidate(
    model: ChatModel,
    spec: SupporterSpec,
    history: History,
    system: tuple[str, str],
    *,
    show_situation: bool,
    seed: int,
) -> tuple[dict[str, Any], Events]:
    messages = candidate_messages(history, system[0], show_situation)
    version = f"{load_prompt('heart_candidate_user').version}+{load_prompt(SHOWN).version}+{system[1]}"
    try:
        r = await model.chat(messages, seed=seed, prompt_version=version)
    except ModelCallError as e:
        return record(history, spec.name, "error", error=str(e)[:500]), [("candidate_error", str(e)[:200])]
    text, events = clean_reply(r.text)
    if r.finish_reason == "length":
        events.append(("candidate_truncated", history.id))
    if not text:
        events.append(("candidate_empty", history.id))
        return record(history, spec.name, "unscored", reason="empty", raw=r.text[:500]), events
    return record(
        history,
        spec.name,
        "ok",
        text,
        source="model",
        model=spec.model,
        finish_reason=r.finish_reason,
        raw=r.text if r.text.strip() != text else "",
    ), events
