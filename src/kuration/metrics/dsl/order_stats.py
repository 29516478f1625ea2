"""Order statistics of many overlapping tick ranges without sorting each range.

Sorting every window's samples costs ``G * L * E * log(L * E)``: each sample
is sorted once per window that holds it (twice at stride 60 of a 120-tick
window, twelve times at stride 10).  Here the valid samples of a source are
sorted once (their *ranks*), and the ``k``-th smallest sample of a tick range
is found by bisection over the rank: the number of the range's samples of rank
at most ``c`` is read from *blocks* of ``B`` ticks whose ranks are sorted once
(one :func:`numpy.searchsorted` per block), plus a direct count over the few
ticks a range holds beyond (or short of) whole blocks.  With ``B`` the grid's
step, every window of a regular grid starts on a block boundary, so a window
of ``L`` ticks is ``L // B`` (or one more) whole blocks and at most ``B / 2``
single ticks.  Every query of a batch (windows x order statistics) runs the
same ``ceil(log2(M))`` vectorized iterations, ``M`` the source's valid samples.

When the windows hold each tick fewer than about 3 times (stride 60 of 120),
ranking costs more than it saves; :func:`selected_pairs` then lays each window's
valid samples out so that one :func:`numpy.partition` (a selection, not a sort)
places both order statistics a percentile needs.

When the windows overlap so much that even the ranked bisection repeats work per window
(stride 5 or less of a 120-tick window), :func:`sliding_median` computes the median of
every tick-aligned range in one pass of ``bottleneck.move_median`` (a double heap updated
one cell at a time, Hardle and Steiger 1995) over the padded (tick, entity) grid.

The results are the samples themselves (an order statistic is a value of the
range), so whatever combines them -- numpy's ``linear`` percentile, the median
-- gives bit-identical results to a sort of each window.  The one exception is
a tie of ``0.0`` and ``-0.0``, whose order a sort leaves as its input had it:
the engine keeps sorting every window's padded samples for a stream holding both
(:func:`~kuration.metrics.dsl.reduces.mixed_zeros`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import bottleneck
import numpy as np

__all__ = [
    "RankBlocks",
    "RankIndex",
    "Samples",
    "rank_blocks",
    "rank_index",
    "ranked_windows",
    "selected_pairs",
    "sliding_median",
    "tick_samples",
    "worth_ranking",
    "worth_sliding",
]


@dataclass(frozen=True, eq=False)
class RankIndex:
    """The valid samples of a source-level stream, ranked once.

    Attributes
    ----------
    values : ndarray, shape (M,), float64
        The valid samples sorted ascending (``values[r]`` is the sample of rank ``r``).
    ranks : ndarray, shape (M,), intp
        Rank of each valid sample, the samples in tick-major order (tick, then entity).
    order : ndarray, shape (M,), intp
        The inverse permutation: the sample (tick-major index) of each rank.
    first : ndarray, shape (N + 1,), intp
        Index in ``ranks`` of the first sample of each tick (``first[N] == M``).
    """

    values: np.ndarray
    ranks: np.ndarray
    order: np.ndarray
    first: np.ndarray


Samples = tuple[np.ndarray, np.ndarray]


def tick_samples(x: np.ndarray) -> Samples:
    """The valid samples of ``x`` (N, E, 1), NaN for a missing one, in tick-major order,
    shape (M,), and the index of each tick's first sample, shape (N + 1,): the samples of
    ticks ``[a, b)`` are ``values[first[a]:first[b]]``."""
    v = x[..., 0]
    ok = ~np.isnan(v)
    first = np.zeros(v.shape[0] + 1, dtype=np.intp)
    np.cumsum(ok.sum(axis=1), out=first[1:])
    return v.reshape(-1)[np.flatnonzero(ok)], first  # an index gather beats a mask's


def selected_pairs(
    samples: Samples, starts: np.ndarray, length: int, i0: np.ndarray, i1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``i0``-th and ``i1``-th smallest valid samples of each tick range
    ``[start, start + length)`` by selection (:func:`numpy.partition`), not a full sort.

    Each row is laid out so that its ``i0``-th smallest sample lands in one column ``P``
    for every row: ``P - i0`` leading -inf, the range's samples, +inf after; one partition
    at ``P`` and ``P + 1`` then places both statistics (``i1`` is ``i0`` or ``i0 + 1``).

    Parameters
    ----------
    samples : Samples
        From :func:`tick_samples`.
    starts : ndarray, shape (Q,), int64
    length : int
    i0, i1 : ndarray, shape (Q,), intp
        ``0 <= i0 <= i1 <= i0 + 1 <`` the range's valid count.

    Returns
    -------
    tuple of two ndarray, shape (Q,), float64
    """
    vals, first = samples
    a = first[starts]
    n = first[starts + length] - a
    top = int(i0.max(initial=0))
    shift = top - i0
    width = int((shift + n).max(initial=0))
    if width == 0:
        return np.zeros(0), np.zeros(0)
    pos = (a - shift)[:, None] + np.arange(width)
    rows = vals.take(pos, mode="clip")
    np.copyto(rows, -np.inf, where=pos < a[:, None])
    np.copyto(rows, np.inf, where=pos >= (a + n)[:, None])
    rows.partition((top, top + 1) if width > top + 1 else top, axis=1)
    lo = rows[:, top]
    return lo, (np.where(i1 > i0, rows[:, top + 1], lo) if width > top + 1 else lo)


