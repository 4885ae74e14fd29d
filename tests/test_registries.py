"""The registries check what is registered in them: a simulated user's capabilities are read off the class its
factory makes, and what its registration says must agree with it (one line naming the module, the agent and
the flag); and every kind of run's ``check`` means the same by ``new``: the models the run names are built,
resumed or not, and their endpoints reached for a new run only (``preflight.check_run_models``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from emoharbor import kinds, preflight
from emoharbor.config import RunConfig
from emoharbor.errors import ConfigError
from emoharbor.evaluate.plan import Plan
from emoharbor.models.spec import ModelSpec
from emoharbor.simulate import agents
from emoharbor.simulate.agents import ReactionSettings, UserSettings, register_agent
from emoharbor.simulate.user_agent import PerceivingUser, UserStep


class Speaks:
    """A user that writes and never perceives."""

    def __init__(self, settings: Any) -> None:
        self.s = settings

    def initial_state(self) -> None:
        return None

    async def open(self, seed: int) -> UserStep:
        return UserStep(text="Hello.")

    async def react(self, turns: Any, seed: int) -> UserStep:
        return UserStep(text="I see.")


class Perceives(Speaks):
    """A user whose state moves on a message without a reply."""

    async def perceive(self, turns: Any, seed: int) -> UserStep:
        return UserStep(text="", inner={"appraisal": {"fit": "good"}, "feeling": {"feel_better": 1}})


class SaysItPerceives(Speaks, PerceivingUser):
    """Claims the protocol, but its ``perceive`` is the protocol's stub."""


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents registered by a test stay in the test (the built-in ones registered first)."""
    agents.user_agent(agents.DEFAULT)
    monkeypatch.setattr(agents, "AGENTS", dict(agents.AGENTS))


def test_what_an_agent_can_do_is_read_off_its_class(registry: None) -> None:
    speaks = register_agent("speaks", UserSettings, lambda model, profile, s: Speaks(s), needs_model=False)
    perceives = register_agent("perceives", ReactionSettings, lambda model, profile, s: Perceives(s),
                               reaction_prompts=("user_feel",), reactions=True, needs_model=False)  # fmt: skip
    assert (speaks.perceives, speaks.reactions) == (False, False)
    assert (perceives.perceives, perceives.reactions) == (True, True)
    assert agents.user_agent("perceives") is perceives
    # the built-in agents, as registered by their modules
    assert [(a.perceives, a.reactions) for a in map(agents.user_agent, ("chain", "simple", "rules"))] == [
        (True, True), (False, False), (True, True)]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "settings", "said", "refused"),
    [
        (Speaks, UserSettings, {"perceives": True}, "perceives=True: Speaks has no async perceive(turns, seed)"),
        (SaysItPerceives, UserSettings, {"perceives": True}, "perceives=True: SaysItPerceives has no async perceive"),
        (Perceives, UserSettings, {"perceives": False}, "perceives=False: Perceives has async perceive(turns, seed)"),
        (Speaks, ReactionSettings, {"reactions": True}, "reactions=True: reactions are read from perceive"),
        (Perceives, UserSettings, {"reactions": True}, "reactions=True: its settings class UserSettings must extend"),
        (Speaks, UserSettings, {"reaction_prompts": ("user_feel",)}, "reaction_prompts: they are what perceive reads"),
    ],
)
def test_a_registration_that_disagrees_with_its_class_is_refused_in_one_line(
    cls: type, settings: type[UserSettings], said: dict[str, Any], refused: str, registry: None
) -> None:
    with pytest.raises(ConfigError) as e:
        register_agent("mine", settings, lambda model, profile, s: cls(s), **said)
    assert str(e.value).startswith(f"simulated user 'mine' of module test_registries: {refused}")
    assert "\n" not in str(e.value)
    assert "mine" not in agents.AGENTS


def test_a_factory_that_names_no_class_of_user_is_refused(registry: None) -> None:
    def build(model: Any, profile: Any, settings: Any) -> Any:
        return make(settings)

    make = Speaks
    with pytest.raises(ConfigError, match=r"simulated user 'hidden' of module test_registries: make: its factory "
                       r"names no single class of user"):  # fmt: skip
        register_agent("hidden", UserSettings, lambda model, profile, s: build(model, profile, s))
    assert register_agent("named", UserSettings, build).perceives is False  # ``make``, named in it, is the class


# -- every kind's check: the models built always, reached for a new run only ------------------------------------
def spec(name: str) -> ModelSpec:
    return ModelSpec(model=name, base_url=f"http://127.0.0.1:9/{name}/v1")


def judged(*names: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(card=SimpleNamespace(name=n), model=spec(n)) for n in names]


PLANS: dict[str, Any] = {
    "validate": SimpleNamespace(opts=SimpleNamespace(user=spec("user")), chain=True, judges=judged("j1")),
    "sensitivity": SimpleNamespace(opts=SimpleNamespace(user=spec("user")), judges=judged("j1", "j2")),
    "seekers": SimpleNamespace(opts=SimpleNamespace(user=None), judges=judged("j1")),
    "realism": SimpleNamespace(opts=SimpleNamespace(user=spec("user"), supporter_model=spec("sup")), talks=[1]),
    "ladder": SimpleNamespace(
        opts=SimpleNamespace(user=spec("user"), supporter_model=spec("sup")),
        rungs=[SimpleNamespace(scripted=False)],
        judges=judged("j1"),
    ),
    "heart": SimpleNamespace(
        models=lambda: [("candidates.0", spec("cand")), ("judges.0", spec("judge"))],
        where="heart.yaml",
        cfg=SimpleNamespace(candidates=[spec("cand")]),
    ),
}


@pytest.mark.parametrize("kind", ["emoharbor", *PLANS])
def test_every_kind_builds_its_models_on_a_resume_and_reaches_them_for_a_new_run_only(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    reached: list[str] = []
    monkeypatch.setattr(
        preflight, "check_named_models", lambda named, _where="": built.extend(s.model for _, s in named)
    )
    monkeypatch.setattr(preflight, "check_reach", lambda specs: reached.extend(s.model for s in specs))
    plan = Plan.of(RunConfig()) if kind == "emoharbor" else PLANS[kind]
    kinds.of(kind).check(plan, new=False)
    assert built and not reached
    resumed = list(built)
    built.clear()
    kinds.of(kind).check(plan, new=True)
    assert built == resumed  # the same models built, new or not
    assert reached == (["cand"] if kind == "heart" else built)  # HEART's first command calls its candidates only


def test_a_bad_model_spec_is_named_on_a_resume_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_FOR_EMOHARBOR", raising=False)
    bad = ModelSpec(model="judge-m", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_FOR_EMOHARBOR")
    plan = SimpleNamespace(opts=SimpleNamespace(user=None), judges=[SimpleNamespace(card=SimpleNamespace(name="j1"),
                                                                                    model=bad)])  # fmt: skip
    with pytest.raises(
        ConfigError, match="--judge j1: model 'judge-m': environment variable NO_SUCH_KEY_FOR_EMOHARBOR"
    ):
        kinds.of("seekers").check(plan, new=False)
