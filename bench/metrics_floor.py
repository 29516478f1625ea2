"""The floor of ``bench_metrics.py``'s feature pass: its 10 metrics with the kernels called directly.

Used by ``bench_metrics.py`` (timed in the same interleaved rounds as the engine and tsfresh)
and by ``profile_perf.py metrics`` (its stages timed one by one).  What the engine's
compiled program does for these metrics, less the engine: no compiler, no frame or caches,
no stream objects, no infinity checks or presence masking (the ADS-B tables are NaN where
a sample is absent and hold no infinity), one pass over a table's windows as one batch.
Each feature takes the kernel the engine picks for the same windows
(:mod:`kuration.metrics.dsl.kernels`, :mod:`~kuration.metrics.dsl.reduces`,
:mod:`~kuration.metrics.dsl.order_stats`), so the values are the engine's, bit for bit
(``bench_metrics.py`` asserts it before timing).  The floor is thereby the least work for
these features *with today's kernels*: a faster kernel moves both.

* the speed chain: ECEF pairs of the valid positions and the clamped speed;
* the order statistics (``speed_p90``, ``turn_p90``, ``alt_median``): each window's
  valid samples partitioned (or sorted) as rows, the wavelet matrix where the windows overlap more than
  :data:`~kuration.metrics.dsl.order_stats.WAVELET_COVERAGE` times, the sliding median
  where the engine slides it;
* the other reduces: per-tick partials (counts, sums, moments, extremes) combined over
  each window's ticks, as the engine does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import numpy as np

from kuration.metrics.dsl import kernels, order_reduce, order_stats, reduces

#: the stage each timed part belongs to (``profile_perf.py`` sums them by stage)
STAGE = {
    "speed chain: ECEF pairs (its sin and cos)": "speed chain",
    "speed chain: speed of the pairs": "speed chain",
    "turn rate (angle_delta, abs)": "turn rate",
    "speed_p90": "order statistics",
    "turn_p90": "order statistics",
    "alt_median": "order statistics",
}


class Timer:
    """Thread CPU seconds of each named part, summed over calls (``None``: no timing)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        c0 = time.thread_time()
        try:
            yield
        finally:
            self.spent[name] = self.spent.get(name, 0.0) + time.thread_time() - c0


_NULL = nullcontext()


def _untimed(name: str) -> AbstractContextManager[None]:
    return _NULL


def _windows(starts: np.ndarray, length: int) -> Callable[[np.ndarray, int], np.ndarray]:
    """``win(a, offset)``: the windows of source-level ``a`` (N, ...) on the regular grid
    ``starts`` as a (G, length - offset, ...) strided view, the layout the engine's
    ``WindowBatch.view`` gives (so sums over a window add in the same order)."""
    s0 = int(starts[0])
    step = int(starts[1] - starts[0]) if starts.size > 1 else 1

    def win(a: np.ndarray, offset: int) -> np.ndarray:
        st = a.strides
        return np.lib.stride_tricks.as_strided(
            a[s0 + offset :],
            (starts.size, length - offset, *a.shape[1:]),
            (st[0] * step, st[0], *st[1:]),
            writeable=False,
        )

    return win


def _order(
    x: np.ndarray, starts: np.ndarray, length: int, lag: int
) -> tuple[reduces.Take, np.ndarray]:
    """Order statistics of each window of stream ``x`` (N, E, 1) that dropped ``lag`` ticks:
    the kernel the engine's ``order_ticks`` picks (``order_reduce.window_order``: partitioned
    or sorted rows, or the wavelet matrix), without the frame's memo."""
    samples = order_stats.tick_samples(x, reduces.tick_valid(x))
    return order_reduce.window_order(samples, starts + lag, length - lag)


