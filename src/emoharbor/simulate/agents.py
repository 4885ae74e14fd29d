"""The simulated users, in one registry: an agent is its name, its settings class, the prompt files it reads,
what it can do, and a factory. ``chain`` (the Chain-of-Agent user), ``simple`` (one call per message) and
``rules`` (no model: a reaction computed from the reply's words) register themselves here; a user's own agent
is its own module with one ``register_agent(...)`` line (docs/extending.md).

Every command that needs a simulated user reads the same block of settings (``user_agent:``), validated by
the agent's own class: ``{agent: chain, intensity_step: 15, ...}``, or a bare name for its defaults. A
user's agent is named ``module:name`` (``mypkg.users:kind_words``): the module is imported, it registers
``name``, and the run's stored config names it the same way, so reading the run back imports it again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SerializeAsAny, ValidationError

from ..errors import ConfigError
from ..models.base import ChatModel
from ..models.spec import ModelSpec, spec_input
from ..profiles.schema import Profile
from ..registry import add, caller, lookup
from .user_agent import PerceivingUser, UserAgent

BUILT_IN = ("chain_user", "simple_user", "rules_user")  # modules of this package that register an agent
DEFAULT = "chain"


class UserSettings(BaseModel):
    """The settings every agent's class extends: ``agent`` names the agent, the rest are its own."""

    model_config = ConfigDict(extra="forbid")
    open_settings: ClassVar[bool] = True  # its fields are the chosen agent's: ``--set`` keys are checked by it

    agent: str = DEFAULT


class ReactionSettings(UserSettings):
    """The settings of an agent with ``reactions``: the bounds its reaction is measured in (the reward divides
    the relief by ``intensity_step`` and the trust change by ``trust_step``)."""

    intensity_step: int = Field(default=15, ge=1, le=50)  # the most intensity moves after one message
    trust_step: int = Field(default=20, ge=1, le=50)
    initial_trust: int = Field(default=40, ge=0, le=100)


class VoiceSettings(UserSettings):
    """The settings of a user that writes in its own voice (``voice.py``): real seekers' messages as examples
    (``examples``: an ESConv file, ``examples_k`` of its talks nearest the profile's story; off by default) and
    how much of the talk its chat shows (``window``)."""

    examples: str | None = None
    examples_k: int = Field(default=4, ge=0, le=20)
    # the supporter turns its chat shows (with its own messages between them) when it writes; 0: the whole talk.
    # Fewer of its own earlier messages in view, fewer to drift from (the repeat check still reads them all)
    window: int = Field(default=0, ge=0)
    # how its chat shows the supporter's messages: as the other side's turns (``chat``), or each marked as the
    # listener's words (``quoted``: the frame in ``voice.FRAMES``), so a model writing as the seeker is told
    # whose words it is answering
    framing: Literal["chat", "quoted"] = "chat"
    # times a message that repeats an earlier one or slips out of the seeker's voice is asked for again
    reasks: int = Field(default=1, ge=0, le=4)
    # a model that writes its messages in place of the user's model (``voice_model.py``); None: the user's own
    voice_model: Annotated[ModelSpec | None, BeforeValidator(spec_input)] = None


S = TypeVar("S", bound=UserSettings)


@dataclass(frozen=True)
class Agent:
    name: str
    settings: type[UserSettings]
    make: Callable[[ChatModel | None, Profile, Any], UserAgent]  # (model, profile, settings) -> the user
    prompts: tuple[str, ...] = ()  # the prompt files a conversation with it reads (their versions: the run record)
    reaction_prompts: tuple[str, ...] = ()  # those its ``perceive`` reads
    perceives: bool = False  # ``perceive(turns, seed)`` (read off its class): its state moves on a message
    # without a reply (replays)
    reactions: bool = False  # its reaction has the readouts the reward reads (feeling, the appraisal's fit)
    needs_model: bool = True  # False: it calls no model (rule-based)