def rank_index(samples: Samples) -> RankIndex:
    """Rank the valid samples of :func:`tick_samples`."""
    vals, first = samples
    # quicksort degrades on one much repeated value (a turn rate is mostly 0.0): timsort then
    # (2.5x faster on the ADS-B turn rates, 1.8x slower on speeds)
    kind: Literal["stable"] | None = (
        "stable" if np.count_nonzero(vals == 0.0) * 20 > vals.size else None
    )
    order = np.argsort(vals, kind=kind)
    ranks = np.empty(vals.size, dtype=np.intp)
    ranks[order] = np.arange(vals.size, dtype=np.intp)
    return RankIndex(vals[order], ranks, order, first)


@dataclass(frozen=True, eq=False)
class RankBlocks:
    """The ranks of :class:`RankIndex` sorted within blocks of ``size`` ticks.

    Block ``j`` holds ticks ``[phase + (j - 1) * size, phase + j * size)`` (block 0 the
    ticks before ``phase``).

    Attributes
    ----------
    size, phase : int
    keys : ndarray, shape (M,), int64
        ``block * M + rank`` of every sample, ascending.
    first : ndarray, shape (n_blocks + 1,), int64
        Index in ``keys`` of each block's first sample.
    """

    size: int
    phase: int
    keys: np.ndarray
    first: np.ndarray


def rank_blocks(idx: RankIndex, size: int, phase: int) -> RankBlocks:
    """Sort ``idx``'s ranks within blocks of ``size`` ticks starting at tick ``phase``."""
    n_ticks = idx.first.size - 1
    m = idx.ranks.size
    n_blocks = (n_ticks - phase) // size + 3  # room for a window's last block past the end
    tick_block = (np.arange(n_ticks, dtype=np.int64) - phase) // size + 1
    counts = np.diff(idx.first)
    first = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(
        np.bincount(tick_block, weights=counts, minlength=n_blocks).astype(np.int64), out=first[1:]
    )
    # the block of each rank; a stable sort by block keeps ranks ascending within a block
    # (numpy sorts 16-bit integers stably by radix, in linear time)
    small = np.int16 if n_blocks < 2**15 else np.int64
    by_rank = np.repeat(tick_block.astype(small), counts)[idx.order]
    perm = np.argsort(by_rank, kind="stable")
    keys = by_rank[perm].astype(np.int64) * m + perm
    return RankBlocks(size, phase, keys, first)


def worth_ranking(n_ticks: int, n_windows: int, window_ticks: int) -> bool:
    """Whether ranking the source once beats sorting every window: measured on the ADS-B
    sample (``bench/bench_metrics.py``), the windows must hold each tick about 4 times or
    more (120-tick windows at stride 30 or less)."""
    return n_windows > 1 and n_windows * window_ticks >= 4 * n_ticks


