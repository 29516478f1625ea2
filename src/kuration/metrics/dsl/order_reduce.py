"""Order-statistic reduces (median, percentiles, IQR) of windows: the per-window sort of a
window-level stream, and for a source-level stream the sorted rows, the wavelet matrix
(:mod:`~kuration.metrics.dsl.order_stats`) or the sliding median, whichever the windows'
overlap makes cheapest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import order_stats, reduces
from .frame import Frame, Stream
from .values import Key, ReduceFn

__all__ = ["order_ticks", "sliding_median", "sorted_windows", "window_order"]


def sorted_windows(s: Stream, fr: Frame, key: Key) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of a window-level stream: each window's samples sorted."""

    def make() -> tuple[reduces.Take, np.ndarray]:
        srt, n = reduces.sorted_values(s.x)
        return reduces.take_sorted(srt), n

    out: tuple[reduces.Take, np.ndarray] = fr.memo((key, "@sorted"), True, make)
    return out


def order_ticks(s: Stream, fr: Frame, key: Key) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of the windows of a source-level stream: each window's valid samples
    partitioned (or sorted, for a stream of many zeros) in a row, or, where the windows overlap so much that the rows would hold each
    sample dozens of times, the samples they span ranked once into a wavelet matrix
    (:mod:`~kuration.metrics.dsl.order_stats`; per chunk of windows, which bounds its
    memory to about ``4 * log2(M)`` bytes a sample of the chunk)."""

    def make() -> tuple[reduces.Take, np.ndarray]:
        b = fr.batch
        grid, length = b.grid, b.length - s.lag
        starts = grid + s.lag
        samples = fr.memo(
            (key, "@samples"), False, lambda: order_stats.tick_samples(s.x, fr.tick_valid(s, key))
        )
        # 0.0 and -0.0 tie, and a sort leaves them as its input's order has them: such a
        # stream keeps the sort of every window's whole (padded) samples
        if fr.memo((key, "@mixed_zeros"), False, lambda: reduces.mixed_zeros(samples[0])):
            padded = fr.memo((key, "@tick_padded"), False, lambda: reduces.tick_padded(s.x))
            srt, n = reduces.window_sorted(
                padded, lambda a, extra: fr.batch.view(a, s.lag + extra), compact=False
            )
            return reduces.take_sorted(srt), n
        if length <= 0:  # the look-back leaves the windows no tick
            return reduces.take_sorted(np.zeros((grid.size, 0))), np.zeros(grid.size, np.intp)
        return window_order(samples, starts, length)

    out: tuple[reduces.Take, np.ndarray] = fr.memo((key, "@order"), True, make)
    return out


def window_order(
    samples: order_stats.Samples, starts: np.ndarray, length: int
) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of the windows ``[starts, starts + length)`` of a stream's valid
    ``samples`` (:func:`order_stats.tick_samples`), by the kernel their overlap makes
    cheapest: each window's samples partitioned in a row (sorted, for many zeros), or the
    samples they span ranked once into a wavelet matrix.

    Returns the take (order statistics by rank pairs) and each window's sample count,
    shape (W,), intp.
    """
    first = samples[1]
    lo = first[starts]
    n = first[starts + length] - lo
    # the samples these windows span: a chunk of a long source ranks its own span only
    s_lo, s_hi = (int(first[starts.min()]), int(first[starts.max() + length])) if n.size else (0, 0)
    if not order_stats.worth_wavelet(int(n.sum()), s_hi - s_lo):
        if order_stats.worth_selecting(samples[0][s_lo:s_hi]):

            def select(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> Any:
                return order_stats.selected_pairs(samples, starts[rows], length, i0, i1)

            return select, n
        rows, n = order_stats.sorted_rows(samples, starts, length)
        return reduces.take_sorted(rows), n
    idx = order_stats.rank_index(samples[0][s_lo:s_hi])
    wm = order_stats.wavelet_matrix(idx.ranks)
    lo = lo - s_lo

    def take(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> Any:
        a = np.tile(lo[rows], 2)
        ranks = order_stats.kth_smallest(wm, a, a + np.tile(n[rows], 2), np.concatenate([i0, i1]))
        return np.split(idx.values[ranks], 2)

    return take, n


def sliding_median(order_stat: Callable[..., np.ndarray]) -> ReduceFn:
    """The windowed median in one sliding pass (:func:`order_stats.sliding_median`) on a
    grid dense enough without mixed zeros; the order statistics of :func:`order_ticks` else."""

    def reduce(s: Stream, fr: Frame, key: Key) -> np.ndarray:
        grid, length = fr.batch.grid, fr.batch.length - s.lag
        step = int(grid[1] - grid[0]) if grid.size > 1 else 0
        samples = fr.memo(
            (key, "@samples"), False, lambda: order_stats.tick_samples(s.x, fr.tick_valid(s, key))
        )
        if (
            order_stats.worth_sliding(step, length)
            and bool((np.diff(grid) == step).all())
            and not fr.memo((key, "@mixed_zeros"), False, lambda: reduces.mixed_zeros(samples[0]))
        ):
            return order_stats.sliding_median(s.x, grid + s.lag, length)
        return order_stat(*order_ticks(s, fr, key))

    return reduce
