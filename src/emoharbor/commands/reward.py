"""``emoharbor reward FILE``: the simulated user's reward for every reply in a file (the reward that
``evolve grpo`` trains on), written as JSON Lines with its parts, penalties and status.

Each row is appended to OUT as its reply is done, so a stopped run keeps what it finished: run the same
command again and it scores only the rest. A row is known by its context (id and content) and reply; it
says what it was made with (``made_with``: a hash of the reward settings, the user model and a hash of its
spec), and a run refuses an OUT made with anything else rather than mix the two. Rows that ended in
``error`` are done again. When all are done, OUT is rewritten in the order of the input."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import click

from .. import userfiles
from ..errors import ConfigError
from ..models.spec import ModelSpec
from ..overrides import validated
from .options import model_options, progress_opt
from .paths import OUT_FILE
from .specs import user_spec

# what a user model's rewards depend on (not: how many calls at once, timeouts, retries, keys, prices, ports)
USER_FIELDS = {"model", "base_url", "temperature", "top_p", "max_tokens", "extra_body", "json_mode", "context_size",
               "replies"}  # fmt: skip
Key = tuple[str, str, str]  # context id, a hash of the context, the reply


def _settings(path: Path | None) -> Any:
    from ..reward.settings import RewardSettings

    raw = userfiles.read_settings(path, "reward settings") if path else {}
    return validated(RewardSettings, raw, {}, str(path))


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def made_with(s: Any, spec: ModelSpec) -> dict[str, str]:
    """What every row records it was made with: the reward settings (but ``concurrency``) and the user model."""
    return {"settings": _hash(s.model_dump(mode="json", exclude={"concurrency"})),
            "user": spec.model + (f" at {spec.base_url}" if spec.base_url else ""),
            "user_spec": _hash(spec.model_dump(mode="json", include=USER_FIELDS))}  # fmt: skip


def _differs(have: dict[str, Any], want: dict[str, str]) -> str:
    what = []
    if have.get("user") != want["user"]:
        what.append(f"another user model ({have.get('user')}; this run's is {want['user']})")
    elif have.get("user_spec") != want["user_spec"]:
        what.append(f"the user model {want['user']} set otherwise")
    if have.get("settings") != want["settings"]:
        what.append("other reward settings (--settings)")
    return " and ".join(what)


def finished(out: Path, stamp: dict[str, str]) -> dict[Key, dict[str, Any]]:
    """The rows of an earlier run in ``out`` that this one keeps: all but those that ended in ``error``. A line
    cut short by a stop (the last, without its newline) is left out; rows made otherwise are refused."""
    if not out.is_file():
        return {}
    text = userfiles.read_text(out, "rewards file")
    lines = text.split("\n")
    again = f"give another --out, or delete {out} to start over"
    kept: dict[Key, dict[str, Any]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):  # the row being written when the run stopped
                continue
            raise ConfigError(f"{out}: line {n} is not a row of emoharbor reward (not JSON): {again}") from None
        fields = ("context", "context_hash", "reply", "status")
        if not isinstance(row, dict) or not isinstance(row.get("made_with"), dict) or any(k not in row for k in fields):
            raise ConfigError(f"{out}: line {n} is not a row of emoharbor reward that can be resumed (it does not say "
                              f"what it was made with): {again}")  # fmt: skip
        if row["made_with"] != stamp:
            raise ConfigError(f"{out} holds rewards made with {_differs(row['made_with'], stamp)} (line {n}): "
                              f"resuming there would mix the two; {again}")  # fmt: skip
        if row["status"] != "error":
            kept[(row["context"], row["context_hash"], row["reply"])] = row
    return kept


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _replace(out: Path, rows: list[dict[str, Any]]) -> None:
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(_line(r) for r in rows), encoding="utf-8")
    tmp.replace(out)


class _Appender:
    """Appends rows to a file as they come, each flushed; opens it on the first."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.f: IO[str] | None = None

    def add(self, row: dict[str, Any]) -> None:
        if self.f is None:
            self.f = self.path.open("a", encoding="utf-8")
        self.f.write(_line(row))
        self.f.flush()

    def __enter__(self) -> _Appender:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.f is not None:
            self.f.close()


