"""Judge cards: a judge as a named, versioned thing (YAML), not a model name alone.

A card says what a judge is: its form (what it rates and is shown), its prompt file, its rubric, how its
scores are read (``argmax``: the integer it wrote; ``expected``: also the probability-weighted mean over the
allowed values, see ``expected.py``), what part of a conversation it sees, whether it quotes evidence, and
its token budget. The model is the card's own (``model:``) or the one the command gives. A card's
``version`` hashes all of that with the texts of its prompt and rubric, so a changed card is never mixed
into a run that used the old one.

The forms are registered objects (``judge_forms.py``, which lists the built-in ones); a user's own form is
named ``module:name``. A card that names no prompt (or no rubric) gets its form's.

Built-in cards are YAML files in ``assess/cards/``; ``load_card("third_party")`` or a path.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import userfiles
from ..errors import ConfigError, validation_message
from ..models.spec import ModelSpec, spec_input
from ..prompts import Prompt, load_prompt
from .dimensions import DEFAULT_RUBRIC, Rubric, load_rubric
from .judge_forms import ConversationForm, JudgeForm, judge_form

Scoring = Literal["argmax", "expected"]
Sees = Literal["replayed", "all"]
CARDS = "cards"
USER_JUDGE = "user"  # the name of the simulated user judging with its own model


class JudgeCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    # the card's judge form (judge_forms.py), or module:name; the key keeps its old name, ``kind``: the card's
    # version hashes its fields, and every stored run's record holds the card so
    kind: str
    description: str = ""
    prompt: str  # builtin:NAME (a file of emoharbor/prompts) or a path to a text file
    rubric: str = DEFAULT_RUBRIC
    scoring: Scoring = "argmax"
    sees: Sees = "all"  # validate: the whole ESConv conversation, or the replayed part only
    evidence: bool = True  # a quote per dimension; without it the reply is the scores alone (fewer tokens)
    max_tokens: int | None = Field(default=900, ge=16, le=32768)  # None: the model spec's max_tokens
    top_logprobs: int = Field(default=20, ge=2, le=20)  # alternatives per token, with scoring: expected
    model: ModelSpec | None = None  # None: the command's judge model (the user's model for the form user)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if not v or any(c in v for c in "|:/ "):
            raise ValueError(f"a card name is a plain word (no '|', ':', '/' or spaces), not {v!r}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _form_defaults(cls, data: Any) -> Any:
        """A card that names no prompt or rubric gets its form's (an unknown form is the field's error)."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or {"prompt", "rubric"} <= set(data):
            return data
        try:
            form = judge_form(data["kind"])
        except ConfigError:
            return data
        return {"prompt": form.prompt, **({"rubric": form.rubric} if form.rubric else {}), **data}

    @field_validator("kind")
    @classmethod
    def _known_form(cls, v: str) -> str:
        try:
            judge_form(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, v: Any) -> Any:
        return spec_input(v)

    # -- what the card refers to -----------------------------------------------------------
    def judge_form(self) -> JudgeForm:
        return judge_form(self.kind)

    def prompt_file(self) -> Prompt:
        if not self.prompt.startswith("builtin:"):
            path = Path(self.prompt)
            return Prompt(path.stem, userfiles.read_text(path, f"card {self.name}: prompt file"))
        try:
            return load_prompt(self.prompt.removeprefix("builtin:"))
        except FileNotFoundError:
            raise ConfigError(f"card {self.name}: no built-in prompt {self.prompt!r}") from None

    def answer_prompt(self) -> Prompt:
        return load_prompt("judge_answer_evidence" if self.evidence else "judge_answer_scores")

    def rubric_file(self) -> Rubric:
        return load_rubric(self.rubric)

    @property
    def version(self) -> str:
        parts = {
            "card": self.model_dump(mode="json", exclude={"model", "description"}),
            "prompt": self.prompt_file().text,
            "answer": self.answer_prompt().text,
            "rubric": self.rubric_file().source if self.judge_form().rubric is not None else "",
        }
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
        return f"{self.name}@{hashlib.sha256(blob.encode()).hexdigest()[:10]}"

    def judge_id(self, model: str, user_model: str | None = None) -> str:
        """The judge's name in a run's records: ``user`` for the simulated user judging with its own model
        (the card ``user`` of a form shown the user's inner record), else ``NAME:MODEL``
        (``third_party:local:qwen1.5b``)."""
        form = self.judge_form()
        if isinstance(form, ConversationForm) and form.lived and self.name == USER_JUDGE and model == user_model:
            return "user"
        return f"{self.name}:{model}"

    def with_options(self, *, scoring: str | None = None, sees: str | None = None) -> JudgeCard:
        """The card with the command line's ``--scoring`` / ``--judge-sees``; a setting that changes gets
        into the name (``third_party+expected``, ``third_party@replayed``), so the two never share records."""
        card = self
        if scoring and scoring != card.scoring:
            card = card.model_copy(update={"scoring": scoring, "name": f"{card.name}+{scoring}"})
        if sees and sees != card.sees:
            card = card.model_copy(update={"sees": sees, "name": f"{card.name}@{sees}"})
        return card

    def record(self, model: ModelSpec) -> dict[str, Any]:
        """What a run records of the card it used: the card, its version, and the model it ran on."""
        return {**self.model_dump(mode="json", exclude={"model"}), "version": self.version, "model": model.model}


