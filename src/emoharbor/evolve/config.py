"""The self-evolution config: one YAML file for phase 1 (SFT), phase 2 (reflect, refine, DPO), GRPO
against the simulated user, and the machine it runs on. Every field has a default; ``device``/``dtype``
choose CPU or GPU, and a CPU run also sets small sizes (``sft.max_examples``, ``refine.contexts``; see
docs/evolve.md). A training stage's TRL options are its ``train_args``, by TRL's names (``train_args``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .. import userfiles
from ..episodes.settings import EpisodeSettings
from ..errors import ConfigError
from ..heart.config import HistorySource
from ..models.hf import built_in_gguf
from ..models.spec import ModelSpec
from ..overrides import validated
from ..reward.settings import RewardSettings
from .train_args import check_train_args, effective, from_old_names, new_key

if TYPE_CHECKING:
    from ..assess.stage import Judge


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraSettings(_Strict):
    r: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, ge=1)
    dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    # adapt only the top N layers (None: all): the backward pass then stops there, much cheaper on a CPU
    top_layers: int | None = Field(default=None, ge=1)


class TrainSettings(_Strict):
    """A training stage's settings: emoharbor's own, and ``train_args``, TRL's training arguments by TRL's names
    (any key of the stage's TRL config class; see ``train_args``). Settings under their names of before
    ``train_args`` (``lr``, ``batch_size``, ...) are read as the TRL keys they stood for."""

    stage: ClassVar[str]
    train_args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return from_old_names(cls.stage, data) if isinstance(data, dict) else data

    @field_validator("train_args")
    @classmethod
    def _check_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        return check_train_args(cls.stage, args)


class SftSettings(TrainSettings):
    stage = "sft"
    data: list[str] = Field(default_factory=list)  # ESConv files, either format (no default: give yours)
    max_examples: int | None = Field(default=None, ge=1)  # ESConv examples kept (a seeded sample)
    general_data: str | None = None  # JSONL of general instructions, to keep general ability
    general_share: float = Field(default=0.0, ge=0, lt=1)  # share of the mixed set that is general data
    max_length: int = Field(default=512, ge=32)  # tokens; the oldest turns go first when a context is longer
    # whose messages the model learns to write: the supporter's (the policy), or the seeker's, as the simulated
    # user's voice (``user_agent.voice_model``; evolve/voice_data.py)
    role: Literal["supporter", "user"] = "supporter"
    # the share of the ESConv examples whose system prompt holds the seeker's emotion, problem and situation
    personal_share: float = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _check(self) -> SftSettings:
        if self.general_share > 0 and not self.general_data:
            raise ValueError("sft.general_share > 0 needs sft.general_data (a JSONL file of instructions)")
        return self


class RefineSettings(_Strict):
    data: list[str] = Field(default_factory=list)  # ESConv files the contexts come from (no default)
    contexts: int = Field(default=64, ge=1)  # contexts per round, one per dialogue, a new sample each round
    principles: str | None = None  # a principles file; None: the built-in one
    personal_share: float = Field(default=0.0, ge=0, le=1)  # contexts shown the seeker's situation (as sft's)
    # simulated users' profiles, as a run config names them (builtin:ID or a glob, files, folders): round(contexts x
    # profile_share) of each round's contexts are their openings, as the rules user writes them (profile_contexts.py)
    profiles: list[str] = Field(default_factory=list)
    profile_share: float = Field(default=0.0, ge=0, le=1)
    max_new_tokens: int = Field(default=128, ge=8)
    reflection_max_tokens: int = Field(default=256, ge=16)
    temperature: float = Field(default=0.7, ge=0)
    json_retries: int = Field(default=1, ge=0, le=5)
    repetition_penalty: float | None = Field(default=1.1, gt=0)  # in-process (hf) generation only
    max_context_turns: int = Field(default=8, ge=1)  # the history shown is at most this many turns
    min_chars: int = Field(default=8, ge=1)  # a reply shorter than this, or with fewer words, is dropped
    min_words: int = Field(default=3, ge=1)
    max_length_ratio: float = Field(default=2.5, gt=1)  # refined longer than ratio x plain (+ slack): dropped
    length_slack_chars: int = Field(default=120, ge=0)
    drop_truncated: bool = True  # a refined reply cut off by max_new_tokens is not a good "chosen"
    concurrency: int = Field(default=8, ge=1)  # contexts at once: a served generator's requests, hf's batch
    batch_size: int = Field(default=8, ge=1, le=256)  # in-process (hf) generation: replies decoded together
    # None: M(t) generates in this process (hf backend, batched). Or a vLLM or SGLang server of the base model,
    # started with --enable-lora: each round's adapter is loaded into it (load_adapter; see docs/evolve.md)
    generator: ModelSpec | None = None
    # None: the policy reflects on its own reply. Or a teacher (any model spec) writes the reflection, and the
    # policy writes the refined reply from it
    reflector: ModelSpec | None = None
    load_adapter: bool = True  # load each round's adapter into the generator's server (vLLM, SGLang) first
    # a pair is kept only if this judge (a HEART pairwise card) prefers the refined reply in both orders
    judge_check: bool = True
    judge: ModelSpec = Field(default_factory=ModelSpec)  # the default: the embedded model
    judge_card: str = "heart_pairwise"

    @model_validator(mode="after")
    def _check(self) -> RefineSettings:
        if self.profile_share > 0 and not self.profiles:
            raise ValueError("refine.profile_share > 0 needs refine.profiles (e.g. ['builtin:*'])")
        if self.profiles and self.profile_share == 0:
            raise ValueError("refine.profiles needs refine.profile_share > 0: the share of the contexts they open")
        return self

    def profile_count(self) -> int:
        """How many of a round's contexts are profiles' openings (at most; fewer where fewer profiles are left)."""
        return round(self.contexts * self.profile_share)


class DpoSettings(TrainSettings):
    stage = "dpo"
    max_length: int = Field(default=512, ge=32)  # tokens of a pair's prompt and longer reply; oldest turns go first
    extra_pairs: list[str] = Field(default_factory=list)  # pair files added to every round (e.g. from runs)


class GrpoContexts(_Strict):
    """Where GRPO's contexts come from (see ``reward.context``); the evaluation guard is applied to all."""

    profiles: list[str] = Field(default_factory=lambda: ["builtin:*"])  # each opens a talk (the user writes it)
    runs: list[str] = Field(default_factory=list)  # EmoHarbor run folders: every user turn of their talks
    esconv: list[str] = Field(default_factory=list)  # ESConv files, cut at seeker turns
    # HEART history files: a path (regular histories), or a history source as HEART's config has it, naming its
    # subset and limits ({path: dialogues_adversarial.json, subset: adversarial})
    heart: list[str | HistorySource] = Field(default_factory=list)
    n: int | None = Field(default=64, ge=1)  # a seeded sample of this many, the sources taking turns (None: all)
    max_turns: int = Field(default=8, ge=1)  # the supporter sees at most this many turns

    @field_validator("heart")
    @classmethod
    def _heart_files(cls, v: list[str | HistorySource]) -> list[str | HistorySource]:
        bad = [h.path for h in v if isinstance(h, HistorySource) and h.format != "heart"]
        if bad:
            raise ValueError(f"{bad[0]}: a HEART history file (format: heart) is what a context is cut from")
        return v


class GrpoSettings(TrainSettings):
    stage = "grpo"
    contexts: GrpoContexts = Field(default_factory=GrpoContexts)
    user: ModelSpec = Field(default_factory=ModelSpec)  # the simulated user who gives the reward (default: embedded)
    reward: RewardSettings = Field(default_factory=RewardSettings)
    # the EmoHarbor run config of the held-out evaluation that ends the stage (before and after, per dimension)
    eval_config: str | None = None
    episodes: EpisodeSettings = Field(default_factory=EpisodeSettings)  # whole talks with the user (multi-turn)
    _judge: tuple[str, Any] | None = PrivateAttr(default=None)  # the episode judge built, by what it was made of

    @model_validator(mode="after")
    def _check(self) -> GrpoSettings:
        args = effective("grpo", self.train_args)
        if self.episodes.reward == "judge" and not self.episodes.judge.endswith((".yaml", ".yml")):
            try:  # a built-in card now; a card file once its path is resolved (the evolve plan)
                self.episode_judge()
            except ConfigError as e:
                raise ValueError(str(e)) from None
        if self.episodes.enabled and args.get("use_vllm"):
            raise ValueError("grpo.episodes: the policy's turns are generated in each process, not by TRL's vLLM "
                             "integration: set grpo.train_args.use_vllm false (docs/evolve.md)")  # fmt: skip
        batch, n = args["per_device_train_batch_size"], args["num_generations"]
        if isinstance(n, int) and n > 0 and batch % n:
            raise ValueError(f"grpo.train_args.per_device_train_batch_size ({batch}) must be a multiple of "
                             f"num_generations ({n}): each context's completions are compared together")  # fmt: skip
        return self

    def episode_judge(self) -> Judge:
        """The judge of ``episodes.reward: judge``; a ConfigError in one line when it has no model or is not a
        judge of a conversation. Built once (the check of the settings builds it; the plan takes it) unless a
        setting it is made of changed since."""
        from ..episodes.judged import episode_judge

        made_of = f"{self.episodes.model_dump_json()}|{self.user.model_dump_json()}|{self.reward.user_agent.agent}"
        if self._judge is None or self._judge[0] != made_of:
            self._judge = (made_of, episode_judge(self.episodes, self.user, self.reward.user_agent.agent))
        judge: Judge = self._judge[1]
        return judge


class EvolveConfig(_Strict):
    # a built-in model (qwen0.5b, qwen1.5b, smollm2; local:NAME too), a Hub id, a model folder, or a .gguf file
    base_model: str = "smollm2"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"  # auto: bf16 on cuda, fp32 on cpu
    system_prompt: str | None = None  # as a supporter's: None (default), builtin:NAME, @FILE or text
    seed: int = 0
    rounds: int = Field(default=2, ge=0, le=20)
    holdout: list[str] = Field(default_factory=list)  # files of ids marked as evaluation data
    lora: LoraSettings = Field(default_factory=LoraSettings)
    sft: SftSettings = Field(default_factory=SftSettings)
    refine: RefineSettings = Field(default_factory=RefineSettings)
    dpo: DpoSettings = Field(default_factory=DpoSettings)
    grpo: GrpoSettings = Field(default_factory=GrpoSettings)
    quantization: Literal["none", "4bit"] = "none"  # 4bit: QLoRA, the base model in 4 bits (bitsandbytes, CUDA only)
    report_to: Literal["none", "tensorboard"] = "none"  # training logs also to TensorBoard (in each model folder)

    def resolved(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def data_of(self, stage: str) -> list[str]:
        """The ESConv files of ``stage`` ("sft" or "refine"); none given is a one-line error naming the setting."""
        paths: list[str] = getattr(self, stage).data
        if not paths:
            raise ConfigError(
                f"{stage}.data is not set: give the ESConv file(s) to read, in the config ({stage}: {{data: "
                f"[PATH/train.jsonl]}}) or with --set {stage}.data=[PATH/train.jsonl]"
            )
        return paths


def _resolve_paths(cfg: EvolveConfig, base: Path) -> EvolveConfig:
    """Relative data paths are taken from the config file's folder, like the other configs."""

    def fix(p: str) -> str:
        q = Path(p).expanduser()
        return str(q if q.is_absolute() else (base / q))

    def fixed(paths: list[str]) -> list[str]:
        return [fix(p) for p in paths]

    def profiles(specs: list[str]) -> list[str]:
        return [p if p.startswith("builtin:") else fix(p) for p in specs]

    cfg.sft.data, cfg.refine.data, cfg.holdout = fixed(cfg.sft.data), fixed(cfg.refine.data), fixed(cfg.holdout)
    cfg.dpo.extra_pairs = fixed(cfg.dpo.extra_pairs)
    ctx = cfg.grpo.contexts
    ctx.runs, ctx.esconv = fixed(ctx.runs), fixed(ctx.esconv)
    ctx.heart = [fix(p) if isinstance(p, str) else p.model_copy(update={"path": fix(p.path)}) for p in ctx.heart]
    ctx.profiles, cfg.refine.profiles = profiles(ctx.profiles), profiles(cfg.refine.profiles)
    if cfg.grpo.episodes.judge.endswith((".yaml", ".yml")):
        cfg.grpo.episodes.judge = fix(cfg.grpo.episodes.judge)
    cfg.grpo.eval_config = cfg.grpo.eval_config and fix(cfg.grpo.eval_config)
    cfg.sft.general_data = cfg.sft.general_data and fix(cfg.sft.general_data)
    cfg.refine.principles = cfg.refine.principles and fix(cfg.refine.principles)
    if cfg.system_prompt and cfg.system_prompt.startswith("@"):
        cfg.system_prompt = "@" + fix(cfg.system_prompt[1:])
    if built_in_gguf(cfg.base_model) is None:
        local = base / Path(cfg.base_model).expanduser()
        if local.exists():
            cfg.base_model = str(local.resolve())
    return cfg


def load_evolve_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> EvolveConfig:
    """``path`` None: the defaults (data paths relative to the current folder)."""
    if path is None:
        cfg = validated(EvolveConfig, {}, _new_keys(overrides or {}), "the evolve defaults")
        return _resolve_paths(cfg, Path.cwd())
    p = Path(path)
    cfg = validated(EvolveConfig, userfiles.read_settings(p, "evolve config"), _new_keys(overrides or {}), str(p))
    return _resolve_paths(cfg, p.parent)


def _new_keys(overrides: dict[str, Any]) -> dict[str, Any]:
    """``--set`` keys in today's names (``sft.lr`` is ``sft.train_args.learning_rate``)."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        try:
            out[new_key(key)] = value
        except ValueError as e:
            raise ConfigError(f"--set {key}: {e}") from None
    return out
