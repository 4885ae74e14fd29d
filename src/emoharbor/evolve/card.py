"""The model card of every adapter emoharbor trains: ``evolve_model.json`` (what the stage read and did: base
model, data and sizes, settings, losses; the evaluation deltas once ``evolve eval`` has measured them) and a
``README.md`` written from it, in place of PEFT's empty template with a local path."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..models.folder import MODEL_CARD
from ..models.hf import read_model_card
from ..tables import md_table, num
from .pairs import PreferencePair

README = "README.md"
TRAINED_PROFILES = "trained_profiles"  # the ids of the simulated users' profiles a model (or its parents) trained on
VOICE_ADAPTER = ("A LoRA adapter trained on real seekers' messages (`sft.role: user`): it writes a simulated user's "
                 "messages (`user_agent.voice_model`), not a supporter's replies.")  # fmt: skip


def write_card(folder: Path, card: dict[str, Any]) -> None:
    """The JSON card last of all (a folder with a card is a whole model), the README beside it."""
    (folder / README).write_text(card_markdown(card), encoding="utf-8")
    tmp = folder / f"{MODEL_CARD}.partial"
    tmp.write_text(json.dumps(card, indent=2, sort_keys=True, default=str), encoding="utf-8")
    os.replace(tmp, folder / MODEL_CARD)


def add_evaluation(folder: Path, evaluation: dict[str, Any]) -> None:
    """Record what ``evolve eval`` measured in a model's card (and its README)."""
    add_to_card(folder, "evaluation", evaluation)


def add_to_card(folder: Path, key: str, value: dict[str, Any]) -> None:
    """``value`` under ``key`` in a model's card (and its README)."""
    write_card(folder, {**read_model_card(folder), key: value})


def trained_profiles(parent: dict[str, Any], pairs: list[PreferencePair]) -> list[str]:
    """The profiles a model trained on: its parent's (its card's ``TRAINED_PROFILES``) and those its pairs were
    drawn from (``provenance.profile_id``: refine's profile contexts, ``evolve pairs``' runs)."""
    ids = {str(p.provenance["profile_id"]) for p in pairs if p.provenance.get("profile_id")}
    return sorted(ids | set(parent.get(TRAINED_PROFILES) or []))


def refuse_trained_profiles(profiles: list[str], folders: list[Path | str]) -> None:
    """A ConfigError in one line when one of ``profiles`` (an evaluation's) is one a model in ``folders`` trained
    on, as its card says."""
    for folder in folders:
        if not (Path(folder) / MODEL_CARD).is_file():
            continue
        seen = sorted(set(profiles) & set(read_model_card(Path(folder)).get(TRAINED_PROFILES) or []))
        if seen:
            raise ConfigError(f"profile {seen[0]} is one {folder} was trained on ({MODEL_CARD}: field "
                              f"'{TRAINED_PROFILES}'): evaluate on profiles no model was trained on")  # fmt: skip


def _losses(logs: list[dict[str, Any]]) -> str:
    if not logs:
        return "no logged steps"
    first, last = logs[0], logs[-1]
    out = f"loss {num(first.get('loss'), 3)} at step {int(first.get('step', 0))} -> {num(last.get('loss'), 3)} at step "
    out += f"{int(last.get('step', 0))}"
    if "reward_accuracy" in last:
        out += f"; reward accuracy {num(last['reward_accuracy'], 2)}, margin {num(last.get('reward_margin'), 3)}"
    return out


def shown_line(shown: dict[str, Any], items: str) -> str:
    """What the training prompts showed of the seeker (``personal.shown_record``)."""
    n = int(shown.get("with_situation", 0))
    total = n + int(shown.get("talk_only", 0))
    if not n:
        return f"Shown: the talk alone in all {total} {items} (no seeker's situation in a system prompt)"
    return (f"Shown: the seeker's emotion, problem and situation in the system prompt of {n} of {total} {items} "
            f"(share {shown.get('share')}, prompt `{shown.get('prompt')}`); the talk alone in the rest, as an "
            "evaluation shows it")  # fmt: skip


