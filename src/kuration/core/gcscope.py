"""Fewer full garbage collections while a run builds its pool.

A run allocates tens of thousands of long-lived container objects (a ``Segment`` and
its feature dict per window, candidates, manifest entries) that stay alive until it
ends.  CPython's oldest generation is collected whenever the objects promoted since
the last full collection exceed a quarter of those already there, so a growing pool is
scanned whole again and again: about 2.3 ms of CPU a source (12 % of ``kur run``) on
``bench/bench_e2e.py``'s corpus, measured with ``gc.callbacks`` (bench/PROFILE.md).
Inside :func:`fewer_full_collections` the oldest generation's threshold is raised, so
full collections wait for the run to end; the young generations are collected as
before, so short-lived cycles are still freed promptly.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["OLDEST_THRESHOLD", "fewer_full_collections"]

#: the oldest generation's threshold inside the scope: collections of the middle
#: generation between two full ones (CPython's default is 10)
OLDEST_THRESHOLD = 1000


@contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Raise the oldest generation's collection threshold for the body, then restore the
    thresholds found on entry (also when the body raises).  A no-op where the collector is
    disabled or its threshold is already as high."""
    old = gc.get_threshold()
    raise_it = gc.isenabled() and len(old) == 3 and old[2] < OLDEST_THRESHOLD
    if raise_it:
        gc.set_threshold(old[0], old[1], OLDEST_THRESHOLD)
    try:
        yield
    finally:
        if raise_it:
            gc.set_threshold(*old)
