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
from .errors import EmoharborError

# every module here defines click commands or groups listed in its COMMANDS
COMMAND_MODULES = [
    "emoharbor.commands.core",
    "emoharbor.commands.profiles",
    "emoharbor.commands.evaluate",
    "emoharbor.commands.heart",
    "emoharbor.commands.report",
    "emoharbor.commands.study",
    "emoharbor.commands.evolve",
    "emoharbor.commands.judges",
    "emoharbor.commands.reward",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="emoharbor")
def cli() -> None:
    """Evaluate and improve personalised emotional-support chatbots."""


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # that command group is not part of this build yet
                continue
            raise
        for cmd in mod.COMMANDS:
            cli.add_command(cmd)


_register()


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


def main(argv: list[str] | None = None) -> None:
    handle_interrupts()
    try:
        cli.main(args=argv, prog_name="emoharbor", standalone_mode=False)
    except (EmoharborError, BaseExceptionGroup) as e:
        found = user_error(e)
        if found is None:
            raise
        click.echo(f"error: {found}", err=True)
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
        sys.exit(2 if e.exit_code == 2 else e.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted: finished work is saved; run the same command again to resume", err=True)
        sys.exit(130)
    except SystemExit:
        raise


if __name__ == "__main__":
    main()
