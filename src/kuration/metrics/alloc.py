"""Keep freed heap memory mapped between sources (glibc's ``malloc``).

The feature pass allocates and frees the same large temporaries for every
source: arrays over a source's ticks x entities, 0.1-2 MB each.  glibc serves
blocks above its (dynamic) *mmap threshold* with fresh mappings, and hands the
free top of its heap back to the system above its *trim threshold*, so the
next source faults the same pages in again.  On the ADS-B sample at stride 60
that was a third of the feature pass's CPU time (page faults are dear on a
virtual machine).  :func:`retain_freed_memory` raises both thresholds once per
process with ``mallopt(3)``: blocks up to 16 MB come from the heap, and up to
64 MB of free heap stays mapped for the next source.  The peak memory of a
process does not change; what it no longer does is give memory back between
sources.

Set ``KURATION_RETAIN_FREED_MEMORY=0`` to leave the allocator alone; glibc's
own ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_`` environment variables,
when set, win too.  Other C libraries (no ``mallopt``) are left alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["retain_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_THRESHOLD = -3
_MMAP_BYTES = 16 << 20
_TRIM_BYTES = 64 << 20

_state: dict[str, bool] = {}


def retain_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process (see the module docstring).

    Returns
    -------
    bool
        Whether the thresholds are raised (False: not Linux/glibc, or turned off by the
        environment).  Later calls return the first call's answer.
    """
    if "done" not in _state:
        _state["done"] = _apply()
    return _state["done"]


def _apply() -> bool:
    env = os.environ
    if not sys.platform.startswith("linux") or env.get("KURATION_RETAIN_FREED_MEMORY") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env:
        return False  # the user tuned glibc already
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not a C library with mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)
    )
