"""The process that serves the embedded model: llama.cpp's own C++ server, through the ``xllamacpp`` package
(prebuilt wheels: nothing to compile), on 127.0.0.1.

``python -m emoharbor.models.native_server --model PATH --port N --context-size N --slots N --threads N --poll N
--cache-mib N [--kv-unified] [--draft PATH [--draft-max N]]``

It answers the OpenAI chat API at ``http://127.0.0.1:PORT/v1`` with ``--slots`` sequences decoded together
(continuous batching), each slot with ``--context-size`` tokens of context and its own prompt cache; a
request goes to the slot whose cached prompt shares the longest prefix with it. Prompts evicted from a slot
are kept in a host-memory cache (``--cache-mib``) and restored when their conversation comes back. With
``--draft``, a smaller model of the same vocabulary drafts up to ``--draft-max`` tokens a step, which the model
verifies in one batch (speculative decoding). The process runs until it is sent SIGTERM or SIGKILL
(``LocalServer`` starts and stops it).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="emoharbor.models.native_server")
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--context-size", type=int, required=True)
    ap.add_argument("--slots", type=int, required=True)  # the defaults are LocalServer's: one place for them
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--poll", type=int, required=True)
    ap.add_argument("--cache-mib", type=int, required=True)
    ap.add_argument("--kv-unified", action="store_true")  # one KV buffer for every slot
    ap.add_argument("--alias", default="local")
    ap.add_argument("--draft", default=None)  # a GGUF of the same vocabulary: speculative decoding
    ap.add_argument("--draft-max", type=int, default=None)  # None: llama.cpp's default
    ap.add_argument("--lora", default=None)  # a GGUF LoRA file applied to every request (scale 1)
    a = ap.parse_args(argv)

    import xllamacpp as xlc  # the engine: imported here, so --help answers without it

    p = xlc.CommonParams()
    p.model.path = a.model
    p.model_alias = a.alias
    p.hostnames = ["127.0.0.1"]
    p.port = a.port
    p.n_parallel = a.slots
    p.n_ctx = a.context_size * a.slots  # the server divides n_ctx among its slots
    p.cont_batching = True
    p.cache_prompt = True
    p.cache_ram_mib = a.cache_mib
    p.kv_unified = a.kv_unified
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    p.cpuparams.poll = a.poll  # how hard an idle worker thread spins before it sleeps (0-100)
    p.cpuparams_batch.poll = a.poll
    p.endpoint_metrics = True
    if a.lora:
        lora = xlc.CommonAdapterLoraInfo()
        lora.path, lora.scale = a.lora, 1.0
        p.lora_adapters = [lora]
    if a.draft:
        d = p.speculative.draft
        d.mparams.path = a.draft
        if a.draft_max is not None:
            d.n_max = a.draft_max
        d.cpuparams.n_threads = d.cpuparams_batch.n_threads = a.threads
        d.cpuparams.poll = d.cpuparams_batch.poll = a.poll
        # the path alone loads the draft model but drafts nothing: the type is what turns drafting on
        p.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    server = xlc.Server(p)  # serves HTTP on its own threads from here on
    print(f"emoharbor native server listening on {server.listening_address}", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server


if __name__ == "__main__":
    main()
