"""The pages: a Jinja2 environment with autoescaping on for every template, and what each page shows.
Nothing here puts a competitor name, a conversation id or an item's source on a rater's page."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..assess.dimensions import dimensions as conversation_dimensions
from ..heart.dimensions import DIMENSIONS, OVERALL
from .forms import PAIR, pair_keys
from .study import Assignment, Item

HERE = Path(__file__).parent
STRENGTHS = [(1, "slightly"), (2, "somewhat"), (3, "clearly"), (4, "much"), (5, "far")]
SPEAKERS = {"seeker": "Help-seeker", "user": "Help-seeker", "supporter": "Supporter"}


@cache
def environment() -> Environment:
    return Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined)


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def heart_dims(keys: list[str]) -> list[dict[str, str]]:
    out = [{"key": k, "name": DIMENSIONS[k].name, "description": DIMENSIONS[k].description} for k in keys]
    out.append({"key": OVERALL, "name": "Overall", "description": "all things considered, the better next message"})
    return out


def conversation_dims() -> list[dict[str, Any]]:
    return [
        {"key": d.key, "name": d.key.replace("_", " ").capitalize(), "ask": d.ask[:1].upper() + d.ask[1:],
         "levels": [(lvl, d.levels[lvl]) for lvl in sorted(d.levels)]}
        for d in conversation_dimensions()
    ]  # fmt: skip


def turns(item: Item) -> list[dict[str, str]]:
    return [
        {"who": SPEAKERS.get(t["speaker"], "Speaker"), "side": "seeker" if t["speaker"] != "supporter" else "supporter",
         "text": t["text"]}
        for t in item.content["turns"]
    ]  # fmt: skip


def item_context(item: Item, a: Assignment, dims: list[str]) -> dict[str, Any]:
    """What the item page shows: the dialogue and, for a pair, the two replies in this rater's order."""
    ctx: dict[str, Any] = {"kind": item.rated, "turns": turns(item), "situation": item.content.get("situation", "")}
    if item.rated == PAIR:
        replies = item.content["replies"]
        other = "b" if a.first == "a" else "a"
        ctx.update(reply_a=replies[a.first], reply_b=replies[other], dims=heart_dims(dims), strengths=STRENGTHS)
        ctx["dim_keys"] = pair_keys(dims)
    else:
        ctx.update(dims=conversation_dims())
    return ctx
