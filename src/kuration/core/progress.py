"""Progress events: ``progress(event: dict)`` callbacks and a rich renderer for the CLI.

Every event has ``phase`` (scoring, selection, writing, ...) and ``event``
(start, advance, complete); advance events carry ``current`` and ``total`` and,
where it applies, ``source`` and ``status``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["ProgressCallback", "RichProgress", "emit"]

ProgressCallback = Callable[[dict[str, Any]], None]


def emit(cb: ProgressCallback | None, phase: str, event: str, **kw: Any) -> None:
    if cb is not None:
        cb({"phase": phase, "event": event, **kw})


class RichProgress:
    """Render progress events as rich progress bars on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def __call__(self, ev: dict[str, Any]) -> None:
        if self._progress is None:
            return
        phase = ev["phase"]
        if ev["event"] == "start":
            self._tasks[phase] = self._progress.add_task(phase, total=ev.get("total"))
        elif ev["event"] == "advance" and phase in self._tasks:
            self._progress.update(
                self._tasks[phase], completed=ev.get("current"), total=ev.get("total")
            )
        elif ev["event"] == "complete" and phase in self._tasks:
            t = self._tasks[phase]
            total = self._progress.tasks[t].total
            self._progress.update(t, completed=total if total is not None else 1)
