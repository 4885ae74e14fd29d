"""Real seekers' messages as examples of how people write in a support chat (a lever of the simulated user's
voice, off by default: ``user_agent: {examples: PATH}``).

From an ESConv file the user gives (ESConv's training talks, never the talks being evaluated: the realism
suite refuses an overlap), the talks whose situation is nearest the profile's story (MiniLM embeddings, the
``embed`` extra) lend one seeker message each (its middle message of at least ``MIN_WORDS`` words); the voice
prompt shows them as other people's messages (``user_voice_examples.txt``). The file is read and its
situations embedded once per process.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from ..data.esconv import EsconvDialog, load_esconv
from ..errors import ConfigError
from ..profiles.schema import Profile
from ..prompts import load_prompt
from .conversation import words

MIN_WORDS = 5


def sample_message(dialog: EsconvDialog) -> str | None:
    """The talk's middle seeker message of at least ``MIN_WORDS`` words (None: it has none)."""
    said = [t.text for t in dialog.merged_turns() if t.speaker == "seeker" and words(t.text) >= MIN_WORDS]
    return said[len(said) // 2] if said else None


@cache
def _bank(path: str) -> tuple[list[str], list[str], np.ndarray]:
    """The talks' ids, their sample messages and their situations' embeddings."""
    try:
        from ..embed import encode
    except ImportError:  # pragma: no cover - the extra is installed for the tests
        raise ConfigError("user_agent.examples needs the embedding model: install emoharbor[embed]") from None
    kept = [(d, m) for d in load_esconv(path) if (m := sample_message(d)) is not None and d.situation.strip()]
    if not kept:
        raise ConfigError(f"user_agent.examples {path}: no talk has a situation and a seeker message to lend")
    vectors = encode([d.situation for d, _ in kept])
    return [d.id for d, _ in kept], [m for _, m in kept], vectors


def same_talks(path: str, dialogs: list[EsconvDialog]) -> list[str]:
    """The ids of ``dialogs`` whose talk is also in the examples file (the same messages in the same order)."""
    lent = {tuple(t.text for t in d.turns) for d in load_esconv(path)}
    return [d.id for d in dialogs if tuple(t.text for t in d.turns) in lent]


def nearest(path: str, story: str, k: int) -> list[str]:
    """The sample messages of the ``k`` talks whose situation is nearest ``story``."""
    from ..embed import encode

    _, said, vectors = _bank(path)
    scores = vectors @ encode([story])[0]
    return [said[i] for i in np.argsort(-scores, kind="stable")[:k]]


def examples_text(path: str | None, profile: Profile, k: int) -> str:
    """The voice prompt's block of examples for ``profile`` ("" without a file)."""
    if not path or k == 0:
        return ""
    lines = "\n".join(f"- {m}" for m in nearest(str(Path(path)), profile.situation.story, k))
    return load_prompt("user_voice_examples").render(examples=lines).strip()
