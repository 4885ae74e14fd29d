"""Building the two sides of a conversation from a run config (here, above both the config and simulate: the
simulated user and the supporter know nothing of run configs)."""

from __future__ import annotations

from ..config import RunConfig, SupporterSpec
from ..models.base import ChatModel
from ..profiles.schema import Profile
from ..simulate.chain_user import ChainSettings, ChainUser
from ..simulate.simple_user import SimpleUser
from ..simulate.supporter import Supporter, supporter_prompt
from ..simulate.user_agent import UserAgent


def chain_settings(cfg: RunConfig) -> ChainSettings:
    return ChainSettings(
        intensity_step=cfg.intensity_step,
        trust_step=cfg.trust_step,
        initial_trust=cfg.initial_trust,
        min_turns=cfg.min_turns,
    )


def make_user(kind: str, model: ChatModel, profile: Profile, cfg: RunConfig) -> UserAgent:
    if kind == "simple":
        return SimpleUser(model, profile)
    return ChainUser(model, profile, chain_settings(cfg))


def make_supporter(model: ChatModel, spec: SupporterSpec) -> Supporter:
    return Supporter(model, spec.name, supporter_prompt(spec.system_prompt), max_tokens=spec.max_tokens)
