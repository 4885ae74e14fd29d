"""A HEART run's configuration: histories, candidate models, judge models, dimensions; YAML, validated, hashed.

Relative paths (history files, ``@file`` system prompts, a strategy file) are read relative to the
folder of the config file. The hash covers the config as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from .. import userfiles
from ..assess.cards import JudgeCard, load_card
from ..assess.judge_forms import PairForm
from ..config import SupporterSpec, plain_name
from ..errors import ConfigError, EmoharborError, validation_message
from ..models.spec import ModelSpec, spec_input
from ..store.record import hash_config
from .analysis.humans import dimension_key
from .analysis.verdicts import HUMANS
from .dimensions import DIMENSION_KEYS, OVERALL
from .presets import GENERIC, PRESETS, Pairing, Preset

HUMAN = "human"
# the fields of a history source of format rated (a file of replies rated by people); left out of the stored
# config when not given, so that the runs made before them keep their hash
Subset = Literal["regular", "adversarial"]  # HEART's two files of histories
RATED_FIELDS = ("preset", "scale", "dimension", "pairing", "competitors")
COMPETITOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class HistorySource(BaseModel):
    """One file of dialogue histories and how many of its items to use."""

    model_config = ConfigDict(extra="forbid")

    path: str
    format: Literal["heart", "esconv", "rated"] = "heart"
    subset: Subset = "regular"
    name: str = ""  # prefix of the history ids; default: the subset (heart) or "esconv"
    first: int | None = Field(default=None, ge=1)  # the first N usable histories
    sample: int | None = Field(default=None, ge=1)  # or a seeded sample of N usable histories
    seed: int = 0
    unknown_speakers: Literal["infer", "skip"] = "infer"
    # who opens a history whose speakers are not recorded (HEART's adversarial file opens with the supporter)
    opener: Literal["supporter", "seeker", "any"] = "supporter"
    cuts_per_dialog: int = Field(default=1, ge=1)  # esconv: histories cut from each conversation
    min_history_turns: int = Field(default=2, ge=1)  # esconv: turns before the cut
    # rated (replies rated by people, heart.rated): the file's columns (generic, or a preset's), the scale of
    # its ratings, the dimension they rate, how ratings become pairs, and the reply sources (the competitors)
    preset: str | None = None  # default: generic
    scale: tuple[float, float] | None = None  # generic: required; a preset has its own
    dimension: str | None = None  # the rows without a dimension (a preset's: all of them); default: overall
    pairing: Pairing | None = None  # default: the preset's; generic: same_rater
    competitors: list[str] | None = None  # generic: required (the order orients the pairs); a preset has its own

    @model_validator(mode="after")
    def _check(self) -> HistorySource:
        if self.first is not None and self.sample is not None:
            raise ValueError("give 'first' or 'sample', not both")
        given = [f for f in RATED_FIELDS if getattr(self, f) is not None]
        if self.format != "rated" and given:
            raise ValueError(f"{', '.join(given)}: settings of a file of rated replies (format: rated)")
        if self.format == "rated":
            self._check_rated()
        if not self.name:
            preset = self.rated_preset() if self.format == "rated" else None
            self.name = {"esconv": "esconv", "rated": preset.name if preset else "rated"}.get(self.format, self.subset)
        return self

    def _check_rated(self) -> None:
        if self.preset is not None and self.preset != GENERIC and self.preset not in PRESETS:
            raise ValueError(f"preset {self.preset!r}: choose {GENERIC} or one of {sorted(PRESETS)}")
        preset = self.rated_preset()
        if preset is not None:
            for f, own in (("scale", preset.scale), ("competitors", list(preset.competitors))):
                mine = getattr(self, f)
                if mine is not None and tuple(mine) != tuple(own):
                    raise ValueError(f"the {preset.name} preset's {f} are {own}: leave '{f}' out")
        elif self.scale is None:
            raise ValueError("a generic file of rated replies needs 'scale': the lowest and highest rating, [1, 5]")
        elif self.competitors is None:
            raise ValueError("a generic file of rated replies needs 'competitors': the reply sources, in the order "
                             "its pairs are oriented (emoharbor heart import-rated fills it in from the "
                             "file)")  # fmt: skip
        low, high = self.rated_scale()
        if not low < high:
            raise ValueError(f"scale [{low}, {high}]: the lowest rating comes first, below the highest")
        names = self.rated_competitors()
        bad = [c for c in names if not COMPETITOR.fullmatch(c)]
        if bad or len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"competitors {names}: two or more different plain names (letters, digits, _ . -)")
        if self.dimension is not None and dimension_key(self.dimension) is None:
            raise ValueError(f"dimension {self.dimension!r}: choose overall or one of {list(DIMENSION_KEYS)}")

    # -- a rated source's settings, with the preset's or the defaults where not given ---------------------------
    def rated_preset(self) -> Preset | None:
        return PRESETS.get(self.preset or GENERIC)

    def rated_scale(self) -> tuple[float, float]:
        preset = self.rated_preset()
        scale = preset.scale if preset is not None else self.scale
        assert scale is not None  # checked
        return float(scale[0]), float(scale[1])

    def rated_pairing(self) -> Pairing:
        preset = self.rated_preset()
        return self.pairing or (preset.pairing if preset is not None else "same_rater")

    def rated_dimension(self) -> str:
        return dimension_key(self.dimension or OVERALL) or OVERALL

    def rated_competitors(self) -> list[str]:
        preset = self.rated_preset()
        return list(preset.competitors) if preset is not None else list(self.competitors or [])


class JudgeSpec(ModelSpec):
    name: str = ""
    card: str = "heart_pairwise"  # a judge card of the form heart_pairwise: a built-in name or a YAML file
    _loaded: tuple[str, JudgeCard] | None = PrivateAttr(default=None)  # (card, its card loaded at validation)

    @model_validator(mode="after")
    def _card_form(self) -> JudgeSpec:
        try:
            card = load_card(self.card)
        except EmoharborError as e:
            raise ValueError(str(e)) from None
        if not isinstance(card.judge_form(), PairForm):
            raise ValueError(f"judge card {self.card!r} is of the form {card.kind}, not heart_pairwise nor another "
                             "form that compares two replies")  # fmt: skip
        self._loaded = (self.card, card)
        return self

    def judge_card(self) -> JudgeCard:
        """The card the spec was validated with (loaded once; a spec whose card was changed after validation
        has it loaded again)."""
        if self._loaded is None or self._loaded[0] != self.card:
            self._loaded = (self.card, load_card(self.card))
        return self._loaded[1]


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
        if any(s.name in (HUMANS, "pooled") for s in specs):
            raise ValueError(f"'{HUMANS}' and 'pooled' name the people and all judges in the reports: give the "
                             "judge another name")  # fmt: skip
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
        rated = [h for h in self.histories if h.format == "rated"]
        if rated and (len(self.histories) > 1 or self.candidates or not self.include_human):
            raise ValueError("a file of rated replies is the run's one history source, and its replies are the "
                             "competitors: give no other source, no candidates and no include_human: "
                             "false")  # fmt: skip
        if len(self.competitors()) < 2:
            raise ValueError("there is nothing to compare: give at least two competitors (candidates and/or human)")
        return self

    def rated_source(self) -> HistorySource | None:
        """The file of replies rated by people this run was imported from (format rated), or None."""
        return next((h for h in self.histories if h.format == "rated"), None)

    def competitors(self) -> list[str]:
        rated = self.rated_source()
        if rated is not None:
            return rated.rated_competitors()
        return ([HUMAN] if self.include_human else []) + [c.name for c in self.candidates]

    def labeller_spec(self) -> ModelSpec:
        return self.labeller or self.judges[0]

    def resolved(self, card_versions: dict[str, str] | None = None) -> dict[str, Any]:
        """The config as written, with the version of every judge's card (its prompt's text included):
        ``card_versions`` (judge name -> version) of the cards already loaded, else each card is loaded."""
        dump = self.model_dump(mode="json")
        for h in dump["histories"]:
            for f in RATED_FIELDS:
                if h[f] is None:
                    del h[f]
        if card_versions is None:
            card_versions = {j.name: j.judge_card().version for j in self.judges}
        return {**dump, "judge_cards": card_versions}

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