def _reply_card(r: dict[str, Any] | None) -> list[str]:
    """The reply card's row of this model (``evolve eval --contexts N``), as lines of the README."""
    if not isinstance(r, dict):
        return []
    ci = f" [{num(r.get('lo'))}, {num(r.get('hi'))}]" if r.get("lo") is not None else ""
    line = (f"- {r.get('judge')}: {num(r.get('mean'))}{ci} over {r.get('scored')} replies ({r.get('unscored')} "
            f"unscored, {r.get('no_reply')} without a reply), {num(r.get('words'), 1)} words a reply")  # fmt: skip
    d = r.get("minus_first")
    if isinstance(d, dict):
        di = f" [{num(d.get('lo'), signed=True)}, {num(d.get('hi'), signed=True)}]" if d.get("lo") is not None else ""
        line += (
            f"; minus {r.get('reference')} on the same {d.get('n')} contexts: {num(d.get('mean'), signed=True)}"
            f"{di}, P(> 0) {num(d.get('p_above_0'))}, words {num(r.get('words_minus_first'), 1, signed=True)}"
        )
    return ["", f"## Reply card ({r.get('contexts')} held-out ESConv contexts, `emoharbor evolve eval`)", "", line]


def card_markdown(card: dict[str, Any]) -> str:
    stage, train = str(card.get("stage", "?")), card.get("train") or {}
    lora = (card.get("config") or {}).get("lora") or {}
    modules = ", ".join(lora.get("target_modules") or [])
    top = f", top {lora['top_layers']} layers" if lora.get("top_layers") else ""
    items = "pairs" if stage == "dpo" else "examples"
    control = card.get("control")
    title = "the control (DPO on pairs swapped at random)" if control else f"{stage.upper()} round {card.get('round')}"
    voice = card.get("role") == "user"
    what = (VOICE_ADAPTER if voice else "A LoRA adapter trained by emoharbor's self-evolution (`emoharbor evolve`), "
            "for emotional-support replies.")  # fmt: skip
    lines = [
        f"# {Path(str(card.get('out', ''))).name or 'emoharbor adapter'}: {'the seeker voice' if voice else title}",
        "",
        what,
        "",
        f"- Base model: `{card.get('base_model')}`" + (f" (`{card['base']}`)" if card.get("base") else ""),
        f"- Parent: `{card.get('parent')}`" if card.get("parent") else "- Parent: the base model",
        f"- LoRA: r {lora.get('r')}, alpha {lora.get('alpha')}, dropout {lora.get('dropout')}, on {modules}{top}",
        f"- Training: {train.get('engine', '?')}, {train.get('steps', '?')} steps, {train.get('items', '?')} {items}, "
        f"{train.get('world_size', 1)} process(es); {_losses(train.get('logs') or [])}",
    ]
    data = card.get("examples") or card.get("pairs")
    if isinstance(data, dict):
        lines.append("- Data: " + ", ".join(f"{k} {v}" for k, v in data.items()))
    if isinstance(control, dict):
        lines.append(
            f"- Control: trained from M0 on the {control.get('pairs')} pairs of the run's "
            f"{control.get('rounds')} round(s) with {control.get('swapped')} of them swapped at random "
            f"(chosen for rejected; seed {control.get('seed')}), for {control.get('steps')} optimizer steps, "
            "the rounds' together: a gain of a round's model over it is its preferences', not more training"
        )
    for role, models in (card.get("teachers") or {}).items():
        lines.append(f"- Teacher ({role}): {', '.join(f'`{m}`' for m in models)} wrote the reflections the chosen "
                     "replies were written from; the replies themselves are the policy's own")  # fmt: skip
    shown = card.get("shown")
    if isinstance(shown, dict):
        lines.append(f"- {shown_line(shown, items)}")
    if card.get(TRAINED_PROFILES):
        lines.append(f"- Profiles: trained on contexts of {len(card[TRAINED_PROFILES])} simulated users' profiles "
                     f"(`{TRAINED_PROFILES}`), which `evolve eval` refuses to evaluate on")  # fmt: skip
    lines.append(f"- Wall time: {num(card.get('wall_s'), 0)} s")
    ev = card.get("evaluation")
    if ev:
        lines += ["", f"## Evaluation (`emoharbor evolve eval`, run folder `{ev.get('run')}`)", ""]
        rows = []
        for judge, dims in ev.get("means", {}).items():
            for dim, v in dims.items():
                delta = num(v["delta"], signed=True) if v.get("delta") is not None else "-"
                rows.append([judge, dim, num(v.get("mean")), delta, int(v.get("scored", 0))])
        unrated = f"no judge rated a conversation of {ev.get('run')}: see `emoharbor leaderboard RUN`"
        lines.append(md_table(["judge", "dimension", "mean", f"minus {ev.get('reference')}", "scored"], rows, unrated))
    else:
        lines += ["", "Not evaluated yet: `emoharbor evolve eval` adds the per-dimension deltas here."]
    lines += _reply_card(card.get("reply_card"))
    lines += ["", "The full record, with every setting and logged step, is `evolve_model.json` beside this file."]
    return "\n".join(lines).rstrip() + "\n"
