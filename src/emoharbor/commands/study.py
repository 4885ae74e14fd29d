"""``emoharbor study create|invite|export`` and ``emoharbor serve``: human rating studies in the browser.

The web modules are imported only by ``serve``, so the rest of the CLI works without the ``web`` extra.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import click

from ..errors import EmoharborError
from ..models.local import check_port_free
from ..web.assign import assign
from ..web.build import create_study
from ..web.export import export_study
from ..web.origins import is_loopback, origin_of, served_origins
from ..web.study import Study
from .paths import OUT_FILE

WEB_EXTRA = "the rating app needs the web extra: pip install 'emoharbor[web]'"
study_arg = click.argument("study_dir", metavar="STUDY", type=click.Path(path_type=Path, file_okay=False))
RUN = click.Path(path_type=Path, file_okay=False, exists=True)


@click.group("study")
def study() -> None:
    """Human rating studies: create one from a HEART and/or EmoHarbor run, invite raters, export."""


@study.command("create")
@study_arg
@click.option("--heart-run", type=RUN, default=None, help="HEART run: pairs of replies to a history")
@click.option("--emoharbor-run", type=RUN, default=None, help="EmoHarbor run: whole conversations to score")
@click.option("--overlap", type=click.IntRange(1, 50), required=True, help="how many raters see each item")
@click.option("--attention-checks", type=click.IntRange(0, 100), default=0, show_default=True)
@click.option("--limit", type=click.IntRange(1), default=None, help="at most N pairs and N conversations (sampled)")
@click.option("--seed", type=int, default=0, show_default=True)
def create_cmd(study_dir: Path, heart_run: Path | None, emoharbor_run: Path | None, overlap: int,
               attention_checks: int, limit: int | None, seed: int) -> None:  # fmt: skip
    """Create the study folder STUDY from blinded copies of the runs' items."""
    _, summary = create_study(study_dir, heart_run=heart_run, emoharbor_run=emoharbor_run, overlap=overlap,
                              attention=attention_checks, limit=limit, seed=seed)  # fmt: skip
    click.echo(f"created {study_dir}: {json.dumps(summary, sort_keys=True)}")
    click.echo(f"next: emoharbor study invite {study_dir} --raters N")


def _names(given: tuple[str, ...], count: int | None, existing: int) -> list[str]:
    names = [n.strip() for part in given for n in part.split(",") if n.strip()]
    if count is None and not names:
        raise EmoharborError("give --raters N and/or --names")
    if count is not None and names and count != len(names):
        raise EmoharborError(f"--raters {count} but {len(names)} names were given")
    bad = [n for n in names if len(n) > 60]  # a name is one part of a judgment's key: any character will do
    if bad:
        raise EmoharborError(f"rater names must be at most 60 characters: {bad}")
    return names or [f"rater-{existing + i + 1}" for i in range(count or 0)]


@study.command("invite")
@study_arg
@click.option("--raters", "count", type=click.IntRange(1, 1000), default=None, help="how many new raters")
@click.option("--names", multiple=True, help="rater names (comma-separated or repeated); default rater-1, rater-2, ...")
@click.option("--base-url", default="http://127.0.0.1:8765", show_default=True, help="where 'serve' will be reached")
@click.option("--new-admin-link", is_flag=True, help="make a new admin link (the old one stops working)")
def invite_cmd(study_dir: Path, count: int | None, names: tuple[str, ...], base_url: str, new_admin_link: bool) -> None:
    """Add raters to STUDY, assign them items, and print their personal links (shown only once)."""
    if origin_of(base_url) is None:
        raise EmoharborError(f"--base-url {base_url!r} is not an http(s) URL: write it as http://HOST:PORT")
    st = Study.open(study_dir)
    given = _names(names, count, len(st.raters()))
    base = base_url.rstrip("/")
    st.add_public_url(base)  # where forms will be posted from: see 'serve'
    new = st.add_raters(given)
    meta = st.meta()
    summary = assign(st, int(meta["overlap"]), int(meta["seed"]))
    click.echo("personal links (each shown only once; give each rater their own):")
    for rater, token in new:
        click.echo(f"  {rater.name}: {base}/r/{token}")
    if new_admin_link or "admin_token_hash" not in meta:
        click.echo(f"admin link (keep it to yourself): {base}/admin/{st.new_admin_token()}")
    click.echo(f"assignments: {json.dumps(summary, sort_keys=True)}")
    if summary["items_short_of_overlap"]:
        click.echo(f"note: {summary['items_short_of_overlap']} items have fewer than {meta['overlap']} raters; "
                   "invite more raters to reach the overlap", err=True)  # fmt: skip


@study.command("export")
@study_arg
@click.option("--out", type=OUT_FILE, required=True, help="FILE.csv or FILE.jsonl")
@click.option("--conversations-out", type=OUT_FILE, default=None,
              help="conversation scores (default: OUT's name with -conversations)")  # fmt: skip
def export_cmd(study_dir: Path, out: Path, conversations_out: Path | None) -> None:
    """Write the submitted judgments of STUDY (the format 'emoharbor heart agreement --human' reads)."""
    summary = export_study(Study.open(study_dir), out, conversations_out)
    click.echo(f"export: {json.dumps(summary, sort_keys=True)}")


@click.command("serve")
@study_arg
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (0.0.0.0: every interface)")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--public-url", "public", multiple=True,
              help="another address raters reach this server at (an HTTPS proxy in front of it); the --base-url "
              "of 'study invite' is one already (repeatable)")  # fmt: skip
def serve(study_dir: Path, host: str, port: int, public: tuple[str, ...]) -> None:
    """Serve the rating app for STUDY (rater links come from 'emoharbor study invite'). Forms are accepted
    only from pages of this server's own address and the public ones."""
    bad = [u for u in public if origin_of(u) is None]
    if bad:
        raise EmoharborError(f"--public-url {bad[0]!r} is not an http(s) URL: write it as https://HOST[:PORT]")
    try:
        import uvicorn

        from ..web.app import create_app
    except ImportError:
        raise EmoharborError(WEB_EXTRA) from None
    if not any(importlib.util.find_spec(m) for m in ("python_multipart", "multipart")):
        raise EmoharborError(WEB_EXTRA)
    check_port_free(port, host, "give another --port, or stop what listens there")
    urls = [*Study.open(study_dir).public_urls(), *public]
    app = create_app(study_dir, served_origins(host, port, urls))
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}: other machines can reach this server; put HTTPS in front of it",
                   err=True)  # fmt: skip
    click.echo(f"serving {study_dir} at http://{host}:{port} (Ctrl-C stops)", err=True)
    # no access log: rater links carry their token in the path
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, server_header=False)


COMMANDS = [study, serve]
