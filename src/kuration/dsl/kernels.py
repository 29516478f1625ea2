"""Numeric kernels of the metric grammar (pure numpy/scipy, NaN = missing).

Every array is float64 ``(T, E, D)`` with NaN marking an invalid sample; a
vector sample with any NaN component is invalid as a whole.  Step maps pair
tick ``t`` with tick ``t - 1`` of the *same* entity and are invalid unless both
are valid, so an entity's gap is never bridged and two entities never mix.
"""

from __future__ import annotations

import numpy as np
import pymap3d
from scipy import stats

__all__ = [
    "abs_map",
    "agg_entities",
    "angle_delta",
    "bit_map",
    "diff_map",
    "geodetic_to_ecef",
    "norm_map",
    "reduce_values",
    "speed",
]


def _lag(x: np.ndarray) -> np.ndarray:
    """``x[t-1]`` aligned to ``t`` (NaN at t=0), shape preserved."""
    out = np.full_like(x, np.nan)
    out[1:] = x[:-1]
    return out


def geodetic_to_ecef(pos: np.ndarray, alt_factor: float | None) -> np.ndarray:
    """WGS84 latitude/longitude(/altitude) in degrees (and ``alt_factor`` * unit to metres)
    to Earth-centred Earth-fixed metres, via ``pymap3d.geodetic2ecef``.

    pos : ndarray, shape (T, E, 2 or 3), degrees (altitude in its own unit)
    returns : ndarray, shape (T, E, 3), float64, metres
    """
    lat, lon = pos[..., 0], pos[..., 1]
    alt = (
        pos[..., 2] * alt_factor
        if pos.shape[-1] == 3 and alt_factor is not None
        else np.zeros_like(lat)
    )
    x, y, z = pymap3d.geodetic2ecef(lat, lon, alt, deg=True)
    return np.stack([np.asarray(x), np.asarray(y), np.asarray(z)], axis=-1)


def speed(pos_m: np.ndarray, sample_hz: float, max_rate: float | None) -> np.ndarray:
    """Speed of each entity between consecutive ticks: ``|p[t] - p[t-1]| * sample_hz``.

    pos_m : ndarray, shape (T, E, D), metres
    returns : ndarray, shape (T, E, 1), float64, m/s (clipped to ``max_rate``)
    """
    d = pos_m - _lag(pos_m)
    v = np.sqrt(np.sum(d * d, axis=-1, keepdims=True)) * sample_hz
    if max_rate is not None:
        v = np.minimum(v, max_rate)  # NaN stays NaN
    return v


def angle_delta(
    a: np.ndarray, full_turn: float, max_rate: float | None, sample_hz: float
) -> np.ndarray:
    """Wrapped change of an angle between consecutive ticks, in ``(-turn/2, turn/2]``.

    ``350 -> 5`` degrees is ``+15``, not ``-345``.
    a : ndarray, shape (T, E, 1), in a unit whose full turn is ``full_turn``
    returns : ndarray, shape (T, E, 1), same unit per step
    """
    d = a - _lag(a)
    half = full_turn / 2.0
    w = half - np.mod(half - d, full_turn)  # maps +half to +half, -half to +half
    if max_rate is not None:
        lim = max_rate / sample_hz
        w = np.clip(w, -lim, lim)
    return w


def diff_map(x: np.ndarray) -> np.ndarray:
    """``x[t] - x[t-1]`` per entity and component."""
    return x - _lag(x)


def abs_map(x: np.ndarray) -> np.ndarray:
    return np.abs(x)


def norm_map(x: np.ndarray) -> np.ndarray:
    """Euclidean norm over components: (T, E, D) -> (T, E, 1)."""
    return np.sqrt(np.sum(x * x, axis=-1, keepdims=True))


def bit_map(x: np.ndarray, index: int) -> np.ndarray:
    """Bit ``index`` of an integer-valued field as 0.0/1.0 (NaN stays NaN)."""
    out = np.full_like(x, np.nan)
    ok = ~np.isnan(x)
    out[ok] = (x[ok].astype(np.int64) >> index) & 1
    return out


def agg_entities(x: np.ndarray, how: str) -> np.ndarray:
    """Aggregate over valid entities per tick: (T, E, 1) -> (T, 1, 1); NaN where none is valid.

    ``count`` is the number of valid entities (0, never NaN).
    """
    ok = ~np.isnan(x)
    n = ok.sum(axis=1, keepdims=True)
    if how == "count":
        return n.astype(np.float64)
    if how == "sum":
        out = np.where(n > 0, np.where(ok, x, 0.0).sum(axis=1, keepdims=True), np.nan)
    elif how == "mean":
        s = np.where(ok, x, 0.0).sum(axis=1, keepdims=True)
        out = np.divide(s, n, out=np.full(s.shape, np.nan), where=n > 0)
    elif how == "max":
        out = np.fmax.reduce(x, axis=1, keepdims=True)
    elif how == "min":
        out = np.fmin.reduce(x, axis=1, keepdims=True)
    elif how in ("median", "std"):
        out = np.full((x.shape[0], 1, x.shape[2]), np.nan)
        rows = np.flatnonzero(n[:, 0, 0] > 0)
        for t in rows:  # bounded by T; only used for these two order statistics
            v = x[t, ok[t, :, 0], 0]
            out[t, 0, 0] = np.median(v) if how == "median" else np.std(v)
    else:  # pragma: no cover - guarded by the grammar
        raise ValueError(how)
    return out


def reduce_values(v: np.ndarray, op: str, arg: str | None, discrete: bool) -> float:
    """Reduce the valid samples ``v`` (1-D, no NaN) to one number; NaN when empty.

    ``entropy`` is Shannon entropy in bits (``scipy.stats.entropy`` base 2) of the
    value counts (discrete inputs) or of an ``arg``-bin equal-width histogram
    over ``[min, max]`` of the window (continuous inputs; a constant window is 0).
    Percentiles use numpy's default linear interpolation.
    """
    if v.size == 0:
        return float("nan")
    if op == "mean":
        return float(np.mean(v))
    if op == "std":
        return float(np.std(v))
    if op == "min":
        return float(np.min(v))
    if op == "max":
        return float(np.max(v))
    if op == "median":
        return float(np.median(v))
    if op == "percentile":
        return float(np.percentile(v, float(arg or 0)))
    if op == "entropy":
        if discrete:
            _, counts = np.unique(v, return_counts=True)
        else:
            lo, hi = float(v.min()), float(v.max())
            if hi <= lo:
                return 0.0
            counts, _ = np.histogram(v, bins=int(arg or 0), range=(lo, hi))
        return float(stats.entropy(counts, base=2))
    raise ValueError(op)  # pragma: no cover - guarded by the grammar