def user_class(make: Callable[..., Any]) -> type | None:
    """The class of the users ``make`` returns: ``make`` itself when it is a class, else the one class with
    ``react`` that its code names (``lambda model, profile, s: Echo(s)``: ``Echo``); None when there is not
    exactly one."""
    if isinstance(make, type):
        return make
    try:
        names = inspect.getclosurevars(make)
    except TypeError:  # not a function written in Python (a ``functools.partial``)
        return None
    named = (*names.nonlocals.values(), *names.globals.values())
    found = {v for v in named if isinstance(v, type) and hasattr(v, "react")}
    return found.pop() if len(found) == 1 else None


def has_method(cls: type, method: str) -> bool:
    """Whether ``cls`` has ``method`` as a real async method (its own or a parent's; not the protocol's stub)."""
    found = getattr(cls, method, None)
    return inspect.iscoroutinefunction(found) and found is not getattr(PerceivingUser, method, None)


def perceiving(name: str, module: str, settings: type[UserSettings], make: Callable[..., Any], *,
               reaction_prompts: tuple[str, ...], perceives: bool | None, reactions: bool) -> bool:  # fmt: skip
    """Whether the agent perceives, read off the class its factory makes (it has ``perceive``), after checking
    what its registration says against that class: its ``settings``, ``perceives`` (when given), ``reactions``
    (they are read from ``perceive``, in the bounds of ``ReactionSettings``) and ``reaction_prompts`` (what
    ``perceive`` reads); a mismatch is one line naming the module, the agent and the flag."""

    def refuse(flag: str, why: str) -> ConfigError:
        return ConfigError(f"simulated user {name!r} of module {module}: {flag}: {why}")

    base = ReactionSettings if reactions else UserSettings
    if not issubclass(settings, base):
        flag = "reactions=True" if reactions else "settings"
        raise refuse(flag, f"its settings class {settings.__name__} must extend emoharbor.simulate.agents."
                     f"{base.__name__}")  # fmt: skip
    cls = user_class(make)
    if cls is None:
        raise refuse("make", "its factory names no single class of user (one with open and react): name it, "
                     "as in lambda model, profile, settings: MyUser(settings)")  # fmt: skip
    for method in ("open", "react"):
        if not has_method(cls, method):
            raise refuse("make", f"{cls.__name__} has no async {method}(...)")
    has = has_method(cls, "perceive")
    if perceives is not None and perceives != has:
        raise refuse(f"perceives={perceives}", f"{cls.__name__} {'has' if has else 'has no'} async perceive(turns, "
                     "seed) (leave the flag out: it is read off the class)")  # fmt: skip
    if reactions and not has:
        raise refuse("reactions=True", f"reactions are read from perceive(turns, seed), which {cls.__name__} "
                     "has not")  # fmt: skip
    if reaction_prompts and not has:
        raise refuse("reaction_prompts", f"they are what perceive reads, which {cls.__name__} has not")
    return has


AGENTS: dict[str, Agent] = {}


def register_agent(name: str, settings: type[S], make: Callable[[ChatModel | None, Profile, S], UserAgent], *,
                   prompts: tuple[str, ...] = (), reaction_prompts: tuple[str, ...] = (), perceives: bool | None = None,
                   reactions: bool = False, needs_model: bool = True) -> Agent:  # fmt: skip
    """Make ``name`` a simulated user a config can choose (``user_agent: {agent: NAME, ...}``). Whether it
    perceives is read off the class ``make`` returns, and what the call says must agree with it (``perceiving``)."""
    module = caller()
    can = perceiving(name, module, settings, make, reaction_prompts=reaction_prompts, perceives=perceives,
                     reactions=reactions)  # fmt: skip
    agent = Agent(name, settings, make, prompts, reaction_prompts, can, reactions, needs_model)
    add(AGENTS, name, agent, module=module, what="simulated user")
    return agent


def user_agent(name: str) -> Agent:
    """The agent ``name``: a built-in one, or ``module:name`` (the module is imported and registers it)."""
    return lookup(AGENTS, name, __package__ or "", BUILT_IN, field="user_agent.agent", what="simulated user")


