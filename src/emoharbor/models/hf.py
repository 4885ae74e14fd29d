"""A local Hugging Face model as a ``ChatModel``: a base model, optionally with a LoRA adapter.

``hf:SOURCE[@ADAPTER]`` where SOURCE is a model folder (``config.json``), a ``.gguf`` file (dequantized
by transformers), a built-in model's name (``qwen0.5b``, ``qwen1.5b``, ``smollm2``, with or without ``local:``:
the embedded model's GGUF, ``local.resolve_gguf``), or a folder written by ``emoharbor evolve`` (it names its own
base model, so ``hf:/runs/evo/m1`` is enough). Generation runs
in a worker thread, one call at a time. Needs the ``train`` extra; importing this module does not.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EmoharborError
from .base import ChatResult, Message, Usage
from .folder import ADAPTER_CONFIG, MODEL_CARD, TRAIN_HINT

END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")


@dataclass(frozen=True)
class HFSource:
    base: str  # a model folder, or the folder holding ``gguf_file``
    gguf_file: str | None = None
    adapter: str | None = None

    @property
    def identity(self) -> str:
        base = f"{self.base}/{self.gguf_file}" if self.gguf_file else self.base
        return f"hf:{base}" + (f"@{self.adapter}" if self.adapter else "")


def built_in_gguf(text: str) -> str | None:
    """The name ``local.resolve_gguf`` takes for ``text``: a built-in model's name (``qwen0.5b``, with or without
    ``local:``) or ``local:PATH``; None for anything else."""
    from .local import BUILT_IN

    if text.startswith("local:"):
        return text.removeprefix("local:")
    return text if text in BUILT_IN else None


def _base_source(text: str) -> HFSource:
    name = built_in_gguf(text)
    if name is not None:
        from . import local

        p = local.resolve_gguf(name).path  # assembled from its packages and verified by sha256 on first use
        return HFSource(str(p.resolve().parent), p.name)
    p = Path(text).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return HFSource(str(p.resolve().parent), p.name)
    if p.is_dir() and (p / MODEL_CARD).is_file():
        b = _base_source(str(read_model_card(p)["base_model"]))
        return HFSource(b.base, b.gguf_file, str(p.resolve()))
    if p.is_dir() and (p / ADAPTER_CONFIG).is_file():
        base = json.loads((p / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
        if not base:
            raise ConfigError(f"{p / ADAPTER_CONFIG}: field 'base_model_name_or_path' is empty: give hf:BASE@{p}")
        b = _base_source(str(base))
        return HFSource(b.base, b.gguf_file, str(p.resolve()))
    if p.is_dir() and (p / "config.json").is_file():
        return HFSource(str(p.resolve()))
    if HUB_ID.fullmatch(text) and not p.exists():
        return HFSource(hub_snapshot(text))
    raise ConfigError(
        f"hf model {text!r}: not a model folder (config.json), a .gguf file, an adapter folder, a Hugging Face Hub "
        "id (ORG/NAME), or a built-in model (qwen0.5b, qwen1.5b, smollm2)"
    )


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # ORG/NAME, as on the Hugging Face Hub


def hub_snapshot(repo_id: str) -> str:
    """The local folder of a Hub model, downloaded into the Hugging Face cache if it is not there yet; with
    ``HF_HUB_OFFLINE=1``, only the cache is read. A model that cannot be had is a one-line error."""
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        raise EmoharborError(f"{repo_id!r} is a Hugging Face Hub id: Hub models need {TRAIN_HINT}") from None
    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        return str(snapshot_download(repo_id, local_files_only=offline, allow_patterns=HUB_FILES))
    except LocalEntryNotFoundError:
        why = "HF_HUB_OFFLINE is set" if offline else "the Hub cannot be reached"
        raise ConfigError(
            f"{repo_id!r} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and {why}: download it "
            f"first (hf download {repo_id}) or give a local model folder"
        ) from None
    except Exception as e:  # no such repo, a gated model: said in one line
        first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise ConfigError(f"{repo_id!r} cannot be had from the Hugging Face Hub: {first}") from None


HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]  # weights and tokenizer


def resolve_hf(text: str) -> HFSource:
    """``text`` is what follows ``hf:``: ``SOURCE`` or ``SOURCE@ADAPTER_DIR``."""
    base, _, adapter = text.partition("@")
    src = _base_source(base)
    if adapter:
        a = Path(adapter).expanduser()
        if not (a / ADAPTER_CONFIG).is_file():
            raise ConfigError(f"hf adapter {adapter!r}: no adapter_config.json in that folder")
        src = HFSource(src.base, src.gguf_file, str(a))
    return src


def read_model_card(folder: Path) -> dict[str, Any]:
    path = folder / MODEL_CARD
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the model card ({e})") from None
    if not isinstance(card, dict) or not card.get("base_model"):
        raise ConfigError(f"{path}: field 'base_model' is missing")
    return card


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EmoharborError("device 'cuda' asked for, but torch sees no GPU: set device: cpu (or auto)")
    return device


def pick_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device == "cuda" else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def quiet_libraries() -> None:
    """No progress bars or advice from the libraries in emoharbor's output (transformers' GGUF dequantization,
    weight loading and shard writing, datasets' maps, their deprecation notices): emoharbor reports its own
    stages. ``EMOHARBOR_LIBRARY_LOGS=1`` leaves them on."""
    if os.environ.get("EMOHARBOR_LIBRARY_LOGS"):
        return
    import warnings

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault(
        "TRL_EXPERIMENTAL_SILENCE", "1"
    )  # rollout_func's "experimental" notice (docs/evolve.md says so)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|peft|accelerate)(\.|$)")
    warnings.filterwarnings("ignore", category=UserWarning, module=r"(peft|trl)(\.|$)")
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
        from transformers.utils import logging as tf_logging

        tf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        tf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        names = vars(gguf_utils)  # its GGUF dequantization bar is a plain tqdm: made quiet where it is used
        if not isinstance(names.get("tqdm"), functools.partial):
            names["tqdm"] = functools.partial(names["tqdm"], disable=True)
    except ImportError:
        pass
    try:
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
    except ImportError:
        pass


# transformers' lazy first imports fail when several threads make them at once ("cannot import name
# 'AutoModelForCausalLM'"), as an evaluation's hf supporters do when they load together: one load at a time
_LOADING = threading.Lock()


def load_hf(
    src: HFSource,
    *,
    device: str = "auto",
    dtype: str = "auto",
    trainable: bool = False,
    gradient_checkpointing: bool = False,
) -> tuple[Any, Any]:
    """(model, tokenizer) on ``device``; the adapter (if any) loaded trainable or frozen. Safe from several threads
    at once: they load one after the other."""
    with _LOADING:
        return _load_hf(src, device=device, dtype=dtype, trainable=trainable,
                        gradient_checkpointing=gradient_checkpointing)  # fmt: skip


def _load_hf(src: HFSource, *, device: str, dtype: str, trainable: bool,
             gradient_checkpointing: bool) -> tuple[Any, Any]:  # fmt: skip
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        if e.name not in ("torch", "transformers"):
            raise  # installed, but something in it failed to import: show that
        raise EmoharborError(f"the hf backend needs torch and transformers: {TRAIN_HINT}") from None
    quiet_libraries()
    dev = pick_device(device)
    kw: dict[str, Any] = {"gguf_file": src.gguf_file} if src.gguf_file else {}
    tok_from = src.adapter if src.adapter and (Path(src.adapter) / "tokenizer_config.json").is_file() else src.base
    tok_kw = {} if tok_from == src.adapter else dict(kw)
    try:
        tokenizer = AutoTokenizer.from_pretrained(tok_from, **tok_kw)
        if dev != "cpu":  # straight onto the accelerator, not through host memory
            kw["device_map"] = {"": dev}
        model: Any = AutoModelForCausalLM.from_pretrained(src.base, dtype=pick_dtype(dtype, dev), **kw)
    except (OSError, ValueError) as e:
        raise EmoharborError(f"cannot load hf model {src.identity}: {str(e).splitlines()[0]}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if src.gguf_file:  # transformers dequantizes a GGUF file's weights: the model is a float model from here on,
        model.is_quantized, model.hf_quantizer = False, None  # which trainers may train (they refuse GGUF's mark)
        model.config.quantization_config = None
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    if src.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, src.adapter, is_trainable=trainable)
    model.to(dev)
    return model, tokenizer


def stop_token_ids(tokenizer: Any) -> list[int]:
    """The end-of-sequence token and the end-of-turn tokens of the common chat templates it has."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    for t in END_OF_TURN:
        tid = tokenizer.convert_tokens_to_ids(t)
        if isinstance(tid, int) and tid != tokenizer.unk_token_id and tokenizer.convert_ids_to_tokens(tid) == t:
            ids.add(tid)
    return sorted(ids)


