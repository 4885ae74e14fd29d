"""A trained model's folder served by llama.cpp: ``local:FOLDER``.

A folder written by ``emoharbor evolve`` (or any PEFT LoRA folder, ``adapter_config.json`` and
``adapter_model.safetensors``) names its base model. When that base is a GGUF (a built-in model's name, as
``base_model: qwen0.5b``, or a ``.gguf`` path), the adapter is written once as a GGUF LoRA file (llama.cpp's
format: ``general.type: adapter``, ``adapter.type: lora``, ``adapter.lora.alpha``, and each target's A and B
as ``blk.N.attn_q.weight.lora_a`` / ``.lora_b``, float32) into the cache folder, under the hash of the adapter's
files, and the embedded server serves the base with it (``--lora``): the same weights the adapter was trained on
(transformers dequantized that GGUF), on llama.cpp's quantized kernels. ``hf:FOLDER`` serves the same model with
transformers. Needs the ``train`` extra (``gguf``, ``safetensors``, ``numpy``) for the first conversion only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from ..errors import ConfigError, EmoharborError
from .cache import default_cache_dir
from .folder import ADAPTER_CONFIG, ADAPTER_WEIGHTS, MODEL_CARD, TRAIN_HINT

# llama.cpp's rotary layout for these architectures' q and k differs from transformers': its converter permutes
# their rows, and transformers permutes them back when it reads the GGUF. Other architectures are taken as they are
# where they are known to need nothing (checked against transformers' logits in the tests: llama, qwen2).
PERMUTED_QK = {"llama"}
PLAIN = {"qwen2"}
PEFT_KEY = re.compile(r"(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<ab>[AB])(?:\.default)?\.weight")


def adapter_base(folder: Path, built_in: tuple[str, ...]) -> str:
    """The name ``local.resolve_gguf`` takes for the folder's base model (one of ``built_in``, or a .gguf path): its
    card's ``base_model``, else PEFT's ``base_model_name_or_path``; a base that is not a GGUF is refused in one line."""
    card, config = folder / MODEL_CARD, folder / ADAPTER_CONFIG
    if not config.is_file():
        raise ConfigError(
            f"{folder}: no {ADAPTER_CONFIG}: local:FOLDER takes a trained model's folder (a LoRA adapter)"
        )
    source = card if card.is_file() else config
    field = "base_model" if source is card else "base_model_name_or_path"
    try:
        base = str(json.loads(source.read_text(encoding="utf-8")).get(field) or "")
    except (OSError, json.JSONDecodeError, AttributeError) as e:
        raise ConfigError(f"{source}: cannot read field {field!r} ({e})") from None
    name = base.removeprefix("local:")
    if name in built_in or (name.endswith(".gguf") and Path(name).expanduser().is_file()):
        return name
    raise ConfigError(
        f"{source}: field {field!r} is {base!r}, not a GGUF (a built-in model or a .gguf file): local:{folder} "
        f"serves an adapter on a GGUF base only; serve it with hf:{folder}"
    )


def adapter_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
        path = folder / name
        if not path.is_file():
            raise ConfigError(f"{folder}: {name} is missing: not a LoRA adapter folder")
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def lora_gguf(folder: Path, base: Path) -> Path:
    """The adapter of ``folder`` as a GGUF LoRA file for the GGUF ``base``, written once into the cache folder; its
    name is the hash of the adapter's files."""
    dest = default_cache_dir() / "lora" / f"{adapter_hash(folder)[:24]}.gguf"
    if not dest.is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(f".{os.getpid()}.tmp")
        try:
            write_lora_gguf(folder, base, tmp)
            os.replace(tmp, dest)  # whole or absent: a killed conversion leaves no half-written file
        finally:
            tmp.unlink(missing_ok=True)
    return dest


def _field(reader: object, key: str) -> object:
    field = reader.fields.get(key)  # type: ignore[attr-defined]
    if field is None:
        raise EmoharborError(f"the base GGUF has no {key!r}: cannot map the adapter's tensors onto it")
    return field.contents()


def _int(reader: object, key: str) -> int:
    value = _field(reader, key)
    if not isinstance(value, int):
        raise EmoharborError(f"the base GGUF's {key!r} is not a whole number: {value!r}")
    return value


def write_lora_gguf(folder: Path, base: Path, dest: Path) -> None:
    """PEFT's LoRA tensors of ``folder`` renamed to the base GGUF's tensor names (``gguf``'s name map for the base's
    architecture), written as llama.cpp reads an adapter. What llama.cpp cannot apply as it was trained (DoRA,
    rsLoRA's scaling, per-module ranks or alphas, whole modules saved beside the adapter) is refused by name."""
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    if not isinstance(config.get("lora_alpha"), int | float):
        raise ConfigError(f"{folder / ADAPTER_CONFIG}: field 'lora_alpha' is missing or not a number")
    for key in ("use_dora", "use_rslora", "rank_pattern", "alpha_pattern", "modules_to_save"):
        if config.get(key):
            raise ConfigError(f"{folder / ADAPTER_CONFIG}: field {key!r} is set: llama.cpp applies plain LoRA "
                              f"only; serve it with hf:{folder}")  # fmt: skip
    try:
        import gguf
        import numpy as np
        from safetensors.numpy import load_file
    except ImportError:
        raise EmoharborError(f"serving an adapter on llama.cpp (local:{folder}) needs {TRAIN_HINT}") from None
    reader = gguf.GGUFReader(base)
    arch = str(_field(reader, "general.architecture"))
    arch_ids = {name: arch_id for arch_id, name in gguf.MODEL_ARCH_NAMES.items()}
    if arch not in arch_ids or arch not in PERMUTED_QK | PLAIN:
        raise EmoharborError(f"{base}: an adapter on architecture {arch!r} is not served by llama.cpp here (only "
                             f"{', '.join(sorted(PERMUTED_QK | PLAIN))}): serve it with hf:{folder}")  # fmt: skip
    heads = {}  # the head count by which a target's B rows are permuted
    if arch in PERMUTED_QK:
        heads = {"attn_q": _int(reader, f"{arch}.attention.head_count"),
                 "attn_k": _int(reader, f"{arch}.attention.head_count_kv")}  # fmt: skip
    names = gguf.get_tensor_name_map(arch_ids[arch], _int(reader, f"{arch}.block_count"))
    writer = gguf.GGUFWriter(dest, arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))  # checked above
    for key, array in sorted(load_file(folder / ADAPTER_WEIGHTS).items()):
        m = PEFT_KEY.fullmatch(key)
        target = names.get_name(f"{m['module']}.weight", try_suffixes=(".weight",)) if m else None
        if m is None or target is None:
            raise ConfigError(f"{folder / ADAPTER_WEIGHTS}: tensor {key!r} has no place in a {arch} GGUF: serve it "
                              f"with hf:{folder}")  # fmt: skip
        array = np.asarray(array, dtype=np.float32)
        n = heads.get(target.split(".")[2], 0) if target.startswith("blk.") else 0
        if n and m["ab"] == "B":  # B's rows are the weight's rows, permuted as the converter permuted them
            array = array.reshape(n, 2, array.shape[0] // n // 2, -1).swapaxes(1, 2).reshape(array.shape)
        writer.add_tensor(f"{target}.lora_{m['ab'].lower()}", np.ascontiguousarray(array))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
