"""What the ``contextchef`` command line writes: a reader that closes the pipe early.

``contextchef plan | head -1`` closes standard output while the command still writes.
Rule (docs/guides/cli.md, "Exit codes"): a closed standard output ends the output, not
the command. The rest of the output is discarded and the command exits with its own
code: 0, ``diff``'s 1 when the prefix broke, 2 on bad input. It is never the 1 that rich
and click would give (which ``diff`` uses for a broken prefix, and which fails a
``set -o pipefail`` step in CI) and never a traceback.

How: Python's advice for SIGPIPE (https://docs.python.org/3/library/signal.html#note-on-sigpipe):
on `BrokenPipeError`, point the standard output's file descriptor at ``os.devnull``,
so later writes and the flush at exit succeed. Every write of the CLI goes through
`Console` (rich's, whose own handler exits 1) or `echo` (click's, whose caller exits
1), and `main_guard` flushes before exit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import rich.console
import typer

__all__ = ["Console", "discard_stdout", "echo", "main_guard"]


def discard_stdout() -> None:
    """Send the rest of standard output to ``os.devnull`` (its reader has gone).

    The standard output's file descriptor is replaced (``dup2``), so what is still
    buffered is flushed there too; without a file descriptor (a test runner's buffer)
    nothing is done.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class Console(rich.console.Console):
    """rich's `Console`, but a closed standard output discards the rest of the output.

    rich's own `Console.on_broken_pipe` raises ``SystemExit(1)``; here the command goes
    on (its output discarded) and exits with its own code.
    """

    def on_broken_pipe(self) -> None:
        """Discard the rest of the output (`discard_stdout`), quietly."""
        _quiet(self)


def _quiet(console: rich.console.Console) -> None:
    """What a closed standard output does to `console`: it goes quiet (`discard_stdout`)."""
    console.quiet = True
    discard_stdout()


def echo(message: str, **options: Any) -> None:
    """`typer.echo` of `message`; a closed standard output discards it (`discard_stdout`)."""
    try:
        typer.echo(message, **options)
    except BrokenPipeError:
        discard_stdout()


@contextmanager
def main_guard() -> Iterator[None]:
    """Flush standard output before the process exits, discarding it if its reader left.

    The exit code of the block (``SystemExit``) is kept; a `BrokenPipeError` that reaches
    here (a write outside `Console` and `echo`) exits 0, as the output was all the
    command had left to do. Inside the block, rich consoles made by others (typer's
    ``--help``) handle a closed pipe as `Console` does.
    """
    rich_console = rich.console.Console
    own = rich_console.on_broken_pipe
    rich_console.on_broken_pipe = _quiet  # type: ignore[method-assign,assignment]
    try:
        yield
    except BrokenPipeError:
        discard_stdout()
        raise SystemExit(0) from None
    finally:
        rich_console.on_broken_pipe = own  # type: ignore[method-assign]
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            discard_stdout()
        except (AttributeError, OSError, ValueError):  # closed or no standard output
            pass
