"""What every command line of the repository shares: one-line errors, exit status 1.

A user error -- a package error (``KurationError``, ``TimeNetError``), a file-system
problem (``OSError``), a bad argument -- prints exactly one line
``<prog>: error: <message>`` on stderr (detail lines an error carries follow it,
indented) and exits 1; a bug still prints its traceback.  ``kur check`` keeps
exit status 2 for a failed gate, which a usage error can therefore never mimic.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["OneLineParser", "describe", "run_guarded"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line and exit 1 (argparse: usage, 2)."""

    def error(self, message: str) -> NoReturn:
        prog = self.prog.split()[0]
        self.exit(1, f"{prog}: error: {message} (see {self.prog} --help)\n")


def describe(exc: BaseException) -> str:
    """The message of ``exc``; an ``OSError`` names its path(s) and the system's reason."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        where = os.fsdecode(exc.filename)
        if exc.filename2 is not None:
            where += f" -> {os.fsdecode(exc.filename2)}"
        return f"{where}: {exc.strerror}"
    text = str(exc)
    if isinstance(exc, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]  # a KeyError's str() is the repr of its argument
    return text or type(exc).__name__


#: 128 + SIGPIPE: what a shell reports for a command a closed pipe stopped
BROKEN_PIPE = 141


def _broken_pipe(prog: str) -> int:
    """The reader of stdout went away (``| head``).  stdout points at devnull afterwards so
    the interpreter's final flush cannot fail again (the Python docs' SIGPIPE recipe); the
    work done before stands, only the output after that point is lost."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    with contextlib.suppress(OSError):  # stderr may have gone with it (``2>&1 | head``)
        print(
            f"{prog}: stdout was closed by its reader (broken pipe); the rest of the "
            "output is lost",
            file=sys.stderr,
        )
    return BROKEN_PIPE


def run_guarded(prog: str, fn: Callable[[], int], errors: tuple[type[BaseException], ...]) -> int:
    """Run ``fn``; an exception of ``errors`` or an ``OSError`` becomes one line and status 1
    (stdout closed by its reader: status 141 and one line).

    Parameters
    ----------
    prog : str
        The program name that starts the line.
    fn : callable
        The command; returns its exit status.
    errors : tuple of exception types
        The package roots whose instances are user errors.

    Returns
    -------
    int
        ``fn()``'s status, 1, 130 after Ctrl-C (``KeyboardInterrupt``: one line, no
        traceback), or 141 when stdout's reader went away (``| head -1``).
    """
    try:
        status = int(fn())
        sys.stdout.flush()  # a pipe's buffered tail fails here, not in the exit's flush
        return status
    except BrokenPipeError:
        return _broken_pipe(prog)
    except (*errors, OSError) as exc:  # type: ignore[misc]  # mypy cannot type a starred except tuple
        print(f"{prog}: error: {describe(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
