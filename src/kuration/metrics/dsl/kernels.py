"""Numeric kernels of the metric grammar's maps, filters and entity aggregations.

Every array is float64 ``(..., T, E, D)`` -- time on axis -3, entities on
axis -2, components last, any leading axes (the window axis) carried along --
with NaN marking a missing sample; a vector sample with any NaN component is
missing as a whole.  Step maps pair tick ``t`` with tick ``t - 1`` of the
*same* entity and are missing unless both are present, so an entity's gap is
never bridged and two entities never mix.  Kernels never write into their
inputs (which are often read-only strided views).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "GeoPairs",
    "abs_map",
    "agg_entities",
    "angle_delta",
    "bit_map",
    "clamp_speed",
    "clamp_velocity",
    "diff_map",
    "dist_to",
    "floor_mod",
    "formation_area",
    "formation_speed",
    "formation_spread",
    "geodetic_heading",
    "geodetic_pairs",
    "geodetic_speed",
    "geodetic_to_ecef",
    "heading",
    "lag",
    "nn_dist",
    "norm_map",
    "planar",
    "speed",
    "step_diff",
    "step_velocity",
    "velocity",
]

_NAN = np.nan


def lag(x: np.ndarray, k: int = 1, axis: int = -3) -> np.ndarray:
    """``x[t - k]`` aligned to ``t`` along ``axis`` (NaN for the first ``k`` ticks)."""
    out = np.full(x.shape, _NAN)
    n = x.shape[axis]
    if k < n:
        dst = [slice(None)] * x.ndim
        src = [slice(None)] * x.ndim
        dst[axis] = slice(k, None)
        src[axis] = slice(None, n - k)
        out[tuple(dst)] = x[tuple(src)]
    return out


def step_diff(x: np.ndarray) -> np.ndarray:
    """``x[t] - x[t-1]`` along the time axis (-3), NaN at the first tick."""
    out = np.full(x.shape, _NAN)
    if x.shape[-3] > 1:
        np.subtract(x[..., 1:, :, :], x[..., :-1, :, :], out=out[..., 1:, :, :])
    return out


def _norm(x: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis, keepdims."""
    acc = x[..., 0:1] * x[..., 0:1]
    for d in range(1, x.shape[-1]):
        acc = acc + x[..., d : d + 1] * x[..., d : d + 1]
    return np.sqrt(acc)


#: degrees to radians: ``np.radians(x)`` is ``x * (pi / 180)`` in numpy's C loop, the
#: same product (``test_kernels_geodetic.py`` checks the bits)
_RADIANS = np.pi / 180.0

# WGS84 (NIMA TR8350.2): semi-major axis and first eccentricity squared
_WGS84_A = 6378137.0
_WGS84_F = 1.0 / 298.257223563
_WGS84_E2 = _WGS84_F * (2.0 - _WGS84_F)


def geodetic_to_ecef(pos: np.ndarray, alt_factor: float | None) -> np.ndarray:
    """WGS84 latitude/longitude(/altitude) to Earth-centred Earth-fixed metres.

    The closed form of ``pymap3d.geodetic2ecef``, with each sine and cosine
    taken once: ``N = a / sqrt(1 - e^2 sin^2(lat))``, ``x = (N + h) cos(lat)
    cos(lon)``, ``y = (N + h) cos(lat) sin(lon)``, ``z = (N (1 - e^2) + h) sin(lat)``.
    A tick grid is mostly absent entities (NaN): the valid samples are gathered
    once and converted together, then scattered back (each element's value is
    the same ufuncs', so the result does not depend on how many are missing).

    Parameters
    ----------
    pos : ndarray, shape (..., 2 or 3)
        Latitude and longitude in degrees, then the altitude in its own unit.
    alt_factor : float or None
        Altitude unit to metres (None: the surface).

    Returns
    -------
    ndarray, shape (..., 3), float64, metres
        NaN where a used component is NaN.
    """
    use_alt = pos.shape[-1] == 3 and alt_factor is not None
    dims = 3 if use_alt else 2
    nan = np.isnan(pos if pos.shape[-1] == dims else pos[..., :dims])
    bad = nan[..., 0]
    if any(not np.array_equal(nan[..., j], bad) for j in range(1, dims)):  # a partly missing sample
        return _geodetic_elementwise(pos, alt_factor)
    idx = np.flatnonzero(~bad)
    flat = pos.reshape(-1, pos.shape[-1])
    lat, lon = flat[idx, 0], flat[idx, 1]
    h = flat[idx, 2] * alt_factor if use_alt else None
    out = np.full((3, bad.size), np.nan)
    for j, comp in enumerate(_ecef(lat, lon, h)):
        out[j][idx] = comp
    return np.moveaxis(out.reshape(3, *pos.shape[:-1]), 0, -1)


