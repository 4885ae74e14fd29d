"""``emoharbor study create|invite|export`` and ``emoharbor serve``; the export read back by
``emoharbor heart agreement`` against a scripted judge's verdicts."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli_helpers import run_main as run
from emoharbor.cli import cli
from emoharbor.heart.analysis.verdicts import combine_orders
from emoharbor.store.records import comparisons
from emoharbor.store.run_store import RunStore
from emoharbor.web.forms import missing
from emoharbor.web.study import Study
from heart_helpers import preferring, run_all, scripted
from web_helpers import emoharbor_run, heart_run, pair_form

DIMS = ["human_alignment", "empathic_responsiveness", "attunement", "resonance", "task_following", "overall"]
LINK = re.compile(r"^  (\S+): (http://\S+/r/(\S+))$", re.M)


def test_create_invite_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    heart, emo, st = heart_run(tmp_path / "h"), emoharbor_run(tmp_path / "e"), tmp_path / "study"
    args = ["study", "create", str(st), "--heart-run", str(heart), "--emoharbor-run", str(emo), "--overlap", "2",
            "--attention-checks", "1", "--limit", "3", "--seed", "5"]  # fmt: skip
    code, out, _ = run(args, capsys)
    assert code == 0 and '"pair_items": 3' in out and '"conversation_items": 2' in out
    code, out, _ = run(
        ["study", "invite", str(st), "--names", "ana,ben", "--base-url", "http://example.org:9/"], capsys
    )
    assert code == 0
    links = LINK.findall(out)
    assert [n for n, _, _ in links] == ["ana", "ben"] and all(
        u.startswith("http://example.org:9/r/") for _, u, _ in links
    )
    assert re.search(r"admin link .*: http://example.org:9/admin/\S{40,}", out)
    study = Study.open(st)
    assert {study.rater_by_token(t).name for _, _, t in links} == {"ana", "ben"}  # type: ignore[union-attr]
    code, out, err = run(["study", "invite", str(st), "--raters", "1"], capsys)
    assert code == 0 and "rater-3:" in out and "admin link" not in out
    assert study.public_urls() == ["http://127.0.0.1:8765", "http://example.org:9"]  # where forms come from
    code, out, _ = run(["study", "export", str(st), "--out", str(tmp_path / "x.jsonl")], capsys)
    assert code == 0 and '"pair_rows": 0' in out and (tmp_path / "x-conversations.jsonl").is_file()

    for args, message in [
        (["study", "create", str(st), "--heart-run", str(heart), "--overlap", "1"], "already exists"),
        (["study", "create", str(tmp_path / "n"), "--overlap", "1"], "give --heart-run and/or --emoharbor-run"),
        (["study", "invite", str(st), "--names", "ana"], "already used: ['ana']"),
        (["study", "invite", str(st), "--raters", "2", "--names", "x"], "--raters 2 but 1 names"),
        (["study", "export", str(tmp_path / "none"), "--out", "a.csv"], "is not a study folder"),
        (["study", "export", str(st), "--out", str(tmp_path / "a.xlsx")], "must end in .csv or .jsonl"),
    ]:
        code, _, err = run(args, capsys)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)


def test_study_commands_work_without_the_web_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("fastapi", "starlette", "jinja2", "uvicorn", "python_multipart", "multipart"):
        monkeypatch.setitem(sys.modules, name, None)  # any import of them now fails
    for name in ("emoharbor.web.app", "emoharbor.web.pages", "emoharbor.web.security"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    st = tmp_path / "s"
    assert (
        run(["study", "create", str(st), "--heart-run", str(heart_run(tmp_path / "h")), "--overlap", "1"], capsys)[0]
        == 0
    )
    assert run(["study", "invite", str(st), "--raters", "1"], capsys)[0] == 0
    assert run(["study", "export", str(st), "--out", str(tmp_path / "o.csv")], capsys)[0] == 0
    assert (tmp_path / "o.csv").read_text().startswith("history_id,competitor_a,competitor_b,rater,dimension,winner")
    code, _, err = run(["serve", str(st)], capsys)
    assert code == 2 and "pip install 'emoharbor[web]'" in err


def test_serve_binds_to_loopback_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("fastapi")
    import uvicorn

    heart = heart_run(tmp_path / "h")
    CliRunner().invoke(cli, ["study", "create", str(tmp_path / "s"), "--heart-run", str(heart), "--overlap", "1"])
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.append(kw))
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert seen[0]["host"] == "127.0.0.1" and seen[0]["port"] == 8765 and "warning" not in result.output
    assert seen[0]["access_log"] is False  # the tokens in rater links stay out of the logs
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "s"), "--host", "0.0.0.0", "--port", "9000"])
    assert seen[1]["host"] == "0.0.0.0" and seen[1]["port"] == 9000 and "other machines can reach" in result.output


def test_serve_without_the_web_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # "import uvicorn" now fails like a missing package
    code, _, err = run(["serve", str(tmp_path)], capsys)
    assert code == 2 and err.strip() == "error: the rating app needs the web extra: pip install 'emoharbor[web]'"


async def test_heart_agreement_reads_the_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rater "same" copies the judge's pair verdicts, rater "other" flips them (a tie stays a tie): the
    judge agrees with every row of "same" and with the ties of "other"; the two raters agree on the ties."""
    store, _ = await run_all(tmp_path, {"fair": scripted(preferring("here for you"))})
    verdicts, _, _ = combine_orders(comparisons(store))
    store.close()
    judged = {(v.history_id, v.a, v.b, v.dimension): v.outcome for v in verdicts}
    st = tmp_path / "study"
    assert run(["study", "create", str(st), "--heart-run", str(tmp_path / "run"), "--overlap", "2"], capsys)[0] == 0
    assert run(["study", "invite", str(st), "--names", "same,other"], capsys)[0] == 0
    study = Study.open(st)
    flip = {"a": "b", "b": "a", "tie": "tie"}
    ties = 0
    for rater in study.raters():
        for a in study.queue(rater.id):
            src = study.item(a.item_id).source
            sides = {d: judged[(src["history_id"], src["competitor_a"], src["competitor_b"], d)] for d in DIMS}
            ties += sum(s == "tie" for s in sides.values()) if rater.name == "same" else 0
            if rater.name == "other":
                sides = {d: flip[s] for d, s in sides.items()}
            ok, todo = study.save(rater.id, a.item_id, pair_form(sides, a.first, reason="warmer"),
                                  submit_if=lambda have: missing("pair", DIMS[:-1], have))  # fmt: skip
            assert ok and todo == []
    out_csv = tmp_path / "humans.csv"
    assert run(["study", "export", str(st), "--out", str(out_csv)], capsys)[0] == 0
    code, out, err = run(["heart", "agreement", str(tmp_path / "run"), "--human", str(out_csv), "--format", "json"],
                         capsys)  # fmt: skip
    assert code == 0, err
    n_items = len(study.items())
    assert f"imported {n_items * 6 * 2} of {n_items * 6 * 2} rows" in err
    data = json.loads(out)
    jh = next(r for r in data["judge_human"] if r["judge"] == "fair" and r["dimension"] == "all")
    n = n_items * 6
    assert jh["pairs"] == 2 * n and jh["agree_with_ties"] == pytest.approx((n + ties) / (2 * n), abs=1e-4)
    hh = next(r for r in data["human_human"] if r["dimension"] == "all")
    assert hh["pairs"] == n and hh["agree_with_ties"] == pytest.approx(ties / n, abs=1e-4)
    assert RunStore.open_existing(tmp_path / "run").keys("human_judgment")
