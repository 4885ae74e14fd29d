"""The mean episode reward of a policy on held-out contexts, during training: a TRL callback
(``HeldOutCurve``) that every ``every`` steps (and before the first) plays ``samples`` episodes per held-out
context with the policy as it stands, and appends the step's rewards to a JSONL file. A step already in the
file is not played again, so a resumed stage goes on with its curve. ``bench/episodes_learning.py`` reads it.
A user agent that calls a model (the chain user) has it opened on a loop of its own (``UserLoop``), which
lives through the training: the callback runs between TRL's steps, outside any event loop."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..models.base import ChatModel
from ..models.spec import ModelSpec
from ..reward.context import RewardContext
from ..reward.settings import RewardSettings
from ..simulate.agents import perceiving_user
from .env import Episode
from .rollout import Run, generate_with, play
from .settings import EpisodeSettings

if TYPE_CHECKING:
    from .judged import EpisodeJudge

T = TypeVar("T")


class UserLoop:
    """The simulated user's model (``spec``; None: an agent that calls none) opened on an event loop in a
    thread of its own; ``run`` runs a coroutine on it to its end. ``close()`` closes the model (and stops the
    embedded model's server) and the loop."""

    def __init__(self, spec: ModelSpec | None) -> None:
        from ..models.pool import ModelPool

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="emoharbor-user", daemon=True)
        self.thread.start()
        self.pool = ModelPool(cache_path=True)
        try:
            self.model: ChatModel | None = self.run(self.pool.get(spec, "user")) if spec is not None else None
        except BaseException:
            self.close()
            raise

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        try:
            self.run(self.pool.aclose())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()


def held_out_episodes(model: Any, tok: Any, contexts: list[RewardContext], system: str, reward: RewardSettings,
                      settings: EpisodeSettings, *, user: ChatModel | None = None, judge: EpisodeJudge | None = None,
                      samples: int = 4, max_new_tokens: int = 64, temperature: float = 1.0,
                      run: Run = asyncio.run) -> list[dict[str, Any]]:  # fmt: skip
    """``samples`` episodes per context with ``model`` (sampled at ``temperature``): each one's record, with
    its replies. ``judge``: the judge of ``reward: judge`` (``judged.open_judge``); ``user`` and ``judge``
    live on the loop that ``run`` runs coroutines on (``UserLoop.run``)."""
    from transformers import GenerationConfig

    eos = [tok.eos_token_id]
    config = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature,  # type: ignore[no-untyped-call]
                              eos_token_id=eos, pad_token_id=tok.pad_token_id)  # fmt: skip
    chosen = [c for c in contexts for _ in range(samples)]
    episodes = [Episode(c, perceiving_user(user, c.profile, reward.user_agent, "held-out episodes"), reward, settings,
                        seed=reward.seed, judge=judge) for c in chosen]  # fmt: skip
    was_training = model.training
    model.eval()
    try:
        talks = play([c.messages(system) for c in chosen], episodes, tok,
                     generate_with(model, tok, config, eos, model.device), run, eos)  # fmt: skip
    finally:
        model.train(was_training)
    return [t.result.to_dict() for t in talks]


def read_curve(path: Path) -> dict[int, list[dict[str, Any]]]:
    """step -> the held-out episodes played at it."""
    rows = map(json.loads, path.read_text(encoding="utf-8").splitlines()) if path.is_file() else []
    return {int(row["step"]): row["episodes"] for row in rows}


def held_out_callback(path: Path, every: int, contexts: list[RewardContext], system: str, reward: RewardSettings,
                      settings: EpisodeSettings, *, user: UserLoop | None = None, **play_kw: Any) -> Any:  # fmt: skip
    """A TRL (transformers) callback that writes the held-out curve to ``path``; ``user``: the user's model
    on its loop, for an agent that calls one (the caller closes it)."""
    from transformers import TrainerCallback

    if user is not None:
        play_kw.update(user=user.model, run=user.run)

    def at(step: int, model: Any, tok: Any) -> None:
        if step in read_curve(path):
            return
        eps = held_out_episodes(model, tok, contexts, system, reward, settings, **play_kw)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, "episodes": eps}, ensure_ascii=False) + "\n")

    class HeldOutCurve(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if state.is_world_process_zero and state.global_step == 0:
                at(0, kw["model"], kw["processing_class"])
            return control

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            last = state.max_steps and state.global_step >= state.max_steps
            if state.is_world_process_zero and (state.global_step % every == 0 or last):
                at(state.global_step, kw["model"], kw["processing_class"])
            return control

    return HeldOutCurve()
