"""``kur init``'s grid phase: where in a step the rows are stamped, and the offset that
keeps them off the rounding boundary.

A recorder that stamps each row mid-interval (100 Hz rows at 0.005 s, 0.015 s, ...)
puts every row half a step from a grid point, exactly where the adapters' rounding
(:func:`kuration.core.grid.grid_points`) changes its mind: a microsecond of clock
jitter then sends neighbours to one tick and leaves the next empty (about a quarter
of the rows collide).  The phase of the stamps is the circular mean of
``frac(t * hz)`` over the rows (directional statistics: the angle of the mean unit
vector, Mardia & Jupp, *Directional Statistics*, 2000, sec. 2.2.1), and its mean
resultant length says how tightly the rows share it (1: all at one phase, 0: spread
evenly, as irregular stamps are).  When the phase sits within :data:`NEAR_HALF` of a
step from the half step, the job sets the adapters' ``grid_offset_s`` to it, which
moves the rounding boundary half a step away from the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["NEAR_HALF", "GridPhase", "grid_phase", "phase_line"]

#: the stamps' phase must be this close (in steps) to the half step for an offset
NEAR_HALF = 0.25
#: the mean resultant length under which the phases count as spread (no common phase)
MIN_CONCENTRATION = 0.5


@dataclass(frozen=True)
class GridPhase:
    """Where the rows sit within a step of the ``hz`` grid.

    Attributes
    ----------
    phase : float
        Circular mean of ``frac(t * hz)``, in steps, within [0, 1).
    concentration : float
        Its mean resultant length, within [0, 1].
    offset_s : float
        The ``grid_offset_s`` to propose, seconds within [0, 1 / hz): ``phase / hz``
        with 3 significant digits when the phase is shared (concentration at least
        :data:`MIN_CONCENTRATION`) and within :data:`NEAR_HALF` of 0.5, else 0.
    """

    phase: float
    concentration: float
    offset_s: float


def grid_phase(t: np.ndarray, hz: float) -> GridPhase:
    """The phase of times ``t`` (seconds, shape (N,), float64) on the ``hz`` grid.

    An empty ``t`` has phase 0, concentration 0 and no offset.
    """
    if t.size == 0:
        return GridPhase(0.0, 0.0, 0.0)
    x = np.asarray(t, dtype=np.float64) * hz
    angle = 2 * np.pi * (x - np.floor(x))
    c, s = float(np.mean(np.cos(angle))), float(np.mean(np.sin(angle)))
    phase = (math.atan2(s, c) / (2 * math.pi)) % 1.0
    concentration = min(math.hypot(c, s), 1.0)
    offset = 0.0
    if concentration >= MIN_CONCENTRATION and abs(phase - 0.5) <= NEAR_HALF:
        offset = float(f"{phase / hz:.3g}")
    return GridPhase(phase, concentration, offset)


def _rel(dt: float) -> str:
    """``T + 3 s`` or ``T - 10 s``: a time relative to a tick's."""
    return f"T {'-' if dt < 0 else '+'} {abs(dt):.3g} s"


def phase_line(gp: GridPhase, hz: float, rows: int, without: int) -> str:
    """The summary line for a proposed offset: where the rows sit, what it costs without
    the offset (``without`` rows sharing a tick), and what a tick then takes."""
    step = 1.0 / hz
    return (
        f"  grid phase: the rows are stamped {gp.phase:.3f} of a step after the {hz:g} Hz "
        f"ticks (circular mean over {rows} rows, {gp.concentration:.3f} concentrated), "
        f"near the half step where rounding changes tick: there clock jitter sends "
        f"neighbours to one tick ({without} rows would share one).  The job shifts the "
        f"rounding by grid_offset_s {gp.offset_s:g} s: a tick at time T takes the rows from "
        f"{_rel(gp.offset_s - step / 2)} to {_rel(gp.offset_s + step / 2)} "
        f"(tick times stay multiples of {step:.6g} s)"
    )
