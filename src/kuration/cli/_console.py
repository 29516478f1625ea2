"""The console kur prints its tables on."""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["ReportConsole", "report_console"]

#: columns when the output is a file or a pipe: rich's 80 cut the budget table's headers
#: ("reque...", "admit...") and wrapped its figures in logs
PIPE_WIDTH = 120


class ReportConsole(Console):
    """A console that lets a closed stdout (``| head``) reach the CLI's guard.

    rich's default turns :class:`BrokenPipeError` into ``SystemExit(1)``, a silent status
    1 that reads like a failed command; the guard
    (:func:`timenet._cli.run_guarded`) reports it as status 141 with one line instead.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more to write to a reader that went away
        raise BrokenPipeError("stdout was closed by its reader")


def report_console() -> Console:
    """The terminal's width on a terminal; ``COLUMNS`` when set; else :data:`PIPE_WIDTH`."""
    con = ReportConsole()
    if con.is_terminal or os.environ.get("COLUMNS"):
        return con
    return ReportConsole(width=PIPE_WIDTH)