def builtin_names() -> list[str]:
    folder = resources.files(__package__).joinpath(CARDS)
    return sorted(e.name.removesuffix(".yaml") for e in folder.iterdir() if e.name.endswith(".yaml"))


def load_card(ref: str) -> JudgeCard:
    """A built-in card by name (``user``, ``profile_aware``, ``third_party``, ``third_party_overall``,
    ``third_party_reply``, ``heart_pairwise``; ``builtin:NAME`` too) or a YAML file. Errors name the file and
    the field."""
    name = ref.removeprefix("builtin:")
    if name in builtin_names():
        where = f"builtin:{name}"
        raw = userfiles.parse(f"{name}.yaml", resources.files(__package__).joinpath(CARDS, f"{name}.yaml").read_text())
    elif ref.endswith((".yaml", ".yml")) or Path(ref).exists():
        where = ref
        raw = userfiles.read(Path(ref), "judge card")
    else:
        raise ConfigError(f"no judge card {ref!r}: give a YAML file or a built-in card ({', '.join(builtin_names())})")
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a judge card is a mapping of settings (name, kind, prompt, ...)")
    try:
        card = JudgeCard.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(validation_message(where, e)) from None
    card.prompt_file()  # a missing prompt or rubric file is an error now, not in the middle of a run
    if card.judge_form().rubric is not None:
        card.rubric_file()
    return card


CardEntry = str | dict[str, Any]  # a card as a run config names it


def card_of(entry: CardEntry) -> JudgeCard:
    """A card as a run config's ``judges`` names it: a built-in name or a YAML file (``load_card``), or a
    mapping ``{card: REF, FIELD: VALUE, ...}``: that card with those fields changed, keeping its name
    (``{card: user, evidence: false}`` is still the simulated user's judge). A changed field changes the
    card's version, so its records never mix with the unchanged card's."""
    if isinstance(entry, str):
        return load_card(entry)
    ref, changes = entry.get("card"), {k: v for k, v in entry.items() if k != "card"}
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"a judge given as a mapping names its card ({{card: user, evidence: false}}), not {entry!r}")
    base = load_card(ref)
    try:
        return JudgeCard.model_validate({**base.model_dump(exclude_unset=True), **changes})
    except ValidationError as e:
        raise ConfigError(validation_message(f"card {ref} as changed", e)) from None


def judge_model(card: JudgeCard, default: ModelSpec) -> ModelSpec:
    return card.model if card.model is not None else default
