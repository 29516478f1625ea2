"""Which grid point a time lands on: the one rounding rule every adapter, ``kur init``
and the tick contract share.

A time ``t`` (seconds) at ``hz`` is ``x = t * hz`` steps from the origin; it lands on
tick ``floor(x + 0.5 + tol)``, a half step going to the later tick.  ``tol`` is a few
units in the last place of ``x`` (:data:`HALF_STEP_ULPS`): a recorder that stamps rows
at the half step (100 Hz rows at 0.005 s, 0.015 s, ...) gives products such as
``0.035 * 100 = 3.4999999999999996`` and ``0.015 * 100 = 1.5000000000000002``, and
without the tolerance those halves fell on either side and about one row in 25
collided with its neighbour.  The tolerance moves only times within a few ulps of a
half step, far below any clock's resolution.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["HALF_STEP_ULPS", "grid_point", "grid_points"]

#: Units in the last place of ``x`` a half step may be off and still go to the later
#: tick: a decimal time's representation error and the product with ``hz`` each add
#: up to about one.
HALF_STEP_ULPS = 16


def grid_points(x: np.ndarray) -> np.ndarray:
    """Grid points of times ``x`` measured in steps.

    Parameters
    ----------
    x : ndarray, shape (N,), float64
        ``t * hz``: time in steps of the grid; finite.

    Returns
    -------
    ndarray, shape (N,), int64
        ``floor(x + 0.5 + HALF_STEP_ULPS * spacing(|x|))``.
    """
    x = np.asarray(x, dtype=np.float64)
    tol = HALF_STEP_ULPS * np.spacing(np.abs(x))
    return np.asarray(np.floor(x + 0.5 + tol), dtype=np.int64)


def grid_point(x: float) -> int:
    """:func:`grid_points` of one finite float ``x`` (steps), as a Python int."""
    return math.floor(x + 0.5 + HALF_STEP_ULPS * math.ulp(abs(x)))