class HFChatModel:
    """``ChatModel`` over a local transformers model. A ``json_schema`` that is a flat object of string
    fields is honoured while decoding (``hf_json``); any other is left to the caller's parsing
    (``ask_json``), as for a backend without JSON support."""

    def __init__(
        self,
        src: HFSource | None = None,
        *,
        name: str = "",
        temperature: float = 0.7,
        top_p: float | None = None,
        max_tokens: int = 256,
        device: str = "auto",
        dtype: str = "auto",
        repetition_penalty: float | None = None,
        batch_size: int = 1,
    ) -> None:
        self.src = src
        self.batch_size = batch_size  # >1: free-text calls made at the same time are decoded as one batch
        self._pending: list[tuple[tuple[list[Message], int, int | None], asyncio.Future[ChatResult]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.name = name or (src.identity if src else "hf")
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.device = device
        self.dtype = dtype
        self.repetition_penalty = repetition_penalty
        self.model: Any = None
        self.tokenizer: Any = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_loaded(
        cls, model: Any, tokenizer: Any, *, name: str, temperature: float = 0.7, max_tokens: int = 256,
        repetition_penalty: float | None = None, batch_size: int = 1,
    ) -> HFChatModel:  # fmt: skip
        m = cls(None, name=name, temperature=temperature, max_tokens=max_tokens, repetition_penalty=repetition_penalty,
                batch_size=batch_size)  # fmt: skip
        m.model, m.tokenizer = model, tokenizer
        return m

    def _ensure_loaded(self) -> None:
        if self.model is None:
            if self.src is None:
                raise EmoharborError("HFChatModel has neither a source nor a loaded model")
            self.model, self.tokenizer = load_hf(self.src, device=self.device, dtype=self.dtype)

    def _generate(
        self, messages: list[Message], max_tokens: int, seed: int | None, schema: dict[str, Any] | None
    ) -> ChatResult:
        import torch

        from .hf_json import fill_json, flat_string_keys

        self._ensure_loaded()
        start = time.monotonic()
        prefilled = bool(messages) and messages[-1]["role"] == "assistant"  # continue that message
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=not prefilled, continue_final_message=prefilled
        )
        enc = self.tokenizer(text, add_special_tokens=False, return_tensors="pt").to(self.model.device)
        n_in = int(enc["input_ids"].shape[1])
        stops = set(stop_token_ids(self.tokenizer))
        keys = None if prefilled else flat_string_keys(schema)
        torch.manual_seed(seed or 0)
        sample = self.temperature > 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                if keys is not None:  # the schema is honoured while decoding
                    reply, n_new, cut = fill_json(
                        self.model, self.tokenizer, enc["input_ids"][0].tolist(), keys, max_tokens=max_tokens,
                        temperature=self.temperature, top_p=self.top_p, stops=stops, seed=seed or 0,
                    )  # fmt: skip
                    finish = "length" if cut else "stop"
                else:
                    out = self.model.generate(
                        **enc, max_new_tokens=max_tokens, do_sample=sample,
                        temperature=self.temperature if sample else None, top_p=self.top_p if sample else None,
                        repetition_penalty=self.repetition_penalty, eos_token_id=sorted(stops),
                        pad_token_id=self.tokenizer.pad_token_id,
                    )  # fmt: skip
                    new = out[0, n_in:].tolist()
                    n_new, finish = len(new), "stop" if new and new[-1] in stops else "length"
                    reply = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        finally:
            self.model.train(was_training)
        return ChatResult(text=reply, usage=Usage(n_in, n_new), latency_s=time.monotonic() - start, model=self.name,
                          endpoint="hf", finish_reason=finish)  # fmt: skip

    async def chat(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "",
        top_logprobs: int = 0,
    ) -> ChatResult:
        from .hf_json import flat_string_keys

        n = max_tokens or self.max_tokens
        prefilled = bool(messages) and messages[-1]["role"] == "assistant"
        if self.batch_size <= 1 or prefilled or flat_string_keys(json_schema) is not None:  # decoded on its own
            async with self._lock:
                return await asyncio.to_thread(self._generate, messages, n, seed, json_schema)
        done: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        self._pending.append(((messages, n, seed), done))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        """Decode the waiting calls ``batch_size`` at a time, until none is left."""
        await asyncio.sleep(0)  # the other workers' calls of this moment join the first batch
        while self._pending:
            batch, self._pending = self._pending[: self.batch_size], self._pending[self.batch_size :]
            try:
                async with self._lock:
                    results = await asyncio.to_thread(self._generate_batch, [args for args, _ in batch])
            except Exception as e:  # every caller of the batch gets the error
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                continue
            for (_, fut), r in zip(batch, results, strict=True):
                if not fut.done():
                    fut.set_result(r)

    def _generate_batch(self, items: list[tuple[list[Message], int, int | None]]) -> list[ChatResult]:
        """Free-text replies to several conversations in one ``generate`` (left-padded); each reply is cut to its
        own ``max_tokens``. The batch is sampled with the first call's seed."""
        import torch

        self._ensure_loaded()
        start = time.monotonic()
        tok = self.tokenizer
        texts = [tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m, _, _ in items]
        side, tok.padding_side = tok.padding_side, "left"
        try:
            enc = tok(texts, add_special_tokens=False, return_tensors="pt", padding=True).to(self.model.device)
        finally:
            tok.padding_side = side
        stops = set(stop_token_ids(tok))
        pad = tok.pad_token_id if tok.pad_token_id is not None else sorted(stops)[0]
        torch.manual_seed(items[0][2] or 0)
        sample = self.temperature > 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    **enc, max_new_tokens=max(n for _, n, _ in items), do_sample=sample,
                    temperature=self.temperature if sample else None, top_p=self.top_p if sample else None,
                    repetition_penalty=self.repetition_penalty, eos_token_id=sorted(stops), pad_token_id=pad,
                )  # fmt: skip
        finally:
            self.model.train(was_training)
        width = int(enc["input_ids"].shape[1])
        results = []
        for row, (_, n, _), mask in zip(out, items, enc["attention_mask"], strict=True):
            new = row[width:].tolist()
            end = next((i + 1 for i, t in enumerate(new) if t in stops), None)
            new = new[: min(end or len(new), n)]
            finish = "stop" if new and new[-1] in stops else "length"
            reply = tok.decode(new, skip_special_tokens=True).strip()
            usage = Usage(int(mask.sum()), len(new))
            results.append(ChatResult(text=reply, usage=usage, latency_s=time.monotonic() - start, model=self.name,
                                      endpoint="hf", finish_reason=finish))  # fmt: skip
        return results

    async def aclose(self) -> None:
        if self.src is None:
            return  # a model loaded by someone else stays theirs
        self.model = self.tokenizer = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
