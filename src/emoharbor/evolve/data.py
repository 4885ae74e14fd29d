"""Training examples: ESConv supporter turns given their history, general instructions, and their
tokenization with a loss mask on the reply only.

An example is (messages, reply): ``messages`` is the system prompt and the conversation so far, ending
on the seeker's turn; ``reply`` is the supporter's next message. Tokenizing uses the model's own chat
template, so what the model is trained on is exactly what it sees when it is served: the reply up to its
end-of-turn token, not the whitespace some templates write after it (TRL, tokenizing the messages itself,
would train on that too; docs/evolve.md). TRL is handed these tokens: ``completion_row`` for SFT,
``EncodedPair.row`` for DPO.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import dropwhile
from pathlib import Path
from typing import Any, TypeVar

from ..data.esconv import EsconvDialog, load_esconv
from ..data.jsonl import read_jsonl
from ..errors import DataError
from ..models.base import Message
from ..models.hf import stop_token_ids
from .guard import EvalGuard
from .pairs import is_messages
from .personal import Personal, personal_system, told

IGNORE = -100  # the label of a token that carries no loss
Enc = TypeVar("Enc", "Encoded", "EncodedPair")


@dataclass(frozen=True)
class ChatExample:
    id: str
    messages: list[Message]  # system + history, ending on the user's (seeker's) turn
    reply: str
    source: str = "esconv"  # "esconv" | "general" | "profile" (refine's contexts: profile_contexts.py)
    personal: bool = False  # its system prompt holds what the seeker said of themselves before the talk
    person: str = ""  # what the reflector is told of the person beyond the talk (a profile's persona card)


def dialog_examples(d: EsconvDialog, system_prompt: str, max_turns: int | None = None,
                    personal: Personal | None = None) -> list[ChatExample]:  # fmt: skip
    """One example per supporter turn that follows at least one seeker turn; with ``personal``, the examples it
    draws are shown the seeker's emotion, problem and situation in the system prompt."""
    turns = d.merged_turns()
    out: list[ChatExample] = []
    for i, t in enumerate(turns):
        if t.speaker != "supporter" or not any(p.speaker == "seeker" for p in turns[:i]):
            continue
        history = turns[:i][-max_turns:] if max_turns is not None else turns[:i]
        history = list(dropwhile(lambda h: h.speaker != "seeker", history))  # a chat starts with the user
        ident = f"{d.id}#{i}"
        shown = personal is not None and told(d) and personal.shown(ident)
        msgs: list[Message] = [{"role": "system", "content": personal_system(
            system_prompt, d.emotion_type, d.problem_type, d.situation) if shown else system_prompt}]  # fmt: skip
        msgs += [{"role": "user" if h.speaker == "seeker" else "assistant", "content": h.text} for h in history]
        out.append(ChatExample(ident, msgs, t.text, personal=shown))
    return out


def esconv_examples(paths: list[str], system_prompt: str, guard: EvalGuard | None = None,
                    personal: Personal | None = None,
                    examples: Callable[[EsconvDialog], list[ChatExample]] | None = None) -> tuple[
        list[ChatExample], int]:  # fmt: skip
    """All examples of the files (the supporter's turns, or what ``examples`` makes of a dialogue), and how many
    dialogues the guard kept out."""
    make = examples or (lambda d: dialog_examples(d, system_prompt, personal=personal))
    out: list[ChatExample] = []
    held_out = 0
    for path in paths:
        for d in load_esconv(path):
            if guard is not None and guard.blocks_dialog(d):
                held_out += 1
                continue
            out.extend(make(d))
    return out, held_out


def esconv_contexts(paths: list[str], system_prompt: str, n: int, seed: int, max_turns: int,
                    guard: EvalGuard | None = None, personal: Personal | None = None) -> list[ChatExample]:  # fmt: skip
    """``n`` contexts for phase 2, each from a different dialogue, at a random supporter turn."""
    rng = random.Random(seed)
    dialogs = [d for p in paths for d in load_esconv(p) if guard is None or not guard.blocks_dialog(d)]
    rng.shuffle(dialogs)
    out: list[ChatExample] = []
    for d in dialogs:
        options = dialog_examples(d, system_prompt, max_turns, personal)
        if options:
            out.append(rng.choice(options))
        if len(out) >= n:
            break
    return out


def _general_record(rec: Any, where: str) -> tuple[list[Message], str]:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: not a JSON object")
    if "messages" in rec:
        msgs = rec["messages"]
        if not (msgs and is_messages(msgs)) or msgs[-1]["role"] != "assistant":
            raise DataError(f"{where}: field 'messages': a list of {{role, content}} ending on an assistant message")
        return [dict(m) for m in msgs[:-1]], msgs[-1]["content"]
    prompt = rec.get("prompt", rec.get("instruction"))
    answer = rec.get("response", rec.get("output", rec.get("completion")))
    if not isinstance(prompt, str) or not isinstance(answer, str) or not prompt.strip():
        raise DataError(f"{where}: needs 'messages', or 'prompt'/'instruction' and 'response'/'output' strings")
    extra = rec.get("input")
    if isinstance(extra, str) and extra.strip():
        prompt = f"{prompt}\n\n{extra}"
    return [{"role": "user", "content": prompt}], answer