def floor_pass(
    values: dict[str, np.ndarray],
    hz: float,
    starts: np.ndarray,
    length: int,
    timer: Timer | None = None,
) -> dict[str, np.ndarray]:
    """``bench_metrics.DEFINE``'s 10 features of every window ``[s, s + length)``.

    Parameters
    ----------
    values : dict of str to ndarray, shape (N, E, D), float64
        A TickTable's fields (NaN where absent): position (degrees), altitude, groundspeed,
        track (degrees), vertical_rate, onground.
    hz : float
        Ticks per second.
    starts : ndarray, shape (G,), int64
        A regular grid of window starts (``Segmenter.starts``).
    length : int
        Ticks per window.
    timer : Timer, optional
        Receives the thread CPU of each part (the names of :data:`STAGE` and one per
        other feature).

    Returns
    -------
    dict of str to ndarray, shape (G,), float64
        NaN where a window holds no valid sample.
    """
    part = timer.part if timer is not None else _untimed
    win = _windows(starts, length)
    out: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        pos = values["position"]
        with part("speed chain: ECEF pairs (its sin and cos)"):
            pairs = kernels.geodetic_pairs(pos, None)
        with part("speed chain: speed of the pairs"):
            spd = kernels.geodetic_speed(pos, None, hz, 400.0, pairs)
        with part("speed_p90"):
            out["speed_p90"] = reduces.percentile_of(*_order(spd, starts, length, 1), 90.0)
        with part("speed_mean"):
            ok, idx, first = reduces.tick_valid(spd)
            _, _, n, s = reduces.tick_sums(spd, (ok, idx, first))
            out["speed_mean"] = reduces.window_total("mean", n, s, lambda a, e: win(a, 1 + e))
        with part("aircraft_mean"):  # entities:count, then its mean: a tick counts when n > 0
            has = (n > 0).astype(np.intp)
            out["aircraft_mean"] = reduces.window_total(
                "mean", has, n.astype(np.float64), lambda a, e: win(a, 1 + e)
            )
        with part("turn rate (angle_delta, abs)"):
            turn = np.abs(kernels.angle_delta(values["track"], 360.0, 30.0, hz))
        with part("turn_p90"):
            out["turn_p90"] = reduces.percentile_of(*_order(turn, starts, length, 1), 90.0)
        vr = values["vertical_rate"]
        with part("climb_std"):
            sums = reduces.tick_sums(vr, reduces.tick_valid(vr))
            mom = reduces.tick_moments(vr, sums, squares=False)
            out["climb_std"] = reduces.window_moment("std", mom, lambda a, e: win(a, e))
        with part("climb_min"):
            tick = reduces.tick_extreme(vr, "min")
            out["climb_min"] = reduces.window_extreme(tick, "min", lambda a, e: win(a, e))
        alt = values["altitude"]
        with part("alt_mean"):
            _, _, n, s = reduces.tick_sums(alt, reduces.tick_valid(alt))
            out["alt_mean"] = reduces.window_total("mean", n, s, lambda a, e: win(a, e))
        with part("alt_median"):
            step = int(starts[1] - starts[0]) if starts.size > 1 else 0
            if order_stats.worth_sliding(step, length):
                out["alt_median"] = order_stats.sliding_median(alt, starts, length)
            else:
                out["alt_median"] = reduces.median_of(*_order(alt, starts, length, 0))
        with part("gs_max"):
            tick = reduces.tick_extreme(values["groundspeed"], "max")
            out["gs_max"] = reduces.window_extreme(tick, "max", lambda a, e: win(a, e))
        with part("ground_frac"):
            og = values["onground"][..., 0]
            hits = (og > 0.5).sum(axis=-1)
            supp = (~np.isnan(og)).sum(axis=-1)
            frac = reduces.window_hits("frac", (hits, supp, hits > 0), lambda a, e: win(a, e), hz)
            out["ground_frac"] = frac
    # the engine's last step: a non-finite result is no value
    return {k: np.where(np.isfinite(v), v, np.nan) for k, v in out.items()}
