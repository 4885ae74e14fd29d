"""A HEART run's configuration: histories, candidate models, judge models, dimensions; YAML, validated, hashed.

Relative paths (history files, ``@file`` system prompts, a strategy file) are read relative to the
folder of the config file. The hash covers the config as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import userfiles
from ..assess.cards import load_card
from ..assess.judge_kinds import PairKind
from ..config import SupporterSpec, plain_name
from ..errors import ConfigError, EmoharborError, validation_message
from ..models.spec import ModelSpec, spec_input
from ..store.record import hash_config
from .dimensions import DIMENSION_KEYS

HUMAN = "human"


class HistorySource(BaseModel):
    """One file of dialogue histories and how many of its items to use."""

    model_config = ConfigDict(extra="forbid")

    path: str
    format: Literal["heart", "esconv"] = "heart"
    subset: Literal["regular", "adversarial"] = "regular"
    name: str = ""  # prefix of the history ids; default: the subset (heart) or "esconv"
    first: int | None = Field(default=None, ge=1)  # the first N usable histories
    sample: int | None = Field(default=None, ge=1)  # or a seeded sample of N usable histories
    seed: int = 0
    unknown_speakers: Literal["infer", "skip"] = "infer"
    # who opens a history whose speakers are not recorded (HEART's adversarial file opens with the supporter)
    opener: Literal["supporter", "seeker", "any"] = "supporter"
    cuts_per_dialog: int = Field(default=1, ge=1)  # esconv: histories cut from each conversation
    min_history_turns: int = Field(default=2, ge=1)  # esconv: turns before the cut

    @model_validator(mode="after")
    def _check(self) -> HistorySource:
        if self.first is not None and self.sample is not None:
            raise ValueError("give 'first' or 'sample', not both")
        if not self.name:
            self.name = "esconv" if self.format == "esconv" else self.subset
        return self


class JudgeSpec(ModelSpec):
    name: str = ""
    card: str = "heart_pairwise"  # a judge card of kind heart_pairwise: a built-in name or a YAML file

    @model_validator(mode="after")
    def _card_kind(self) -> JudgeSpec:
        try:
            card = load_card(self.card)
        except EmoharborError as e:
            raise ValueError(str(e)) from None
        if not isinstance(card.judge_kind(), PairKind):
            raise ValueError(f"judge card {self.card!r} is of kind {card.kind}, not heart_pairwise nor another "
                             "kind that compares two replies")  # fmt: skip
        return self


def _name_specs(specs: list[Any], what: str) -> None:
    for i, s in enumerate(specs):
        if not s.name:
            s.name = s.model if len(specs) == 1 else f"{s.model}#{i + 1}"
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{what} names must be unique; repeated: {dup}")


class HeartConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "heart"
    histories: list[HistorySource] = Field(min_length=1)
    candidates: list[SupporterSpec] = Field(default_factory=list)  # the human candidate is implicit
    include_human: bool = True
    # which pairs are judged: "all" (every two competitors) or "with_human" (HEART's design: the human
    # against each model; on a history without a usable human reply, the models against each other)
    pairs: Literal["all", "with_human"] = "all"
    judges: list[JudgeSpec] = Field(default_factory=lambda: [JudgeSpec()])
    labeller: ModelSpec | None = None  # strategy labels; default: the first judge
    dimensions: list[str] = Field(default_factory=lambda: list(DIMENSION_KEYS))
    show_situation: bool = False  # show the seeker's pre-chat situation to candidates and judges
    judge_retries: int = Field(default=2, ge=0, le=10)
    label_retries: int = Field(default=1, ge=0, le=10)
    max_sentences: int = Field(default=8, ge=1, le=50)
    strategy_file: str | None = None  # YAML of strategy names and definitions; default: the built-in one
    lexicon_file: str | None = None  # YAML keyword lexicon for rationale tagging; default: the built-in one
    seed: int = 0
    concurrency: int = Field(default=8, ge=1)
    bootstrap: int = Field(default=200, ge=0, le=10000)
    bt_prior: float = Field(default=0.1, ge=0.0)  # pseudo-wins each way for every compared pair

    @field_validator("candidates", "judges", mode="before")
    @classmethod
    def _specs(cls, value: Any) -> Any:
        items = value if isinstance(value, list) else [value]
        return [spec_input(v) for v in items]

    @field_validator("labeller", mode="before")
    @classmethod
    def _one(cls, value: Any) -> Any:
        return spec_input(value)

    _name = field_validator("name")(plain_name)

    @field_validator("candidates")
    @classmethod
    def _candidate_names(cls, specs: list[SupporterSpec]) -> list[SupporterSpec]:
        _name_specs(specs, "candidate")
        if any(c.name == HUMAN for c in specs):
            raise ValueError(f"'{HUMAN}' is the name of the human candidate: give the model another name")
        return specs

    @field_validator("judges")
    @classmethod
    def _judge_names(cls, specs: list[JudgeSpec]) -> list[JudgeSpec]:
        if not specs:
            raise ValueError("give at least one judge")
        _name_specs(specs, "judge")
        return specs

    @field_validator("dimensions")
    @classmethod
    def _dimensions(cls, dims: list[str]) -> list[str]:
        unknown = [d for d in dims if d not in DIMENSION_KEYS]
        if unknown or not dims:
            what = f"unknown dimensions {unknown}" if unknown else "no dimensions"
            raise ValueError(f"{what}: choose from {list(DIMENSION_KEYS)}")
        return dims

    @field_validator("histories")
    @classmethod
    def _history_names(cls, sources: list[HistorySource]) -> list[HistorySource]:
        names = [h.name for h in sources]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"history sources need distinct names (their ids would collide): {dup}")
        return sources

    @model_validator(mode="after")
    def _check(self) -> HeartConfig:
        _name_specs(self.candidates, "candidate")  # the defaults too: field validators skip them
        _name_specs(self.judges, "judge")
        if len(self.competitors()) < 2:
            raise ValueError("there is nothing to compare: give at least two competitors (candidates and/or human)")
        return self

    def competitors(self) -> list[str]:
        return ([HUMAN] if self.include_human else []) + [c.name for c in self.candidates]

    def labeller_spec(self) -> ModelSpec:
        return self.labeller or self.judges[0]

    def resolved(self) -> dict[str, Any]:
        """The config as written, with the version of every judge's card (its prompt's text included)."""
        return {**self.model_dump(mode="json"), "judge_cards": {j.name: load_card(j.card).version for j in self.judges}}

    def config_hash(self) -> str:
        return hash_config(self.resolved())


def resolve_path(base_dir: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base_dir / p


def parse_heart_config(raw: Any, where: str) -> HeartConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: the top level must be a mapping of settings")
    try:
        return HeartConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(validation_message(where, e)) from None


def load_heart_config(path: str | Path) -> tuple[HeartConfig, Path]:
    """The config and the folder its relative paths are read from."""
    p = Path(path)
    raw = userfiles.read_settings(p, "config file", hint=": give the path to a YAML HEART run config")
    return parse_heart_config(raw, str(p)), p.resolve().parent