@click.command("reward")
@click.argument("replies_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", type=OUT_FILE, required=True,
              help="JSONL file of rewards to write; a run stopped before it was done resumes in it")  # fmt: skip
@model_options(user="The simulated user's model.", old_user="--user")
@click.option("--settings", "settings_path", type=click.Path(path_type=Path, dir_okay=False),
              help="reward settings (YAML: the fields of an evolve config's grpo.reward)")  # fmt: skip
@progress_opt
def reward(replies_file: Path, out: Path, user_model: str, base_url: str | None, api_key_env: str | None,
           settings_path: Path | None, no_progress: bool) -> None:  # fmt: skip
    """Reward supporter replies by the simulated user's reaction (intensity, trust, fit) minus penalties.

    Stopped and started again with the same --out, it scores only the replies not done yet."""
    from dataclasses import fields

    from ..report.timings import by_step, timings_text
    from ..reward.replies_file import read_replies
    from ..reward.score import Scored, tally
    from ..store.units import progress_bar

    s = _settings(settings_path)
    spec = user_spec(user_model, base_url, api_key_env)
    items = read_replies(replies_file, s.user_agent.initial_trust)
    pairs = [(c, r) for c, rs in items for r in rs]
    stamp = made_with(s, spec)
    chash = {c.id: _hash(c.to_dict()) for c, _ in items}
    keys = [(c.id, chash[c.id], r) for c, r in pairs]
    have = finished(out, stamp)
    rows: list[dict[str, Any] | None] = [have.get(k) for k in keys]
    todo = [i for i, r in enumerate(rows) if r is None]
    if out.exists():  # keep only the rows kept: no error rows, no line cut short, none of other replies
        _replace(out, [r for r in rows if r is not None])
        if len(todo) < len(pairs):
            click.echo(f"resumed: {len(pairs) - len(todo)} of {len(pairs)} replies already scored in {out}", err=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if todo:
        bar = progress_bar(len(pairs), len(pairs) - len(todo), "reward", enabled=not no_progress, unit="reply")
        with _Appender(out) as sink, bar:

            def save(j: int, x: Scored) -> None:
                i = todo[j]
                rows[i] = row = {**x.to_dict(), "context_hash": keys[i][1], "made_with": stamp}
                sink.add(row)
                bar.update()

            calls: list[dict[str, Any]] = []
            asyncio.run(_score(spec, s, [pairs[i] for i in todo], save, calls))
        timed = timings_text(by_step(calls))
        if timed:
            click.echo(timed, err=True)
    done = [r for r in rows if r is not None]
    _replace(out, done)
    names = {f.name for f in fields(Scored)}
    t = tally([Scored(**{k: v for k, v in r.items() if k in names}) for r in done])
    mean = "no reply was scored" if t["mean_reward"] is None else f"mean reward {t['mean_reward']:.3f}"
    pens = ", ".join(f"{k} {v}" for k, v in t["penalties"].items()) or "none"
    click.echo(f"rewarded {t['replies']} replies of {len(items)} contexts: {t['ok']} scored, {t['unscored']} "
               f"unscored (the reaction did not parse), {t['error']} model errors; {mean}; penalties: {pens}; "
               f"wrote {out}")  # fmt: skip


async def _score(spec: ModelSpec, s: Any, pairs: list[Any], on_scored: Callable[[int, Any], None],
                 calls: list[dict[str, Any]]) -> list[Any]:  # fmt: skip
    """Score ``pairs``; each model call is added to ``calls`` as a row (its server's timings, where it has them)."""
    from ..models.pool import ModelPool
    from ..reward.score import UserReward
    from ..simulate import agents
    from ..store.run_store import call_row

    async with ModelPool(sink=lambda c: calls.append(call_row(c))) as pool:
        model = await pool.get(spec, "user") if agents.user_agent(s.user_agent.agent).needs_model else None
        return await UserReward(model, s).score_many(pairs, on_scored=on_scored)


COMMANDS = [reward]
