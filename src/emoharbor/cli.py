"""The command line: parses, calls the library, prints. Each command group lives in its own module
under ``emoharbor.commands``."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading

import click

from . import __version__
from .errors import EmoharborError, WrongKind

# each command and the module under emoharbor.commands that defines it (in its COMMANDS): a module is
# imported only when one of its commands runs, so `emoharbor --version` or `emoharbor run --help` does not
# load every command's libraries (tests/test_cli_lazy.py checks this table against the modules)
COMMANDS = {
    "config": "core", "chat": "core", "export": "core",
    "run": "evaluate", "demo": "evaluate", "assess": "evaluate", "leaderboard": "evaluate",
    "profiles": "profiles",
    "heart": "heart",
    "report": "report", "validate": "report",
    "study": "study", "serve": "study",
    "evolve": "evolve",
    "judges": "judges",
    "reward": "reward",
    "sensitivity": "sensitivity",
    "seekers": "seekers",
    "realism": "realism",
    "ladder": "ladder",
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose commands are imported when they are asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        mod = importlib.import_module(f"emoharbor.commands.{COMMANDS[cmd_name]}")
        found: click.Command = next(c for c in mod.COMMANDS if c.name == cmd_name)
        return found

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as e:  # click suggests from the commands it holds: none here
            raise click.exceptions.NoSuchCommand(e.command_name, possibilities=COMMANDS, ctx=ctx) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="emoharbor")
def cli() -> None:
    """Evaluate and improve personalised emotional-support chatbots."""


FORCE_EXIT_S = 15.0  # after Ctrl-C or SIGTERM, the most time a clean stop may take
_stopping = threading.Event()


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C and SIGTERM: unwind (servers stop, finished work stays). Should anything hold the unwinding
    up (a library that swallows the cancellation), exit anyway after FORCE_EXIT_S: every finished unit is
    already committed, and the local servers die with this process."""
    if not _stopping.is_set():
        _stopping.set()
        timer = threading.Timer(FORCE_EXIT_S, _force_exit)
        timer.daemon = True
        timer.start()
    raise KeyboardInterrupt


def _force_exit() -> None:
    sys.stderr.write(f"interrupted: not stopped after {FORCE_EXIT_S:.0f} s, exiting now; finished work is saved\n")
    sys.stderr.flush()
    os._exit(130)


SHUTDOWN_NOISE = "unhandled exception during asyncio.run() shutdown"


class _QuietShutdown(logging.Filter):
    """After Ctrl-C or SIGTERM, asyncio cancels the tasks still running and logs, with a traceback, any
    that ended in an error instead (a client library's connect attempt cut off mid-way raises an
    exception group). Those errors are the interrupt's own doing, so they are not shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_stopping.is_set() and record.getMessage().startswith(SHUTDOWN_NOISE))


def handle_interrupts() -> None:
    """Ctrl-C and SIGTERM stop emoharbor cleanly: see ``_interrupt``."""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    logging.getLogger("asyncio").addFilter(_QuietShutdown())


def user_error(e: BaseException) -> EmoharborError | None:
    """The user's error in ``e``: itself, or the first of a group (concurrent work, a TaskGroup) in which
    every error is the user's (an endpoint that cannot be reached, a missing file)."""
    if isinstance(e, EmoharborError):
        return e
    if isinstance(e, BaseExceptionGroup):
        found = [user_error(sub) for sub in e.exceptions]
        return found[0] if all(found) else None
    return None


def said(e: EmoharborError) -> str:
    """The error's line; a folder holding another kind of run says the kinds by their titles."""
    if isinstance(e, WrongKind):
        from . import kinds

        return e.titled(kinds.title)
    return str(e)


def main(argv: list[str] | None = None) -> None:
    handle_interrupts()
    try:
        cli.main(args=argv, prog_name="emoharbor", standalone_mode=False)
    except (EmoharborError, BaseExceptionGroup) as e:
        found = user_error(e)
        if found is None:
            raise
        click.echo(f"error: {said(found)}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.UsageError as e:  # one line too, with where to look
        where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        click.echo(f"error: {e.format_message()}{where}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted: finished work is saved; run the same command again to resume", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
