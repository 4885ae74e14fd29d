"""Episodes as TRL's ``rollout_func`` (``GRPOTrainer(rollout_func=EpisodeRollout(...))``, TRL 1.16, experimental).

TRL hands it this process's prompts (each context's prompt, repeated ``num_generations`` times); for each the
policy writes every supporter turn (the chat template of the talk so far, one turn of at most
``max_completion_length`` tokens, sampled with the trainer's generation settings) and the user agent answers
(``env.Episode``), until the episode is done (with ``reward: judge``, a judge then rates the talk). What it
returns: ``prompt_ids`` (the first prompt), ``completion_ids`` (the whole talk after it: the policy's turns as
it wrote them, token for token, and between them the template's tokens and the user's messages), ``env_mask``
(1 on the policy's tokens, 0 on the rest: TRL multiplies it into the loss mask), ``logprobs`` None
(in-process generation), and ``episode`` (each episode's record and reward as JSON), which TRL passes to the
reward function (``reward_func``).

The policy generates in this process (``trainer.model``; every active episode's turn in one batch). Under
DDP each process plays its own episodes; FSDP and ZeRO-3 gather the weights for each ``generate`` in every
process at once, which episodes of different lengths would not do in step, so they are refused, as is TRL's
vLLM generation (the same collective calls): docs/evolve.md has the GPU recipe that would need it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import EmoharborError
from ..models.base import ChatModel, Message
from ..models.spec import ModelSpec
from ..reward.context import RewardContext
from ..reward.settings import RewardSettings
from ..simulate.agents import perceiving_user, user_agent
from .env import Episode, EpisodeResult, Step
from .settings import EpisodeSettings

if TYPE_CHECKING:
    from ..assess.stage import Judge
    from .judged import EpisodeJudge

T = TypeVar("T")
Generate = Callable[[list[list[int]]], list[list[int]]]  # token ids of each prompt -> the ids of one turn each
Run = Callable[[Coroutine[Any, Any, Any]], Any]  # runs a coroutine to its end (on the loop the user lives in)
SENTINEL = "\u2063EMOHARBOR_TURN\u2063"  # stands for a reply's text while the template around it is read


@dataclass
class Talk:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1: the policy's token; 0: the template's or the user's
    replies: list[str]  # the policy's turns, as the user read them
    result: EpisodeResult


def prompt_key(messages: Sequence[Message]) -> str:
    return json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], sort_keys=True)


def template_ids(tok: Any, messages: list[Message], *, generation_prompt: bool) -> list[int]:
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    return list(tok(text, add_special_tokens=False)["input_ids"])


def between_turns(tok: Any, messages: list[Message], user: str, *, closed: bool) -> list[int]:
    """The tokens after a policy turn that answered ``messages`` and before its next: the template's close of
    the turn (less the end-of-turn token, when the policy wrote it: ``closed``), the user's message ``user``,
    and the header of the next turn."""
    said = [*messages, {"role": "assistant", "content": SENTINEL}]
    reply_end = tok.apply_chat_template(said, tokenize=False)
    following = tok.apply_chat_template([*said, {"role": "user", "content": user}], tokenize=False,
                                        add_generation_prompt=True)  # fmt: skip
    if not following.startswith(reply_end) or SENTINEL not in reply_end:
        raise EmoharborError("episodes: the policy's chat template does not extend a talk turn by turn (the text "
                             "of a conversation is not a prefix of the same conversation one turn longer)")  # fmt: skip
    close = reply_end[reply_end.rindex(SENTINEL) + len(SENTINEL) :]
    if closed and tok.eos_token and close.startswith(tok.eos_token):
        close = close[len(tok.eos_token) :]
    return list(tok(close + following[len(reply_end) :], add_special_tokens=False)["input_ids"])


def play(prompts: list[list[Message]], episodes: list[Episode], tok: Any, generate: Generate, run: Run,
         eos: Sequence[int]) -> list[Talk]:  # fmt: skip
    """Every episode played to its end, the policy's turns generated together (one batch per turn)."""
    msgs = [list(p) for p in prompts]
    prompt_ids = [template_ids(tok, p, generation_prompt=True) for p in msgs]
    completion: list[list[int]] = [[] for _ in msgs]
    mask: list[list[int]] = [[] for _ in msgs]
    replies: list[list[str]] = [[] for _ in msgs]
    for e in episodes:
        e.reset()
    active = list(range(len(msgs)))
    while active:
        turns = generate([prompt_ids[i] + completion[i] for i in active])
        texts = [tok.decode(t, skip_special_tokens=True).strip() for t in turns]

        async def answer(pairs: list[tuple[int, str]]) -> list[Step]:
            return list(await asyncio.gather(*(episodes[i].step(text) for i, text in pairs)))

        steps = run(answer(list(zip(active, texts, strict=True))))
        still = []
        for i, ids, text, step in zip(active, turns, texts, steps, strict=True):
            completion[i] += ids
            mask[i] += [1] * len(ids)
            replies[i].append(text)
            if episodes[i].done:
                continue
            env = between_turns(tok, msgs[i], step.user, closed=bool(ids) and ids[-1] in eos)
            msgs[i] += [{"role": "assistant", "content": text}, {"role": "user", "content": step.user}]
            completion[i] += env
            mask[i] += [0] * len(env)
            still.append(i)
        active = still
    return [Talk(prompt_ids[i], completion[i], mask[i], replies[i], episodes[i].result()) for i in range(len(msgs))]


