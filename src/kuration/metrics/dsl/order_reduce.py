"""Order-statistic reduces (median, percentiles, IQR) of windows: the per-window sort of a
window-level stream, and for a source-level stream the selection, the ranked bisection
(:mod:`~kuration.metrics.dsl.order_stats`) or the sliding median, whichever the windows'
overlap makes cheapest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import order_stats, reduces
from .frame import Frame, Stream
from .values import Key, ReduceFn

__all__ = ["order_ticks", "sliding_median", "sorted_windows"]


def sorted_windows(s: Stream, fr: Frame, key: Key) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of a window-level stream: each window's samples sorted."""

    def make() -> tuple[reduces.Take, np.ndarray]:
        srt, n = reduces.sorted_values(s.x)
        return reduces.take_sorted(srt), n

    out: tuple[reduces.Take, np.ndarray] = fr.memo((key, "@sorted"), True, make)
    return out


def order_ticks(s: Stream, fr: Frame, key: Key) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of the windows of a source-level stream: from the source's samples
    ranked once (:mod:`~kuration.metrics.dsl.order_stats`) when the windows overlap enough
    and lie on a regular grid, else from each window's valid samples sorted."""

    def make() -> tuple[reduces.Take, np.ndarray]:
        b = fr.batch
        grid, length = b.grid, b.length - s.lag
        starts = grid + s.lag
        samples = fr.memo((key, "@samples"), False, lambda: order_stats.tick_samples(s.x))
        # 0.0 and -0.0 tie, and a sort leaves them as its input's order has them: such a
        # stream keeps the sort of every window's whole (padded) samples
        if fr.memo((key, "@mixed_zeros"), False, lambda: reduces.mixed_zeros(samples[0])):
            padded = fr.memo((key, "@tick_padded"), False, lambda: reduces.tick_padded(s.x))
            srt, n = reduces.window_sorted(
                padded, lambda a, extra: fr.batch.view(a, s.lag + extra), compact=False
            )
            return reduces.take_sorted(srt), n
        step = int(grid[1] - grid[0]) if grid.size > 1 else 0
        regular = step > 0 and bool((np.diff(grid) == step).all())
        first = samples[1]
        n = first[starts + length] - first[starts] if length > 0 else np.zeros(grid.size, int)
        if not regular or not order_stats.worth_ranking(b.n_steps, grid.size, length):

            def select(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> Any:
                return order_stats.selected_pairs(samples, starts[rows], length, i0, i1)

            return select, n
        idx = fr.memo((key, "@ranks"), False, lambda: order_stats.rank_index(samples))
        phase = int(starts[0]) % step
        blocks = fr.memo(
            (key, "@rank_blocks", step, phase),
            False,
            lambda: order_stats.rank_blocks(idx, step, phase),
        )

        def take(rows: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> Any:
            both = order_stats.ranked_windows(
                idx, blocks, np.tile(starts[rows], 2), length, np.concatenate([i0, i1])
            )
            return np.split(both, 2)

        return take, n

    out: tuple[reduces.Take, np.ndarray] = fr.memo((key, "@order"), True, make)
    return out


def sliding_median(order_stat: Callable[..., np.ndarray]) -> ReduceFn:
    """The windowed median in one sliding pass (:func:`order_stats.sliding_median`) on a
    grid dense enough without mixed zeros; the ranked or selected order statistics else."""

    def reduce(s: Stream, fr: Frame, key: Key) -> np.ndarray:
        grid, length = fr.batch.grid, fr.batch.length - s.lag
        step = int(grid[1] - grid[0]) if grid.size > 1 else 0
        samples = fr.memo((key, "@samples"), False, lambda: order_stats.tick_samples(s.x))
        if (
            order_stats.worth_sliding(step, length)
            and bool((np.diff(grid) == step).all())
            and not fr.memo((key, "@mixed_zeros"), False, lambda: reduces.mixed_zeros(samples[0]))
        ):
            return order_stats.sliding_median(s.x, grid + s.lag, length)
        return order_stat(*order_ticks(s, fr, key))

    return reduce