def ranked_windows(
    idx: RankIndex, blocks: RankBlocks, starts: np.ndarray, length: int, k: np.ndarray
) -> np.ndarray:
    """The ``k``-th smallest valid sample (0-based) of each tick range ``[start, start + length)``.

    Parameters
    ----------
    idx : RankIndex
    blocks : RankBlocks
        Blocks of ``idx`` on which every start lies (``start - phase`` a multiple of the size).
    starts : ndarray, shape (Q,), int64
        First tick of each range; ranges end within the source.
    length : int
        Ticks per range.
    k : ndarray, shape (Q,), intp
        Order of the statistic, ``0 <= k < `` the range's valid samples.

    Returns
    -------
    ndarray, shape (Q,), float64
        The samples themselves.
    """
    m = idx.ranks.size
    size = blocks.size
    whole, rest = divmod(int(length), size)
    if 2 * rest <= size:  # whole blocks plus the ticks after them
        n_blk, t_a, t_b, sign = whole, starts + whole * size, starts + length, 1
    else:  # one block more, less the ticks after the range
        n_blk, t_a, t_b, sign = whole + 1, starts + length, starts + (whole + 1) * size, -1
    n_ticks = idx.first.size - 1
    s_a = idx.first[np.minimum(t_a, n_ticks)]
    s_b = idx.first[np.minimum(t_b, n_ticks)]
    # the single ticks' ranks, one row per query (M pads: never counted)
    width = int((s_b - s_a).max(initial=0))
    pos = s_a[:, None] + np.arange(width)
    tick_ranks = np.where(pos < s_b[:, None], idx.ranks[np.minimum(pos, m - 1)], m)
    blk = (starts - blocks.phase) // size + 1
    bid = blk[:, None] + np.arange(n_blk)
    # count(rank <= c) = sum of the blocks' searchsorted - their first indexes +- the ticks'
    target = k + blocks.first[bid].sum(axis=1)
    bkey = bid * m
    lo = np.zeros(k.shape, dtype=np.int64)
    hi = np.full(k.shape, m - 1, dtype=np.int64)
    for _ in range(int(max(m - 1, 0)).bit_length()):
        mid = (lo + hi) >> 1
        cnt = np.searchsorted(blocks.keys, bkey + mid[:, None], "right").sum(axis=1)
        extra = (tick_ranks <= mid[:, None]).sum(axis=1)
        cnt = cnt + extra if sign > 0 else cnt - extra
        ge = cnt > target
        hi = np.where(ge, mid, hi)
        lo = np.where(ge, lo, mid + 1)
    return idx.values[lo]


def worth_sliding(step: int, window_ticks: int) -> bool:
    """Whether one sliding median over every grid cell beats the ranked bisection: the
    sliding pass costs the same at any stride (about 2.3 ms a source on the ADS-B sample),
    the bisection grows with the windows; they break even near stride 10 of 120 ticks
    (``bench/bench_metrics.py``), so the sliding pass takes strides up to a 24th of the
    window."""
    return step > 0 and 24 * step <= window_ticks


def sliding_median(x: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """numpy's median of the valid samples of each tick range ``[start, start + length)``.

    ``bottleneck.move_median`` over the grid's cells in tick-major order: a range of
    ``length`` ticks is ``length * E`` consecutive cells, NaN cells are skipped, and a range
    with no valid sample gives NaN.  The median of an even count is the mean of the two
    middle samples, ``(a + b) / 2``, as numpy computes it.  The two middle samples of a
    range holding both 0.0 and -0.0 may come in either order; the caller keeps such a
    stream on the per-window sort (:func:`~kuration.metrics.dsl.reduces.mixed_zeros`).

    Parameters
    ----------
    x : ndarray, shape (N, E, 1), float64
        A source-level stream, NaN where a sample is missing.
    starts : ndarray, shape (Q,), int64
        First tick of each range; ``start + length <= N``.
    length : int
        Ticks per range, at least 1.

    Returns
    -------
    ndarray, shape (Q,), float64
    """
    n, e = x.shape[0], x.shape[1]
    if starts.size == 0:
        return np.zeros(0)
    cells = np.ascontiguousarray(x[..., 0], dtype=np.float64).reshape(-1)
    width = length * e
    first_end = int(starts.min()) * e + width  # nothing before the first range's end
    moved = bottleneck.move_median(cells[first_end - width : n * e], width, min_count=1)
    return moved[(starts + length) * e - first_end + width - 1]