def generate_with(model: Any, tok: Any, generation_config: Any, eos: Sequence[int], device: Any) -> Generate:
    """One turn for each prompt from ``model`` (left-padded batch, no gradient), each cut after its first
    end-of-turn token."""

    def generate(batch: list[list[int]]) -> list[list[int]]:
        import torch

        width = max(len(x) for x in batch)
        pad = tok.pad_token_id
        ids = torch.tensor([[pad] * (width - len(x)) + x for x in batch], device=device)
        att = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=device)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=att, generation_config=generation_config)
        rows = out[:, width:].tolist()
        return [row[: next((k + 1 for k, t in enumerate(row) if t in eos), len(row))] for row in rows]

    return generate


def trainer_generate(trainer: Any) -> Generate:
    """The trainer's policy as it stands, with TRL's generation settings (``generate_with`` on the unwrapped model)."""
    from trl.models.utils import unwrap_model_for_generation

    def generate(batch: list[list[int]]) -> list[list[int]]:
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                         gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                         generation_kwargs=trainer.generation_kwargs) as model:  # fmt: skip
            return generate_with(model, trainer.processing_class, trainer.generation_config, trainer.eos_token_ids,
                                 trainer.accelerator.device)(batch)  # fmt: skip

    return generate


class EpisodeRollout:
    """TRL's ``rollout_func``: ``contexts`` are the training set's (each prompt is one of theirs, as
    ``RewardContext.messages(system, max_context_turns)`` made it); ``user`` the simulated user's model (a spec
    opened on the trainer's event loop, a ChatModel, or None for an agent that calls none). ``judge``: the
    judge of ``reward: judge`` (``judged.episode_judge``), its spec opened likewise, or ``judge_model`` (a
    ChatModel in its place)."""

    def __init__(self, contexts: list[RewardContext], system: str, max_context_turns: int,
                 user: ModelSpec | ChatModel | None, reward: RewardSettings, settings: EpisodeSettings, *,
                 seed: int = 0, judge: Judge | None = None, judge_model: ChatModel | None = None) -> None:  # fmt: skip
        self.by_prompt: dict[str, RewardContext] = {}
        for c in contexts:  # two contexts with the same words are one prompt: the first is played
            self.by_prompt.setdefault(prompt_key(c.messages(system, max_context_turns)), c)
        needs = user_agent(reward.user_agent.agent).needs_model
        self.user, self.r, self.s, self.seed = user if needs else None, reward, settings, seed
        self.judge, self.judge_model = judge, judge_model
        self._pool: Any = None
        self._model: ChatModel | None = None
        self._judge: EpisodeJudge | None = None

    def _opened_pool(self) -> Any:
        if self._pool is None:
            from ..models.pool import ModelPool

            self._pool = ModelPool(cache_path=True)
        return self._pool

    async def _user_model(self) -> ChatModel | None:
        if self._model is None and isinstance(self.user, ModelSpec):
            self._model = await self._opened_pool().get(self.user, "user")
        return self._model or (self.user if isinstance(self.user, ChatModel) else None)

    async def _episode_judge(self) -> EpisodeJudge | None:
        if self._judge is None and self.judge is not None:
            from .judged import open_judge

            pool = None if self.judge_model is not None else self._opened_pool()
            self._judge = await open_judge(self.judge, pool, self.judge_model)
        return self._judge

    def episodes(self, prompts: list[list[Message]], model: ChatModel | None,
                 judge: EpisodeJudge | None = None) -> list[Episode]:  # fmt: skip
        out = []
        for p in prompts:
            ctx = self.by_prompt.get(prompt_key(p))
            if ctx is None:
                raise EmoharborError("episodes: a prompt that is none of the stage's contexts reached the rollout")
            user = perceiving_user(model, ctx.profile, self.r.user_agent, "an episode")
            out.append(Episode(ctx, user, self.r, self.s, seed=self.seed, judge=judge))
        return out

    def __call__(self, prompts: list[list[Message]], trainer: Any) -> dict[str, Any]:
        if trainer.use_vllm or trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled:
            raise EmoharborError("grpo.episodes: the policy's turns are generated in each process (DDP or one "
                                 "process): turn off use_vllm, FSDP and DeepSpeed (docs/evolve.md)")  # fmt: skip
        loop = trainer.async_loop

        def run(coro: Coroutine[Any, Any, T]) -> T:
            return asyncio.run_coroutine_threadsafe(coro, loop).result()

        episodes = self.episodes(prompts, run(self._user_model()), run(self._episode_judge()))
        talks = play(prompts, episodes, trainer.processing_class, trainer_generate(trainer), run,
                     trainer.eos_token_ids)  # fmt: skip
        return {"prompt_ids": [t.prompt_ids for t in talks], "completion_ids": [t.completion_ids for t in talks],
                "logprobs": None, "env_mask": [t.env_mask for t in talks],
                "episode": [json.dumps(t.result.to_dict(), ensure_ascii=False) for t in talks]}  # fmt: skip

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = self._model = self._judge = None
