"""A sample rate fitted to stamps: the mean step over gap-free runs, written so it does not drift.

Runs: an entity's rows split where a step exceeds :data:`GAP` times the
entity's median step (a repeated stamp is left out: the duplicates policy
handles it), so inside a run every step is one tick.

Step: the least-squares slope of time over row index, pooled over runs (each
run its own intercept).  A median step says little when stamps are quantized:
60 Hz stamped in whole milliseconds steps 16, 17, 17 ms, a median of 17 ms,
58.8 Hz; the slope is 16.67 ms.  With stamps rounded to ``q`` the slope's
error over a run of ``N`` steps is about ``q / N**1.5`` (ordinary least
squares, uniform rounding error), so its drift over the run, ``q / N**0.5``,
is far below a step.

Rate: among 1 / step written with few digits -- the 1-2-5 rate, the rate to
``d`` significant digits (``d`` = 1, 2, ...), and, for a period of at most
:data:`PERIOD_DIGITS` digits, its inverse at full float precision (3600 s
gives ``1 / 3600.0``, not 0.0002778) -- the candidates whose drift stays within
:data:`DRIFT_STEPS` of a step over the longest track (its first row to its
last, gaps included: one grid spans them): ``N * |c * step - 1| <=
DRIFT_STEPS``.  The tolerance shrinks with the track: a rate 8e-5 off is
harmless over 100 rows but puts an hourly year (8,760 rows) 0.7 steps off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .guess import nice_rate

__all__ = ["DRIFT_STEPS", "GAP", "StepFit", "fit_steps", "rate_candidates"]

#: a step longer than this many median steps of its entity ends a run
GAP = 1.5
#: the most a proposed rate may drift from the fitted one over the longest track, in steps
DRIFT_STEPS = 0.05
_DIGITS = tuple(range(1, 13))
#: a period of at most this many significant digits (3600 s, 30 s, 0.04 s) is a candidate
#: too; a longer one (0.0085479 s) reads better as its rate (116.988 Hz)
PERIOD_DIGITS = 4


@dataclass(frozen=True)
class StepFit:
    """Steps of rows sorted by (entity, time).

    Attributes
    ----------
    step_s : float
        Least-squares mean step over runs, seconds (the median when no run has two steps).
    median_s : float
        Median over entities of each entity's median positive step, seconds.
    longest : int
        Steps in the longest track, an entity's first row to its last (at least 1).
    row_step : ndarray, shape (N,), float64
        The median step of each row's entity, seconds (``median_s`` for an entity with
        no positive step).
    """

    step_s: float
    median_s: float
    longest: int
    row_step: np.ndarray


def _entity_medians(t: np.ndarray, ent: np.ndarray) -> tuple[np.ndarray, float]:
    """(per-row median positive step of the row's entity, median over entities)."""
    d = np.diff(t)
    ok = (ent[1:] == ent[:-1]) & (d > 0)
    owner = ent[1:][ok]
    steps = d[ok]
    codes, first = np.unique(owner, return_index=True)  # owner is sorted: one slice each
    meds = np.array([np.median(s) for s in np.split(steps, first[1:])]) if codes.size else first
    overall = float(np.median(meds)) if meds.size else 0.0
    row = np.full(t.size, overall)
    pos = np.searchsorted(codes, ent)
    hit = pos < codes.size
    hit[hit] = codes[pos[hit]] == ent[hit]
    row[hit] = meds[pos[hit]]
    return row, overall


def fit_steps(t: np.ndarray, ent: np.ndarray) -> StepFit:
    """The step fitted to times ``t`` (seconds) of entities ``ent``, sorted by (entity, time).

    Parameters
    ----------
    t : ndarray, shape (N,), float64
    ent : ndarray, shape (N,), int

    Returns
    -------
    StepFit
        ``step_s`` is ``sum_r sum_i (i - mean_r(i)) * t_ri / sum_r n_r (n_r**2 - 1) / 12``
        over runs ``r`` of ``n_r`` rows (the pooled OLS slope of time on row index).
    """
    row_step, median = _entity_medians(t, ent)
    keep = np.r_[True, (ent[1:] != ent[:-1]) | (t[1:] != t[:-1])]
    t, ent, med = t[keep], ent[keep], row_step[keep]
    brk = (ent[1:] != ent[:-1]) | (np.diff(t) > GAP * med[1:])
    run = np.cumsum(np.r_[True, brk]) - 1
    starts = np.flatnonzero(np.r_[True, brk])
    n = np.bincount(run).astype(np.float64)
    x = np.arange(t.size) - starts[run]
    y = t - t[starts[run]]
    sxx = float((n * (n * n - 1) / 12).sum())
    step = float(np.sum((x - (n[run] - 1) / 2) * y)) / sxx if sxx > 0 else median
    return StepFit(step, median, _longest_track(t, ent, step), row_step)


def _longest_track(t: np.ndarray, ent: np.ndarray, step: float) -> int:
    """Steps from an entity's first row to its last, the longest over entities (at least 1):
    the grid is one for the whole track, so a rate's drift adds up across its gaps too."""
    if step <= 0:
        return 1
    last = np.r_[ent[1:] != ent[:-1], True]
    first = np.r_[True, ent[1:] != ent[:-1]]
    return max(1, round(float((t[last] - t[first]).max()) / step))


def _digits(x: float, d: int) -> float:
    return float(f"{x:.{d}g}")


def rate_candidates(step_s: float, longest: int) -> list[float]:
    """Rates near ``1 / step_s`` that drift at most :data:`DRIFT_STEPS` of a step over
    ``longest`` steps, fewest digits first; the last is ``1 / step_s`` itself."""
    r = 1.0 / step_s
    tol = DRIFT_STEPS / max(longest, 1)
    seen = [nice_rate(r)]
    for d in _DIGITS:
        seen += [_digits(r, d), *([1.0 / _digits(step_s, d)] if d <= PERIOD_DIGITS else [])]
    seen.append(r)
    return [c for c in dict.fromkeys(seen) if abs(c * step_s - 1) <= tol] or [r]
