"""Build progress: rich progress bars on a terminal, plain lines on stderr elsewhere.

A first build can take a minute (the football sample: about 70 s); with output
going to a file or a pipe, a silent minute reads as a hang, so each stage and
item loop then prints one line when it starts and one when it ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["BuildProgress"]

T = TypeVar("T")


class BuildProgress:
    """Stage and item progress for one build.

    Parameters
    ----------
    enabled : bool, optional
        Show bars; default: only when stderr is a terminal.  By default a
        build whose stderr is not a terminal prints plain start/end lines
        there instead (``plain``); ``enabled=False`` is silent.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = self.console.is_terminal if enabled is None else bool(enabled)
        self.plain = enabled is None and not self.enabled
        self._progress: Any = None

    def _line(self, text: str) -> None:
        if self.plain:
            print(f"timenet build: {text}", file=sys.stderr, flush=True)

    def __enter__(self) -> BuildProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def log(self, message: str) -> None:
        """Print a line above the bars (only when enabled)."""
        if self.enabled:
            self.console.print(message)

    @contextmanager
    def stage(self, description: str) -> Iterator[None]:
        """A one-step bar for a pipeline stage."""
        if self._progress is None:
            t0 = time.monotonic()
            self._line(f"{description} ...")
            yield
            self._line(f"{description}: done in {time.monotonic() - t0:.1f} s")
            return
        task = self._progress.add_task(description, total=1)
        yield
        self._progress.update(task, completed=1)

    def track(self, items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
        """Iterate ``items`` while advancing a bar."""
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        if self._progress is None:
            t0 = time.monotonic()
            self._line(f"{description} ({total if total is not None else '?'} items) ...")
            n = 0
            for item in items:
                yield item
                n += 1
            self._line(f"{description}: {n} done in {time.monotonic() - t0:.1f} s")
            return
        task = self._progress.add_task(description, total=total)
        for item in items:
            yield item
            self._progress.advance(task)
