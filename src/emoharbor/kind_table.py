"""The built-in kinds of run: one line per kind, its name and where its class is (``module:Class``, imported
the first time the kind is asked for). The package imports this module first (``emoharbor/__init__.py``), so
``kinds.TABLE`` holds them before any module asks; it sits above every kind's package, ``kinds`` below them
all. A new kind is its own module and one line here (or one ``kinds.register`` call).
"""

from __future__ import annotations

from . import kinds

BUILT_IN = {
    "emoharbor": "emoharbor.evaluate.kind:EmoharborKind",
    "validate": "emoharbor.validate.kind:ValidateKind",
    "heart": "emoharbor.heart.kind:HeartKind",
    "sensitivity": "emoharbor.sensitivity.kind:SensitivityKind",
    "seekers": "emoharbor.seekers.kind:SeekersKind",
    "realism": "emoharbor.realism.kind:RealismKind",
    "ladder": "emoharbor.ladder.kind:LadderKind",
    "heart_strategy_check": "emoharbor.heart.kind:StrategyCheckKind",
    "evolve_refine": "emoharbor.evolve.kind:RefineKind",
    "evolve_replies": "emoharbor.evolve.kind:RepliesKind",
}

for _name, _where in BUILT_IN.items():
    kinds.TABLE.setdefault(_name, _where)
