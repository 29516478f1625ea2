"""The console kur prints its tables on."""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["report_console"]

#: columns when the output is a file or a pipe: rich's 80 cut the budget table's headers
#: ("reque...", "admit...") and wrapped its figures in logs
PIPE_WIDTH = 120


def report_console() -> Console:
    """The terminal's width on a terminal; ``COLUMNS`` when set; else :data:`PIPE_WIDTH`."""
    con = Console()
    if con.is_terminal or os.environ.get("COLUMNS"):
        return con
    return Console(width=PIPE_WIDTH)