def _ecef(
    lat_deg: np.ndarray, lon_deg: np.ndarray, h: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K,) degrees (and metres) -> x, y, z (K,) ECEF metres, with the formula's operations
    in the order :func:`geodetic_to_ecef` documents."""
    x, y, z = _ecef_trig(lat_deg, lon_deg, h)[:3]
    return x, y, z


def _ecef_trig(
    lat_deg: np.ndarray, lon_deg: np.ndarray, h: np.ndarray | None
) -> tuple[np.ndarray, ...]:
    """:func:`_ecef`'s x, y, z, then the sin and cos of the latitude and longitude it
    took (K,): a local east/north frame at the same points needs no more trigonometry."""
    lat = lat_deg * _RADIANS  # np.radians' own formula, without its slower loop
    lon = lon_deg * _RADIANS
    slat, clat = np.sin(lat), np.cos(lat)
    # _WGS84_A / sqrt(1 - E2 * slat * slat), each operation in place in one buffer
    n = np.multiply(slat, _WGS84_E2)
    n *= slat
    np.subtract(1.0, n, out=n)
    np.sqrt(n, out=n)
    np.divide(_WGS84_A, n, out=n)
    if h is not None:
        r = (n + h) * clat
        z = (n * (1.0 - _WGS84_E2) + h) * slat
    else:
        r = n * clat
        z = (n * (1.0 - _WGS84_E2)) * slat
    slon, clon = np.sin(lon), np.cos(lon)
    return r * clon, r * slon, z, slat, clat, slon, clon


def _geodetic_elementwise(pos: np.ndarray, alt_factor: float | None) -> np.ndarray:
    """:func:`geodetic_to_ecef` on every element, NaN propagating per component."""
    lat = np.radians(pos[..., 0])
    lon = np.radians(pos[..., 1])
    slat, clat = _sincos(lat)
    n = _WGS84_A / np.sqrt(1.0 - _WGS84_E2 * slat * slat)
    out = np.empty((*pos.shape[:-1], 3))
    if pos.shape[-1] == 3 and alt_factor is not None:
        h = pos[..., 2] * alt_factor
        r = (n + h) * clat
        np.multiply(n * (1.0 - _WGS84_E2) + h, slat, out=out[..., 2])
    else:
        r = n * clat
        np.multiply(n * (1.0 - _WGS84_E2), slat, out=out[..., 2])
    slon, clon = _sincos(lon)
    np.multiply(r, clon, out=out[..., 0])
    np.multiply(r, slon, out=out[..., 1])
    return out


def _sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.sin(x), np.cos(x)``, evaluated on the non-NaN elements only."""
    ok = ~np.isnan(x)
    if ok.all():
        return np.sin(x), np.cos(x)
    sub = x[ok]
    s = np.full(x.shape, np.nan)
    c = np.full(x.shape, np.nan)
    s[ok] = np.sin(sub)
    c[ok] = np.cos(sub)
    return s, c


