"""Which windows overlap each span, and the per-span reductions over them.

The kernels behind span priorities and span features (:mod:`kuration.selection.candidates`):
a span's windows are found with two ``searchsorted`` calls when every window has one length,
else by a dense overlap test; a run's reduction is a ``ufunc.reduceat`` over its finite values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..contracts.segment import Segment

__all__ = ["overlap_runs", "overlaps", "reduce_runs", "vetoed"]


def overlaps(
    segs: Sequence[Segment], a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each span's overlapping segments, flattened: segment indices and per-span offsets.

    Span ``i`` overlaps ``idx[off[i]:off[i + 1]]``, in segment order (``start_idx <= b``
    and ``end_idx > a``).
    """
    starts = np.fromiter((s.start_idx for s in segs), np.int64, len(segs))
    ends = np.fromiter((s.end_idx for s in segs), np.int64, len(segs))
    return overlap_runs(starts, ends, a, b)


def overlap_runs(
    starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`overlaps` over the segments' ``start_idx`` and ``end_idx`` columns."""
    if np.all(ends[1:] >= ends[:-1]):  # one window length: a contiguous run per span
        lo = np.searchsorted(ends, a, side="right")
        hi = np.maximum(np.searchsorted(starts, b, side="right"), lo)
        n = hi - lo
        off = np.r_[0, np.cumsum(n)]
        idx = np.arange(off[-1]) - np.repeat(off[:-1] - lo, n)
        return idx, off
    rows, idx = np.nonzero((starts[None, :] <= b[:, None]) & (ends[None, :] > a[:, None]))
    return idx, np.r_[0, np.cumsum(np.bincount(rows, minlength=a.size))]


def vetoed(prio: np.ndarray, idx: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Whether each run (``off`` over ``prio[idx]``) holds a ``-inf`` priority, bool ``(n_runs,)``."""
    cb = np.r_[0, np.cumsum(np.isneginf(prio[idx]))]
    return (cb[off[1:]] - cb[off[:-1]]) > 0


def reduce_runs(vals: np.ndarray, idx: np.ndarray, off: np.ndarray, how: str) -> np.ndarray:
    """``how`` of the finite ``vals[idx]`` of each run (runs given by ``off``), NaN when none.

    ``np.maximum/minimum.reduceat`` give ``np.max/min`` exactly; a mean is the run's
    ``np.add.reduceat`` sum over its count, which can differ from ``np.mean`` in the last
    bit (numpy sums short runs in a different order); :func:`aggregate_segments` uses
    this same kernel, so the two always agree.
    """
    v = vals[idx]
    fin = np.isfinite(v)
    v = v[fin]
    cf = np.r_[0, np.cumsum(fin)]
    first = cf[off[:-1]]  # each run's first finite value in v
    n = cf[off[1:]] - first
    out = np.full(n.size, np.nan)
    has = n > 0
    if v.size:
        # non-empty runs only: each ends where the next non-empty one starts
        ufunc = {"max": np.maximum, "min": np.minimum, "mean": np.add}[how]
        red = ufunc.reduceat(v, first[has])
        if how == "mean":
            # np.sum starts short runs from +0.0, so a lone -0.0 sums to 0.0 there
            red = np.where(n[has] < 8, red + 0.0, red) / n[has]
        out[has] = red
    return out
