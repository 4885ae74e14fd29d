"""LoRA adapters loaded into a running server at run time: vLLM (started with ``--enable-lora`` and
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``) and SGLang (``--enable-lora``) take ``POST /v1/load_lora_adapter``
(SGLang also at ``/load_lora_adapter``) with ``{"lora_name", "lora_path"}``; the adapter is then served under
``lora_name`` as a model of its own. The path is read by the server, so it must be a path the server sees."""

from __future__ import annotations

from pathlib import Path

import httpx

from ..errors import EmoharborError
from .openai_compat import api_key
from .spec import ModelSpec


async def load_lora_adapter(spec: ModelSpec, name: str, path: Path) -> list[str]:
    """Load the adapter in ``path`` as ``name`` on every endpoint of ``spec``; returns the endpoints. An adapter
    already loaded under that name is taken as loaded (the same round started again)."""
    key = api_key(spec)
    headers = {"Authorization": f"Bearer {key}", **spec.headers}
    body = {"lora_name": name, "lora_path": str(Path(path).resolve())}
    done = []
    async with httpx.AsyncClient(timeout=spec.call_timeout_s) as client:
        for url in spec.endpoint_urls():
            tried = []
            for target in (
                f"{url.rstrip('/')}/load_lora_adapter",
                f"{url.rstrip('/').removesuffix('/v1')}/load_lora_adapter",
            ):
                if target in tried:
                    continue
                tried.append(target)
                try:
                    r = await client.post(target, json=body, headers=headers)
                except httpx.HTTPError as e:
                    raise EmoharborError(f"{url}: cannot load LoRA adapter {name!r}: {type(e).__name__}: {e}") from None
                if r.status_code == 404:
                    continue
                if r.is_success or "already" in r.text.lower():
                    done.append(url)
                    break
                raise EmoharborError(
                    f"{url}: the server refused LoRA adapter {name!r} from {path} (HTTP {r.status_code}: "
                    f"{r.text[:200]}); start vLLM with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"
                )
            else:
                raise EmoharborError(
                    f"{url}: no endpoint to load LoRA adapters (load_lora_adapter answered 404): start vLLM with "
                    "--enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, or SGLang with --enable-lora"
                )
    return done
