"""Build progress: rich progress bars on a terminal, silence elsewhere."""

from __future__ import annotations

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
        Show bars; default: only when stderr is a terminal (quiet in CI,
        pipes and tests).
    """

    def __init__(self, enabled: bool | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = self.console.is_terminal if enabled is None else bool(enabled)
        self._progress: Any = None

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
            yield
            return
        task = self._progress.add_task(description, total=1)
        yield
        self._progress.update(task, completed=1)

    def track(self, items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
        """Iterate ``items`` while advancing a bar."""
        if self._progress is None:
            yield from items
            return
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        task = self._progress.add_task(description, total=total)
        for item in items:
            yield item
            self._progress.advance(task)