def velocity(
    pos_m: np.ndarray, sample_hz: float, max_rate: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Velocity vectors and speeds between consecutive ticks.

    The velocity is ``(p[t] - p[t-1]) * sample_hz``; a velocity faster than
    ``max_rate`` is scaled down to it (the outlier clamp), so accelerations
    taken from it are clamped too.

    Parameters
    ----------
    pos_m : ndarray, shape (..., T, E, D), metres

    Returns
    -------
    vel : ndarray, shape (..., T, E, D), float64, m/s (clamped)
    speed : ndarray, shape (..., T, E, 1), float64, m/s, ``min(|v|, max_rate)``
    """
    v, mag = step_velocity(pos_m, sample_hz)
    return clamp_velocity(v, mag, max_rate), clamp_speed(mag, max_rate)


def step_velocity(pos_m: np.ndarray, sample_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Unclamped velocity ``(p[t] - p[t-1]) * sample_hz`` (..., T, E, D) and its norm
    (..., T, E, 1), m/s: what :func:`velocity` clamps."""
    v = step_diff(pos_m) * sample_hz
    return v, _norm(v)


def clamp_speed(mag: np.ndarray, max_rate: float | None) -> np.ndarray:
    """``min(|v|, max_rate)`` (the speed of :func:`velocity`), m/s."""
    return mag if max_rate is None else np.minimum(mag, max_rate)


def clamp_velocity(v: np.ndarray, mag: np.ndarray, max_rate: float | None) -> np.ndarray:
    """``v`` scaled down to ``max_rate`` where faster (the velocity of :func:`velocity`), m/s."""
    if max_rate is None:
        return v
    scale = np.ones(mag.shape)
    np.divide(max_rate, mag, out=scale, where=mag > max_rate)
    return v * scale


def speed(pos_m: np.ndarray, sample_hz: float, max_rate: float | None) -> np.ndarray:
    """``min(|p[t] - p[t-1]| * sample_hz, max_rate)``: (..., T, E, D) metres -> (..., T, E, 1) m/s."""
    return clamp_speed(step_velocity(pos_m, sample_hz)[1], max_rate)


@dataclass(frozen=True)
class GeoPairs:
    """A geodetic grid's valid samples in ECEF and the pairs of an entity's consecutive
    valid ticks: what :func:`geodetic_speed` and :func:`geodetic_heading` share, so a
    program that asks for both converts the positions once.

    Attributes
    ----------
    shape : (T, E)
    cur : ndarray, shape (P,), int64
        Flat cell (``t * E + e``) of each pair's later tick.
    ci, pi : ndarray, shape (P,), int64
        Each pair's later and earlier tick among the valid samples.
    ecef : tuple of three ndarray, shape (K,), float64, metres
        x, y, z of the K valid samples (:func:`_ecef`).
    trig : tuple of four ndarray, shape (K,), float64
        sin and cos of their latitude, then of their longitude.
    """

    shape: tuple[int, int]
    cur: np.ndarray
    ci: np.ndarray
    pi: np.ndarray
    ecef: tuple[np.ndarray, ...]
    trig: tuple[np.ndarray, ...]


def geodetic_pairs(pos: np.ndarray, alt_factor: float | None) -> GeoPairs | None:
    """The :class:`GeoPairs` of ``pos`` (T, E, 2 or 3), degrees (and the altitude unit);
    None where the valid-pair path does not apply (another rank, or a sample with only some
    coordinates missing): the callers then take the whole-grid kernels."""
    use_alt = pos.shape[-1] == 3 and alt_factor is not None
    dims = 3 if use_alt else 2
    if pos.ndim != 3:
        return None
    # a NaN test per coordinate into contiguous masks (cheaper than comparing strided
    # views of one mask of the whole array)
    bad = np.isnan(pos[..., 0])
    if any((np.isnan(pos[..., j]) != bad).any() for j in range(1, dims)):
        return None
    n_t, n_e = bad.shape
    ok = ~bad.reshape(-1)
    cur = np.flatnonzero(ok[n_e:] & ok[:-n_e]) + n_e  # valid cells whose previous tick is too
    idx = np.flatnonzero(ok)
    # index of each valid cell among the valid ones, by scatter: a bool cumsum is 10x slower
    slot = np.empty(ok.size, dtype=np.intp)
    slot[idx] = np.arange(idx.size, dtype=np.intp)
    flat = pos.reshape(-1, pos.shape[-1])
    h = flat[:, 2][idx] * alt_factor if use_alt else None
    got = _ecef_trig(flat[:, 0][idx], flat[:, 1][idx], h)
    return GeoPairs((n_t, n_e), cur, slot[cur], slot[cur - n_e], got[:3], got[3:])


def geodetic_speed(
    pos: np.ndarray,
    alt_factor: float | None,
    sample_hz: float,
    max_rate: float | None,
    pairs: GeoPairs | None = None,
) -> np.ndarray:
    """:func:`speed` of :func:`geodetic_to_ecef` positions, bit for bit, computed on the
    consecutive valid pairs only.

    A tick grid is mostly absent entities: instead of converting, differencing and
    taking norms over every cell, the valid samples are converted once
    (:func:`geodetic_pairs`), each pair of an entity's consecutive valid ticks is
    differenced and normed with the same ufuncs in the same order as
    :func:`step_velocity` and :func:`clamp_speed`, and the speeds are scattered back.
    A sample with only some coordinates missing takes the whole-grid path.

    Parameters
    ----------
    pos : ndarray, shape (T, E, 2 or 3)
        Latitude and longitude in degrees, then the altitude in its own unit; NaN marks
        a missing sample.
    alt_factor : float or None
        Altitude unit to metres (None: the surface).
    sample_hz : float
    max_rate : float or None
        The speed clamp, m/s.
    pairs : GeoPairs, optional
        ``geodetic_pairs(pos, alt_factor)`` when the caller has it already.

    Returns
    -------
    ndarray, shape (T, E, 1), float64, m/s
        NaN at the first tick and wherever a tick or its predecessor is missing.
    """
    if pairs is None:
        pairs = geodetic_pairs(pos, alt_factor)
    if pairs is None:
        return speed(geodetic_to_ecef(pos, alt_factor), sample_hz, max_rate)
    n_t, n_e = pairs.shape
    out = np.full((n_t * n_e, 1), _NAN)
    if pairs.cur.size == 0:
        return out.reshape(n_t, n_e, 1)
    # step_velocity's difference, then its norm: the same operations in the same order,
    # in place (a product by 1.0 is the identity, so a 1 Hz grid skips it)
    acc = np.zeros(0)
    for j, comp in enumerate(pairs.ecef):
        d = comp[pairs.ci]
        d -= comp[pairs.pi]
        if sample_hz != 1.0:
            d *= sample_hz
        d *= d
        if j:
            acc += d
        else:
            acc = d
    out[pairs.cur, 0] = clamp_speed(np.sqrt(acc, out=acc), max_rate)
    return out.reshape(n_t, n_e, 1)


def geodetic_heading(pairs: GeoPairs) -> np.ndarray:
    """:func:`heading` of geodetic positions, bit for bit, on the valid pairs only.

    The displacement of each pair is the difference of its ECEF samples
    (:func:`step_diff`'s subtraction); it is projected on the east/north plane of the
    earlier tick with ``pymap3d.ecef2enuv``'s operations in its order,
    ``east = -sin(lon0) dx + cos(lon0) dy``, ``north = -sin(lat0) (cos(lon0) dx +
    sin(lon0) dy) + cos(lat0) dz``, reusing the sines and cosines the ECEF conversion
    took at that tick (the same ufuncs on the same radians, so the same bits).

    Returns
    -------
    ndarray, shape (T, E, 1), float64, degrees in ``[0, 360)``
        NaN at the first tick, wherever a tick or its predecessor is missing, and
        where the entity did not move.
    """
    n_t, n_e = pairs.shape
    out = np.full((n_t * n_e, 1), _NAN)
    if pairs.cur.size == 0:
        return out.reshape(n_t, n_e, 1)
    ci, pi = pairs.ci, pairs.pi
    u, v, w = (comp[ci] - comp[pi] for comp in pairs.ecef)
    slat, clat, slon, clon = (t[pi] for t in pairs.trig)
    t = clon * u + slon * v
    east = -slon * u + clon * v
    north = -slat * t + clat * w
    out[pairs.cur, 0] = _bearing(east, north)
    return out.reshape(n_t, n_e, 1)


def _bearing(east: np.ndarray, north: np.ndarray) -> np.ndarray:
    """Clockwise from north in ``[0, 360)`` degrees; NaN for no displacement.

    ``np.mod(a, 360)`` of an ``a`` in ``[-180, 180]`` (``arctan2``'s range) is ``a + 360``
    below zero, ``a`` above, and ``+0.0`` at either zero (numpy's floor modulo): written so,
    with ``a + 0.0`` turning ``-0.0`` into ``+0.0``, it has the same bits at a third of
    the cost."""
    a = np.degrees(np.arctan2(east, north))
    ang = np.where(a < 0.0, a + 360.0, a + 0.0)
    ang = np.where(ang >= 360.0, 0.0, ang)
    return np.where((east != 0) | (north != 0), ang, _NAN)


def heading(pos_m: np.ndarray, latlon: np.ndarray | None) -> np.ndarray:
    """Direction of motion between consecutive ticks, degrees in ``[0, 360)``.

    Geodetic positions (``latlon`` given, degrees): the bearing clockwise from
    true north of the displacement, projected on the local east/north plane of
    the earlier position (``pymap3d.ecef2enuv``).  Cartesian positions: the
    angle of the ``(x, y)`` displacement counter-clockwise from the +x axis.
    No displacement gives NaN.

    Parameters
    ----------
    pos_m : ndarray, shape (..., T, E, D), metres (ECEF for geodetic)
    latlon : ndarray, shape (..., T, E, >=2), degrees, or None

    Returns
    -------
    ndarray, shape (..., T, E, 1), float64, degrees
    """
    d = step_diff(pos_m)
    if latlon is not None:
        import pymap3d  # lazy: only geodetic positions need it (and its dateutil, astropy probes)

        lat0 = lag(latlon[..., 0:1], axis=-3)[..., 0]
        lon0 = lag(latlon[..., 1:2], axis=-3)[..., 0]
        east, north, _ = pymap3d.ecef2enuv(d[..., 0], d[..., 1], d[..., 2], lat0, lon0, deg=True)
        ang = np.degrees(np.arctan2(east, north))
        moving = (east != 0) | (north != 0)
    else:
        ang = np.degrees(np.arctan2(d[..., 1], d[..., 0]))
        moving = (d[..., 0] != 0) | (d[..., 1] != 0)
    ang = np.mod(ang, 360.0)
    ang = np.where(ang >= 360.0, 0.0, ang)
    return np.where(moving, ang, _NAN)[..., None]


def angle_delta(
    a: np.ndarray, full_turn: float, max_rate: float | None, sample_hz: float
) -> np.ndarray:
    """Wrapped change of an angle between consecutive ticks, in ``(-turn/2, turn/2]``.

    ``350 -> 5`` degrees is ``+15``, not ``-345``; a change of exactly half a
    turn is ``+turn/2``.  Clipped to ``max_rate / sample_hz`` per step.

    a : ndarray, shape (..., T, E, 1), in a unit whose full turn is ``full_turn``
    returns : ndarray, shape (..., T, E, 1), same unit per step
    """
    d = step_diff(a)  # a new C-contiguous array: its flat view is itself
    half = full_turn / 2.0
    flat = d.reshape(-1)
    idx = np.flatnonzero(~np.isnan(flat))
    if idx.size == flat.size:
        return _wrap_step(d, half, full_turn, max_rate, sample_hz)
    # a tick grid is mostly absent entities: wrap the defined steps only (same ufuncs),
    # gathered and scattered by index (cheaper than by mask)
    out = np.full(d.shape, _NAN)
    out.reshape(-1)[idx] = _wrap_step(flat[idx], half, full_turn, max_rate, sample_hz)
    return out


def _wrap_step(
    d: np.ndarray, half: float, full_turn: float, max_rate: float | None, sample_hz: float
) -> np.ndarray:
    w = half - floor_mod(half - d, full_turn)
    if max_rate is not None:
        lim = max_rate / sample_hz
        w = np.clip(w, -lim, lim)
    return w


def floor_mod(y: np.ndarray, turn: float) -> np.ndarray:
    """``np.mod(y, turn)`` for a positive ``turn``, bit for bit, at a fraction of its cost.

    numpy's floor modulo is ``fmod`` (exact), then ``+ turn`` where the remainder is
    negative, and ``+0.0`` for a zero remainder of either sign.  For ``-turn < y < turn``
    ``fmod(y, turn)`` is ``y`` itself, so the modulo is ``y + turn`` below zero and
    ``y + 0.0`` (``-0.0`` made ``+0.0``) otherwise; every other element (``|y| >= turn``,
    infinities, NaN) takes ``np.mod``.
    """
    out = np.where(y < 0.0, y + turn, y + 0.0)
    far = ~(np.abs(y) < turn)
    if far.any():
        out[far] = np.mod(y[far], turn)
    return out


def diff_map(x: np.ndarray) -> np.ndarray:
    """``x[t] - x[t-1]`` per entity and component."""
    return step_diff(x)


def abs_map(x: np.ndarray) -> np.ndarray:
    return np.abs(x)


def norm_map(x: np.ndarray) -> np.ndarray:
    """Euclidean norm over components: (..., D) -> (..., 1)."""
    return _norm(x)


def bit_map(x: np.ndarray, index: int) -> np.ndarray:
    """Bit ``index`` of an integer-valued float field as 0.0/1.0 (NaN stays NaN).

    Exact for values below 2**53 (what a float64 holds exactly); bits 53..63 of
    larger values come from :func:`bit_map_exact` on the integers themselves.
    """
    ok = ~np.isnan(x)
    v = np.where(ok, x, 0.0)
    # [2**63, 2**64) as its two's-complement int64 (the subtraction is exact in float64)
    ints = np.where(v >= 2.0**63, v - 2.0**64, v).astype(np.int64)
    return np.where(ok, ((ints >> index) & 1).astype(np.float64), _NAN)


def bit_map_exact(ints: np.ndarray, index: int, valid: np.ndarray) -> np.ndarray:
    """Bit ``index`` (0 = least significant, up to 63) of integers of any integer dtype.

    Parameters
    ----------
    ints : ndarray, shape (..., D), integer
    index : int
        Must be below the dtype's width (checked by the schema and the compiler).
    valid : ndarray, shape (..., D), bool
        False where the value is missing.

    Returns
    -------
    ndarray, shape (..., D), float64
        0.0/1.0, NaN where not valid.  Signed values are read as two's complement.
    """
    width = ints.dtype.itemsize * 8
    as_unsigned = ints.view(np.dtype(f"u{ints.dtype.itemsize}"))
    bit = (as_unsigned >> np.uint64(index) if width == 64 else as_unsigned >> index) & 1
    return np.where(valid, bit.astype(np.float64), _NAN)


# -- distances and formations ---------------------------------------------------------


def _pairwise_sq(p: np.ndarray) -> np.ndarray:
    """Squared distances ``(B, E, E)`` of ``p`` (B, E, D); NaN where either is missing."""
    acc = np.zeros((p.shape[0], p.shape[1], p.shape[1]))
    for d in range(p.shape[-1]):
        c = p[..., d]
        diff = c[:, :, None] - c[:, None, :]
        acc += diff * diff
    return acc


def nn_dist(pos_m: np.ndarray, chunk: int = 1 << 18) -> np.ndarray:
    """Distance of every entity to its nearest other present entity at the same tick.

    pos_m : ndarray, shape (..., T, E, D), metres
    returns : ndarray, shape (..., T, E, 1), float64, metres (NaN alone or missing)
    """
    lead = pos_m.shape[:-2]
    e, dims = pos_m.shape[-2], pos_m.shape[-1]
    if e < 2 or pos_m.size == 0:
        return np.full((*lead, e, 1), _NAN)
    flat = np.ascontiguousarray(pos_m).reshape(-1, e, dims)
    out = np.full(flat.shape[:2], _NAN)
    step = max(1, chunk // (e * e))
    eye = np.eye(e, dtype=bool)
    for s in range(0, flat.shape[0], step):  # bounded chunks of ticks, not one per tick
        d2 = _pairwise_sq(flat[s : s + step])
        d2 = np.where(np.isnan(d2) | eye, np.inf, d2)
        m = d2.min(axis=-1)
        out[s : s + step] = np.sqrt(np.where(np.isinf(m), _NAN, m))
    return out.reshape(*lead, e, 1)


def dist_to(pos_m: np.ndarray, target: int | None) -> np.ndarray:
    """Distance of every entity to entity column ``target`` at the same tick (NaN for the
    target itself, where either is missing, or when the target is not in the source).

    returns : ndarray, shape (..., T, E, 1), float64, metres
    """
    if target is None:
        return np.full((*pos_m.shape[:-1], 1), _NAN)
    d = _norm(pos_m - pos_m[..., target : target + 1, :])
    d[..., target, :] = _NAN
    return d


def _masked_mean(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Mean over entities (axis -2) of ``x`` (..., E, D) where ``ok`` (..., E); NaN if none."""
    n = ok.sum(axis=-1)[..., None]
    s = np.where(ok[..., None], x, 0.0).sum(axis=-2)
    return np.divide(s, n, out=np.full(s.shape, _NAN), where=n > 0)


def formation_spread(pos_m: np.ndarray) -> np.ndarray:
    """Root-mean-square distance of the present entities from their centroid, per tick.

    pos_m : ndarray, shape (..., T, E, D), metres
    returns : ndarray, shape (..., T, 1, 1), float64, metres (0 for one entity)
    """
    ok = ~np.isnan(pos_m[..., 0])
    c = _masked_mean(pos_m, ok)
    dev = pos_m - c[..., None, :]
    sq = np.sum(dev * dev, axis=-1, keepdims=True)
    return np.sqrt(_masked_mean(sq, ok))[..., None, :]


def formation_speed(vel: np.ndarray) -> np.ndarray:
    """Speed of the formation's centroid: the norm of the mean velocity of the entities
    present at both ``t - 1`` and ``t``.

    vel : ndarray, shape (..., T, E, D), m/s
    returns : ndarray, shape (..., T, 1, 1), float64, m/s
    """
    ok = ~np.isnan(vel[..., 0])
    return _norm(_masked_mean(vel, ok))[..., None, :]


def planar(
    pos: np.ndarray,
    ecef: np.ndarray | None,
    factors: np.ndarray | None,
    axis: int | tuple[int, ...],
) -> np.ndarray:
    """Horizontal coordinates in metres, for convex-hull areas.

    Geodetic positions (``ecef`` given) are projected on the local east/north
    plane at the centroid of the present points over ``axis`` of the sample
    grid ``(..., T, E)`` (-1: the entities of a tick; (1, 2): every sample of a
    window); cartesian positions keep their first
    two components, scaled to metres by ``factors``.

    pos : ndarray, shape (..., D), raw field values
    returns : ndarray, shape (..., 2), float64, metres
    """
    if ecef is None:
        scale = np.ones(2) if factors is None else factors[:2]
        return pos[..., :2] * scale
    ok = ~np.isnan(ecef[..., 0])
    axes = tuple(int(a) % ok.ndim for a in np.atleast_1d(axis))  # axes of the mask (..., T, E)
    cnt = ok.sum(axis=axes, keepdims=True)
    ref = np.divide(
        np.where(ok[..., None], ecef, 0.0).sum(axis=axes, keepdims=True),
        cnt[..., None],
        out=np.full((*cnt.shape, 3), _NAN),
        where=cnt[..., None] > 0,
    )
    import pymap3d  # lazy, as above

    lat0, lon0, _ = pymap3d.ecef2geodetic(ref[..., 0], ref[..., 1], ref[..., 2], deg=True)
    d = ecef - ref
    east, north, _ = pymap3d.ecef2enuv(d[..., 0], d[..., 1], d[..., 2], lat0, lon0, deg=True)
    return np.stack([east, north], axis=-1)


def formation_area(xy: np.ndarray) -> np.ndarray:
    """Convex-hull area of the present entities' horizontal positions, per tick.

    xy : ndarray, shape (..., T, E, 2), metres
    returns : ndarray, shape (..., T, 1, 1), float64, square metres (0 for < 3 or collinear)
    """
    from .hull import hull_area

    lead = xy.shape[:-2]
    if xy.shape[-2] == 0 or xy.size == 0:
        return np.full((*lead, 1, 1), _NAN)
    area = hull_area(xy.reshape(-1, xy.shape[-2], 2))
    return area.reshape(*lead, 1, 1)


# -- entity aggregation ---------------------------------------------------------------


def agg_entities(
    x: np.ndarray,
    how: str,
    support: np.ndarray,
    boolean: bool,
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """Aggregate over entities per tick: (..., T, E, 1) -> (..., T, 1, 1).

    Missing samples are ignored; a tick with none is NaN.  ``count`` is the
    number of valid samples (true samples for a boolean), NaN only where
    ``support`` (..., T, E) -- the samples before the latest filters -- is
    empty.  ``any``/``all`` are 1.0/0.0 over the valid samples.  ``counts``
    (..., T), int: the valid samples of each tick when the caller has them, in which
    case ``support`` must be the valid mask itself.
    """
    v = x[..., 0]
    if counts is None:
        ok = ~np.isnan(v)
        n = ok.sum(axis=-1)
    else:
        ok, n = support, counts
    none = n == 0
    if how == "count":
        if counts is not None and not boolean:  # the hits are the support: count it once
            out = np.where(none, _NAN, n.astype(np.float64))
        else:
            hits = (ok & (v != 0)) if boolean else ok
            out = np.where(support.any(axis=-1), hits.sum(axis=-1).astype(np.float64), _NAN)
    elif how in ("sum", "mean", "std"):
        s = np.where(ok, v, 0.0).sum(axis=-1)
        if how == "sum":
            out = np.where(none, _NAN, s)
        else:
            m = np.divide(s, n, out=np.full(s.shape, _NAN), where=~none)
            if how == "mean":
                out = m
            else:
                dev = np.where(ok, v - m[..., None], 0.0)
                out = np.sqrt(
                    np.divide((dev * dev).sum(axis=-1), n, out=np.full(s.shape, _NAN), where=~none)
                )
    elif how in ("max", "any"):
        out = np.fmax.reduce(v, axis=-1) if v.shape[-1] else np.full(n.shape, _NAN)
    elif how in ("min", "all"):
        out = np.fmin.reduce(v, axis=-1) if v.shape[-1] else np.full(n.shape, _NAN)
    elif how == "median":
        if v.shape[-1] == 0:
            out = np.full(n.shape, _NAN)
        else:
            srt = np.sort(v, axis=-1)  # missing samples sort last
            top = v.shape[-1] - 1
            a = np.take_along_axis(srt, np.clip((n - 1) // 2, 0, top)[..., None], axis=-1)
            b = np.take_along_axis(srt, np.clip(n // 2, 0, top)[..., None], axis=-1)
            out = np.where(none, _NAN, (a[..., 0] + b[..., 0]) / 2.0)
    else:  # pragma: no cover - guarded by the grammar
        raise ValueError(how)
    return out[..., None, None]
