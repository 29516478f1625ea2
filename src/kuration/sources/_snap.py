"""Snap collisions: several rows of one entity that land on one grid point.

Shared by the adapters that snap raw times to the schema's ``sample_hz`` grid
(``TimeseriesAdapter``, ``TimenetAdapter``).  Rows are grouped by
(entity, tick), nearest row first; a group of more than one row is a
collision.  Policies (the adapters' ``collisions`` option):

* ``nearest`` (default): the row nearest its grid point is kept (ties: the
  earlier row); the others are dropped and a :class:`SnapCollisionWarning`
  says how many.
* ``mean``: float fields are averaged over the group's non-null values
  (angular fields by their circular mean); categorical, bitmask and integer
  fields keep the nearest row's value.
* ``raise``: the source is refused.

Every policy counts the rows that collided (all rows of a group but one) and
the adapter reports the count as ``snap_collisions`` in its TickTable's
``counts``; runs record it per source in ``config.json``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..contracts.schema import FieldSpec
from ..core.grid import grid_points
from ..core.units import to_unit
from ..errors import AdapterError, SnapCollisionWarning

__all__ = [
    "COLLISION_POLICIES",
    "check_grid_offset",
    "group_starts",
    "merge_groups",
    "snap_ticks",
    "warn_dropped",
]

COLLISION_POLICIES = ("nearest", "mean", "raise")


def snap_ticks(
    t_sec: np.ndarray, hz: float, offset_s: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Each time's grid point and its distance from it.

    A time exactly half way between two grid points goes to the later one
    (:func:`kuration.core.grid.grid_points`: ``floor(x + 0.5)`` with a few ulps of
    slack), so a recorder that stamps every row at the half step (1 Hz rows at 0.5 s,
    1.5 s, 2.5 s; 100 Hz rows at 0.005 s, 0.015 s, whose products with ``hz`` fall a
    ulp either side of the half) keeps one row per tick.  NumPy's ``rint``
    rounds halves to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, so every other tick
    collided and the tick between stayed empty.

    Such stamps sit on the rounding boundary, so clock jitter of a microsecond sends
    neighbours to one tick; ``offset_s`` (the adapters' ``grid_offset_s``) moves the
    boundary: a time lands on ``grid_points((t_sec - offset_s) * hz)``.  Tick ``k``
    keeps its time ``k / hz``: the offset decides which rows a tick takes, not when
    it is.

    Parameters
    ----------
    t_sec : ndarray, shape (N,), float64, seconds
    hz : float
        The schema's ``sample_hz``.
    offset_s : float
        Seconds the rounding boundaries move later, within ``[0, 1 / hz)``
        (:func:`check_grid_offset`).

    Returns
    -------
    k : ndarray, shape (N,), int64
        Tick indices, ``grid_points((t_sec - offset_s) * hz)``.
    off : ndarray, shape (N,), float64
        ``|(t_sec - offset_s) * hz - k|`` in steps, within [0, 0.5].
    """
    x = (t_sec - offset_s) * hz if offset_s else t_sec * hz
    k = grid_points(x)
    # a time a few ulps under a half step goes up, so its distance can pass 0.5 by them
    return k, np.minimum(np.abs(x - k), 0.5)


def check_grid_offset(offset_s: Any, hz: float, adapter: str) -> float:
    """``offset_s`` as a float once it is a valid ``grid_offset_s`` at ``hz``.

    Raises
    ------
    AdapterError
        Naming ``grid_offset_s``: not a real number, not finite, or outside
        ``[0, 1 / hz)`` seconds (a whole step or more only renumbers the ticks).
    """
    if isinstance(offset_s, bool) or not isinstance(offset_s, (int, float)):
        raise AdapterError(
            f"grid_offset_s must be a number of seconds, got {offset_s!r}", adapter=adapter
        )
    value = float(offset_s)
    if not math.isfinite(value) or not 0.0 <= value < 1.0 / hz:
        raise AdapterError(
            f"grid_offset_s must be finite and within [0, {1.0 / hz:.9g}) s (one step at "
            f"{hz:g} Hz), got {offset_s!r}",
            adapter=adapter,
        )
    return value


def group_starts(*keys: np.ndarray) -> np.ndarray:
    """Start index of every run of equal key tuples in already sorted keys, shape (G,), int64."""
    n = keys[0].size
    new = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for k in keys:
            same &= k[1:] == k[:-1]
        new[1:] = ~same
    return np.flatnonzero(new)


def _averaged(f: FieldSpec) -> bool:
    return f.kind != "categorical" and f.semantics != "bitmask" and np.dtype(f.dtype).kind == "f"


def merge_groups(values: np.ndarray, starts: np.ndarray, f: FieldSpec, policy: str) -> np.ndarray:
    """One value per group of rows.

    Parameters
    ----------
    values : ndarray, shape (N, D), float64
        Rows sorted by group, nearest row first within a group; NaN is null.
    starts : ndarray, shape (G,), int64
        First row of each group.
    f : FieldSpec
        The field (decides whether ``mean`` averages it).
    policy : {"nearest", "mean", "raise"}

    Returns
    -------
    ndarray, shape (G, D), float64
    """
    if policy != "mean" or not _averaged(f) or starts.size == values.shape[0]:
        return values[starts]
    valid = ~np.isnan(values)
    count = np.add.reduceat(valid, starts, axis=0)
    if f.semantics == "angular":
        turn = float(to_unit(np.array([1.0]), "turn", f.units[0])[0])
        rad = np.where(valid, values, 0.0) * (2 * np.pi / turn)
        s = np.add.reduceat(np.where(valid, np.sin(rad), 0.0), starts, axis=0)
        c = np.add.reduceat(np.where(valid, np.cos(rad), 0.0), starts, axis=0)
        out = np.arctan2(s, c) * (turn / (2 * np.pi))
        low = np.fmin.reduceat(values, starts, axis=0)
        out = np.where((out < 0) & (low >= 0), out + turn, out)  # keep [0, turn) data there
    else:
        total = np.add.reduceat(np.where(valid, values, 0.0), starts, axis=0)
        out = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    out[count == 0] = np.nan
    return out


def warn_dropped(source: str, count: int, hz: float, entities: int) -> None:
    """Emit the :class:`SnapCollisionWarning` of ``collisions="nearest"``."""
    warnings.warn(
        SnapCollisionWarning(
            f"{source}: {count} row(s) of {entities} "
            f"{'entity' if entities == 1 else 'entities'} landed on a {hz:g} Hz tick already "
            "taken and were dropped (collisions='nearest'); 'mean' averages them, 'raise' "
            "refuses the source",
            source=source,
            count=count,
        ),
        stacklevel=3,
    )