def general_examples(path: str) -> list[ChatExample]:
    """A JSONL file: ``{"messages": [...]}`` (loss on the last assistant message) or
    ``{"prompt"|"instruction", ["input"], "response"|"output"}``."""
    p = Path(path)
    out: list[ChatExample] = []
    for n, rec in read_jsonl(p, "general instruction file"):
        msgs, reply = _general_record(rec, f"{p}: line {n}")
        out.append(ChatExample(f"{p.stem}:{n}", msgs, reply, "general"))
    if not out:
        raise DataError(f"{p}: no examples in it")
    return out


def mix_examples(esconv: list[ChatExample], general: list[ChatExample], *, share: float, max_examples: int | None,
                 seed: int) -> list[ChatExample]:  # fmt: skip
    """A seeded sample of ``max_examples`` ESConv examples, plus general ones so that they make up
    ``share`` of the result (as many as the general file has, at most)."""
    rng = random.Random(seed)
    es = list(esconv)
    rng.shuffle(es)
    es = es[:max_examples] if max_examples else es
    want = round(len(es) * share / (1 - share)) if share > 0 else 0
    gen = rng.sample(general, min(want, len(general)))
    out = es + gen
    rng.shuffle(out)
    return out


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]
    labels: list[int]  # IGNORE on the prompt, the token id on the reply
    dropped_turns: int = 0  # oldest history turns left out to fit max_length


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_text(tokenizer: Any, messages: list[Message]) -> str:
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def reply_text(tokenizer: Any, messages: list[Message], reply: str) -> str:
    """The reply as the template writes it after the prompt, up to its end-of-turn marker (the
    whitespace some templates put after the marker is never generated, so it is not trained on)."""
    head = prompt_text(tokenizer, messages)
    full = str(tokenizer.apply_chat_template([*messages, {"role": "assistant", "content": reply}], tokenize=False))
    if full.startswith(head):
        return full[len(head) :].rstrip()
    return reply + (tokenizer.eos_token or "")


def reply_ids(tokenizer: Any, messages: list[Message], reply: str) -> list[int]:
    """The reply's tokens, ending on an end-of-turn (or end-of-sequence) token the model stops on."""
    target = _ids(tokenizer, reply_text(tokenizer, messages, reply))
    stops = stop_token_ids(tokenizer)
    if stops and not (target and target[-1] in stops):  # the model must learn where its turn ends
        target.append(stops[0] if tokenizer.eos_token_id is None else tokenizer.eos_token_id)
    return target


def fit_prompt(tokenizer: Any, messages: list[Message], reply_tokens: int, max_length: int) -> tuple[list[int], int]:
    """The prompt's tokens with the oldest turns cut until a reply of ``reply_tokens`` fits in
    ``max_length`` (the system prompt and the last user turn always stay), and how many turns were cut."""
    system = [m for m in messages[:1] if m["role"] == "system"]
    convo = messages[len(system) :]
    dropped = 0
    while True:
        prompt = _ids(tokenizer, prompt_text(tokenizer, system + convo))
        if len(prompt) + reply_tokens <= max_length or len(convo) <= 1:
            return prompt, dropped
        convo = convo[1:]
        dropped += 1
        while len(convo) > 1 and convo[0]["role"] != "user":
            convo = convo[1:]
            dropped += 1


def encode(tokenizer: Any, messages: list[Message], reply: str, max_length: int) -> Encoded | None:
    """Prompt and reply tokens with the loss mask; None when even the last user turn and a
    minimal reply do not fit."""
    target = reply_ids(tokenizer, messages, reply)
    prompt, dropped = fit_prompt(tokenizer, messages, len(target), max_length)
    room = max_length - len(prompt)
    if room < min(8, len(target)):
        return None
    target = target[:room]
    return Encoded(prompt + target, [IGNORE] * len(prompt) + target, dropped)


def completion_row(e: Encoded) -> dict[str, list[int]]:
    """An encoded example as TRL's tokenized prompt-completion row: the tokens, and 1 where the loss is."""
    return {"input_ids": e.input_ids, "completion_mask": [int(x != IGNORE) for x in e.labels]}


@dataclass(frozen=True)
class EncodedPair:
    """A preference pair as TRL's tokenized preference row: one prompt, two replies."""

    prompt_ids: list[int]
    chosen_ids: list[int]
    rejected_ids: list[int]
    dropped_turns: int = 0

    def row(self) -> dict[str, list[int]]:
        return {"prompt_ids": self.prompt_ids, "chosen_ids": self.chosen_ids, "rejected_ids": self.rejected_ids}


def encode_pair(tokenizer: Any, messages: list[Message], chosen: str, rejected: str, max_length: int) -> (
        EncodedPair | None):  # fmt: skip
    """Both replies after the same prompt, cut (oldest turns first) so that the longer reply fits; None
    when even the last user turn and minimal replies do not fit."""
    c, r = reply_ids(tokenizer, messages, chosen), reply_ids(tokenizer, messages, rejected)
    prompt, dropped = fit_prompt(tokenizer, messages, max(len(c), len(r)), max_length)
    room = max_length - len(prompt)
    if room < min(8, max(len(c), len(r))):
        return None
    return EncodedPair(prompt, c[:room], r[:room], dropped)


def fitting(encoded: Iterable[Enc | None]) -> tuple[list[Enc], Counter[str]]:
    """The encoded examples or pairs that fit (None: one that did not), and the counts of those left out
    (``too_long``) and of those kept with their oldest turns cut (``history_truncated``)."""
    counts: Counter[str] = Counter()
    out: list[Enc] = []
    for e in encoded:
        if e is None:
            counts["too_long"] += 1
            continue
        counts["history_truncated"] += e.dropped_turns > 0
        out.append(e)
    return out, counts