def user_settings(value: Any) -> UserSettings:
    """A ``user_agent:`` block (a mapping, a bare agent name, or settings already made) as its agent's
    settings; an unknown agent or a bad field is a ValueError naming the field inside the block."""
    if isinstance(value, UserSettings):
        return value
    data = {"agent": value} if isinstance(value, str) else dict(value or {})
    name = str(data.get("agent", DEFAULT))
    try:
        agent = user_agent(name)
    except ConfigError as e:
        raise ValueError(str(e).removeprefix("user_agent.agent ")) from None
    try:
        return agent.settings.model_validate({**data, "agent": name})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {first['msg']} (the settings of agent {name})") from None


def reaction_settings(value: Any) -> ReactionSettings:
    """A ``user_agent:`` block whose agent has ``reactions`` (what the reward and the sensitivity suite read)."""
    settings = user_settings(value)
    try:
        require(settings, "reactions", "the reward")
    except ConfigError as e:
        raise ValueError(str(e).removeprefix("user_agent.")) from None
    assert isinstance(settings, ReactionSettings)  # register_agent checks it
    return settings


# the type of a ``user_agent:`` field: validated by the agent's own class, dumped with all its fields
UserBlock = Annotated[SerializeAsAny[UserSettings], BeforeValidator(user_settings)]
ReactionBlock = Annotated[SerializeAsAny[ReactionSettings], BeforeValidator(reaction_settings)]


def needs(model: ChatModel | None, agent: str) -> ChatModel:
    """The model an agent that calls one was given (a factory's first line)."""
    if model is None:
        raise ConfigError(f"the simulated user {agent} needs a model: --model on a command, roles.user in a run config")
    return model


def default_user() -> ReactionSettings:
    """The default ``user_agent:`` block: the chain with its defaults."""
    return reaction_settings(DEFAULT)


def stored_settings(config: dict[str, Any]) -> UserSettings:
    """The simulated user's settings a run stored (its ``user_agent:`` block; the default where it kept none)."""
    return user_settings(config.get("user_agent") or default_user())


def same_user(a: Any, b: Any) -> bool:
    """Whether two stored ``user_agent:`` blocks are the same simulated user: each read by its agent's class, so
    a setting added after one was written reads there as its default (what the user did before it existed)."""
    try:
        return user_settings(a).model_dump(mode="json") == user_settings(b).model_dump(mode="json")
    except (ValueError, ConfigError):
        return bool(a == b)


def make_user(model: ChatModel | None, profile: Profile, settings: UserSettings) -> UserAgent:
    return user_agent(settings.agent).make(model, profile, settings)


def joining_user(model: ChatModel | None, profile: Profile, settings: UserSettings, turn: int) -> UserAgent:
    """A user made as ``make_user`` makes it, joining a real talk after ``turn`` supporter messages: one with an
    inner state starts it there as it starts a talk (the profile's intensity, its initial trust)."""
    user = make_user(model, profile, settings)
    if isinstance(user, PerceivingUser):
        user.state = user.state.model_copy(update={"turn": turn})
    return user


def require(settings: UserSettings, what: str, purpose: str) -> Agent:
    """The agent of ``settings``, refused with one line when it cannot do ``what`` ("reactions" or
    "perceives") that ``purpose`` needs."""
    agent = user_agent(settings.agent)
    if not getattr(agent, what):
        said = {"reactions": "has no reaction readouts (relief, trust, fit)",
                "perceives": "cannot react to a message without writing one"}[what]  # fmt: skip
        raise ConfigError(f"user_agent.agent {agent.name}: this simulated user {said}, which {purpose} needs: "
                          "choose one that does (chain, rules)")  # fmt: skip
    return agent


def perceiving_user(model: ChatModel | None, profile: Profile, settings: UserSettings, purpose: str) -> PerceivingUser:
    """The user of ``settings`` for ``purpose`` (a replay, the reward), which needs its ``perceive``."""
    require(settings, "perceives", purpose)
    user = make_user(model, profile, settings)
    assert isinstance(user, PerceivingUser), f"agent {settings.agent} says it perceives but has no perceive()"
    return user
