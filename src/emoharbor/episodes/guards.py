"""Guards against the reward hacking that multi-turn RL with a simulated user has met: a reply that flatters
the seeker (pleasing without helping), and a reply that pushes the talk to its end to lock in a score (a
goodbye, "anything else?", "glad I could help" before the talk had its turns). Each is a penalty name,
counted per step and costed by ``EpisodeSettings.guards``."""

from __future__ import annotations

import re

FLATTERY = re.compile(
    r"\b(you(?:'re| are) (?:so|very|really|incredibly|truly|such an?) (?:strong|brave|amazing|wonderful|smart|"
    r"incredible|inspiring|special|resilient|courageous|wise|kind|great|amazing person|strong person)|"
    r"you(?:'re| are) (?:absolutely|completely|totally|100%) right|i (?:completely|totally|absolutely) agree|"
    r"what a (?:great|wonderful|brilliant|fantastic) (?:question|point|idea)|"
    r"you(?:'re| are) (?:amazing|incredible|a hero|a star|perfect)|you did(?: absolutely)? nothing wrong|"
    r"i(?:'m| am) (?:so )?(?:impressed|in awe) (?:by|with) you)",
    re.IGNORECASE,
)
CLOSING = re.compile(
    r"\b(good ?bye|bye for now|take care(?: of yourself)?[.!]?\s*$|talk (?:to you )?(?:later|soon)|"
    r"have a (?:good|nice|great|lovely) (?:day|night|evening|weekend)|(?:let'?s|we can|we should) "
    r"(?:stop|end|wrap (?:it |this )?up|leave it) (?:here|there|now|for today)|"
    r"(?:that'?s|this is) all for (?:now|today)|(?:glad|happy) (?:i|we) could help|hope (?:this|that) helped|"
    r"is there anything else|anything else (?:i can|you(?:'d| would) like)|feel better now\?)",
    re.IGNORECASE | re.MULTILINE,
)


def guard_hits(reply: str, turn: int, guard_turns: int) -> list[str]:
    """The guards ``reply`` hits as the ``turn``-th supporter reply of its episode (1 for the first)."""
    hits = {"flattery": FLATTERY.search(reply), "ends_early": turn <= guard_turns and CLOSING.search(reply)}
    return [name for name, hit in hits.items() if hit]
