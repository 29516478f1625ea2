"""Read-ahead for the staging step: the next sources are read on a thread while this one's
shards are encoded.

Reading a source (Parquet decode, NumPy layout) and encoding shards (compression, file
writes) both release the GIL for most of their time, so one reader thread running ahead
overlaps them.  Results come back strictly in the order asked for, at most ``depth``
sources are held at once (bounded memory), and a read's exception is raised by
:meth:`Prefetch.get` for that key, where the sequential loop would have raised it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

__all__ = ["Prefetch"]


class Prefetch:
    """Call ``read(*args)`` for each ``(key, args)`` of ``plan`` ahead of time, in order.

    Parameters
    ----------
    read : callable
        The read; it must be safe to run on another thread than the caller's.
    plan : sequence of (key, args)
        Every read the caller is going to ask for, in the order it asks.
    depth : int
        Reads in flight or waiting to be taken (at least 1).

    Notes
    -----
    Use as a context manager: leaving it cancels the reads not started and
    waits for the one running (its result or error is dropped).
    """

    def __init__(
        self,
        read: Callable[..., Any],
        plan: Sequence[tuple[Hashable, tuple[Any, ...]]],
        depth: int = 2,
    ) -> None:
        self._read = read
        self._plan = list(plan)
        self._depth = max(1, depth)
        self._next = 0
        self._pending: dict[Hashable, Future[Any]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Prefetch:
        if self._plan:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="kuration-prefetch")
            self._fill()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()

    def __contains__(self, key: Hashable) -> bool:
        return key in self._pending

    def _fill(self) -> None:
        assert self._pool is not None
        while len(self._pending) < self._depth and self._next < len(self._plan):
            key, args = self._plan[self._next]
            self._pending[key] = self._pool.submit(self._read, *args)
            self._next += 1

    def get(self, key: Hashable) -> Any:
        """The read of ``key`` (waiting for it), starting the next one.

        Raises
        ------
        KeyError
            For a key not in flight (asked out of order, or twice).
        Exception
            Whatever the read raised.
        """
        fut = self._pending.pop(key)
        self._fill()
        return fut.result()
