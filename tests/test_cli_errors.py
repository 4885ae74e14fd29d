"""Bad input gets one line that says what is wrong and what to do, exit status 2, no traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from emoharbor.errors import ConfigError
from emoharbor.models.local import LocalServer, assemble, check_port_free, resolve_gguf, server_threads


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EMOHARBOR_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "emoharbor.cli", *args], capture_output=True, text=True, env=env, timeout=60, cwd=tmp
    )


def one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    for n in needles:
        assert n in lines[0]


def test_missing_config(tmp_path: Path) -> None:
    one_line_error(cli("config", "check", "nope.yaml", tmp=tmp_path), "nope.yaml not found")


def test_malformed_yaml(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("roles: [unclosed\n")
    one_line_error(cli("config", "check", "bad.yaml", tmp=tmp_path), "not valid YAML", "line")
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    one_line_error(cli("config", "check", "latin1.yaml", tmp=tmp_path), "latin1.yaml: not UTF-8 text")


def test_bad_field(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("max_turns: -3\n")
    one_line_error(cli("config", "check", "c.yaml", tmp=tmp_path), "field 'max_turns'")
    (tmp_path / "d.yaml").write_text("roles:\n  judge:\n    model: local:smollm2\n    temprature: 0.1\n")
    one_line_error(cli("config", "check", "d.yaml", tmp=tmp_path), "roles.judge.temprature")
    (tmp_path / "e.yaml").write_text("roles:\n  judge:\n    model: local:smollm2\n    json_mode: json_schema\n")
    one_line_error(cli("config", "check", "e.yaml", tmp=tmp_path), "roles.judge", "does not take json_schema")


def test_unknown_model_name(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("roles:\n  supporter: [scripted]\n  judge: scripted\n  user: gpt-5-mini\n")
    one_line_error(cli("config", "check", "c.yaml", tmp=tmp_path), "gpt-5-mini", "base_url")
    (tmp_path / "d.yaml").write_text("roles:\n  supporter: [scripted]\n  judge: scripted\n  user: local:qwen70b\n")
    one_line_error(cli("config", "check", "d.yaml", tmp=tmp_path), "unknown local model 'qwen70b'")


def test_missing_api_key(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "roles:\n  supporter: [scripted]\n  user: scripted\n"
        "  judge: {model: gpt-4o-mini, api_key_env: EMOHARBOR_NO_SUCH_KEY}\n"
    )
    one_line_error(cli("config", "check", "c.yaml", tmp=tmp_path), "EMOHARBOR_NO_SUCH_KEY is not set")


def test_endpoint_that_is_down(tmp_path: Path) -> None:
    p = cli(
        "chat",
        "--profile",
        "builtin:p001*",
        "--supporter",
        "m",
        "--user",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        tmp=tmp_path,
    )
    one_line_error(p, "cannot connect to http://127.0.0.1:9/v1", "start the server")


def test_good_config_prints_resolved_and_hash(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("roles:\n  supporter: [scripted]\n  user: scripted\n  judge: scripted\n")
    p = cli("config", "check", "c.yaml", tmp=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "# config hash: " in p.stdout and "max_turns: 8" in p.stdout


def test_gguf_hash_mismatch_is_refused(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate([b"GGUF", b"abc"]):
        parts.append(tmp_path / f"part{i}")
        parts[-1].write_bytes(data)
    dest = tmp_path / "m.gguf"
    with pytest.raises(ConfigError, match="does not match its published hash"):
        assemble(parts, dest, 7, "0" * 64)
    assert not dest.exists() and not list(tmp_path.glob(".assembling-*"))
    import hashlib

    good = hashlib.sha256(b"GGUFabc").hexdigest()
    assert assemble(parts, dest, 7, good).read_bytes() == b"GGUFabc"
    dest.write_bytes(b"GGUFabd")  # tampered after verification: verified again, and refused
    with pytest.raises(ConfigError, match="does not match"):
        assemble([tmp_path / "part0", tmp_path / "part0"], dest, 7, good)


def test_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    f = tmp_path / "x.gguf"
    f.write_bytes(b"nope")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        resolve_gguf(str(f))


def test_port_in_use() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is in use"):
            check_port_free(port)


async def test_local_server_on_a_busy_port_is_refused() -> None:
    gguf = resolve_gguf("smollm2")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        server = LocalServer(gguf, port=s.getsockname()[1])
        with pytest.raises(ConfigError, match="is in use"):
            await server.start()


def test_local_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_LOCAL_THREADS", "3")
    assert server_threads() == 3
    monkeypatch.setenv("EMOHARBOR_LOCAL_THREADS", "two")
    with pytest.raises(ConfigError, match="EMOHARBOR_LOCAL_THREADS must be a whole number"):
        server_threads()


def test_an_interrupt_that_something_swallows_still_ends_the_process() -> None:
    code = (
        "import signal, time\n"
        "import emoharbor.cli as c\n"
        "c.FORCE_EXIT_S = 1.0\n"
        "signal.signal(signal.SIGINT, c._interrupt)\n"
        "ready = False\n"
        "while True:\n"
        "    try:\n"  # 'ready' is said inside the try: the signal may come at once
        "        if not ready:\n"
        "            ready = True\n"
        "            print('ready', flush=True)\n"
        "        time.sleep(10)\n"
        "    except KeyboardInterrupt:\n"
        "        pass  # a library that swallows the interrupt\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "exiting now; finished work is saved" in err


SHUTDOWN_AFTER_INTERRUPT = """
import asyncio, os, signal, sys
import emoharbor.cli as c
if sys.argv[1] == "handled":
    c.handle_interrupts()
else:
    signal.signal(signal.SIGINT, c._interrupt)

async def connect_attempt():
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:  # as a client library's connect attempt cut off mid-way
        raise ExceptionGroup("connect", [OSError("connection refused")])

async def main():
    asyncio.get_running_loop().call_later(0.2, os.kill, os.getpid(), signal.SIGINT)
    await connect_attempt()

try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize("mode", ["bare", "handled"])
def test_no_traceback_from_tasks_that_fail_while_an_interrupt_cancels_them(mode: str) -> None:
    p = subprocess.run(
        [sys.executable, "-c", SHUTDOWN_AFTER_INTERRUPT, mode], capture_output=True, text=True, timeout=60
    )
    assert p.stdout.strip() == "interrupted"
    if mode == "bare":  # the situation is real: asyncio prints a traceback for it
        assert "unhandled exception during asyncio.run() shutdown" in p.stderr and "Traceback" in p.stderr
    else:
        assert p.stderr == ""
