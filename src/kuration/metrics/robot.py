"""Episode-quality metrics for robot demonstrations, as built-in registered metrics.

Each metric is a function of one :class:`~kuration.contracts.buffer.WindowBuffer`
(list it in a strategy's ``registered``); the episode is flagged when any of
its windows is (the ``whole_source`` filter, :mod:`kuration.selection.whole_source`).
They read fields by the names ``kur init`` gives a LeRobot dataset:

* ``state``: joint positions, vector (``observation.state``);
* ``action``: commanded joint positions, vector (``action``);
* ``gripper``: the gripper component, scalar.

A window without the field it needs gives NaN.  Rows where the entity is
absent (dropped frames) are left out, so the signals are the recorded rows in
order, as the peer tools read them; ``gap_fraction`` measures the gaps.
Kernels work on arrays and are public (``ldj``, ``jerk_norms``, ...) so that
they can be tested on their own.
"""

from __future__ import annotations

import numpy as np

from ..contracts.buffer import WindowBuffer
from .features import register_metric

__all__ = [
    "action_state_lag",
    "dead_dims",
    "direction_reversals",
    "hampel_z",
    "jerk_norms",
    "jerk_rms",
    "ldj",
    "longest_repeat",
    "static_fraction",
]

#: a step with every component changing by at most this share of the component's
#: spread over the window (or 1e-6 in its unit, whichever is larger) is static
STATIC_REL = 1e-3
STATIC_ABS = 1e-6
#: gripper moves smaller than this share of its spread over the window are not reversals
CHATTER_DEADBAND = 0.02
#: running-median width of the spike score, samples (glitches up to 3 samples long stand out)
HAMPEL_WIDTH = 7
#: the spike score's scale is at least this share of the component's spread
SPIKE_FLOOR = 0.01
#: largest lag searched by ``action_state_lag_s``, seconds
MAX_LAG_S = 1.0


def _rows(buf: WindowBuffer, name: str) -> np.ndarray | None:
    """The field's recorded rows, shape (N, D), float64; None when the schema lacks it."""
    if name not in buf.values:
        return None
    x = buf.values[name][:, 0, :]
    ok = buf.present[:, 0] & np.isfinite(x).all(axis=1)
    return x[ok]


def ldj(x: np.ndarray, hz: float) -> float:
    """Log dimensionless jerk of a position trajectory (its velocity vector).

    ``LDJ = -ln((T**3 / v_peak**2) * integral ||d2v/dt2||**2 dt)`` with ``T`` the
    duration ``N / hz``, ``v`` the velocity (first differences times ``hz``),
    ``v_peak`` its largest norm and the integral a sum of squared third differences
    (times ``hz**3``) over ``hz``.  Dimensionless jerk is Hogan and Sternad (2009);
    its log, computed from the velocity vector, Balasubramanian et al. (2012,
    2015).  This is the position-vector form rdq uses, not the scalar-speed form of
    deepen-grade.  Higher (less negative) is smoother.

    Parameters
    ----------
    x : ndarray, shape (N, D)
        Positions in one unit, rows at ``1 / hz`` seconds.
    hz : float

    Returns
    -------
    float
        NaN for fewer than 8 rows or no motion.
    """
    if len(x) < 8:
        return float("nan")
    vel = np.diff(x, axis=0) * hz
    jerk = np.diff(vel, n=2, axis=0) * hz * hz
    vpeak = float(np.linalg.norm(vel, axis=1).max())
    if vpeak < 1e-9:
        return float("nan")
    dur = len(x) / hz
    integral = float((np.linalg.norm(jerk, axis=1) ** 2).sum()) / hz
    return -float(np.log(dur**3 / vpeak**2 * integral + 1e-12))


def jerk_norms(x: np.ndarray, hz: float) -> np.ndarray:
    """Norm of the jerk at each step, shape (N - 3,), in the position unit per s**3
    (third differences times ``hz**3``)."""
    if len(x) < 4:
        return np.zeros(0)
    return np.linalg.norm(np.diff(x, n=3, axis=0) * hz**3, axis=1)


def jerk_rms(x: np.ndarray, hz: float) -> float:
    """Root mean square of every component's jerk, in the unit per s**3: third differences
    times ``hz**3``, squared and averaged over steps and components (robovet's
    ``jerk_rms`` of the action stream, its smoothness signal); NaN for fewer than 4 rows."""
    if len(x) < 4:
        return float("nan")
    return float(np.sqrt(np.mean((np.diff(x, n=3, axis=0) * hz**3) ** 2)))


def longest_repeat(x: np.ndarray) -> int:
    """The longest run of consecutive rows that each equal the row before them exactly
    (every component); 0 for fewer than 2 rows.  lerobot-doctor calls such a run of the
    action stream frozen."""
    if len(x) < 2:
        return 0
    same = np.concatenate([[False], np.all(x[1:] == x[:-1], axis=1), [False]])
    edges = np.flatnonzero(np.diff(same.astype(np.int8)))
    return int((edges[1::2] - edges[::2]).max()) if edges.size else 0


def static_fraction(x: np.ndarray) -> float:
    """Share of steps where no component moves: ``|dx_j| <= max(STATIC_ABS, STATIC_REL *
    spread_j)`` for every ``j`` (``spread_j``: the component's max - min over the rows);
    NaN for fewer than 2 rows."""
    if len(x) < 2:
        return float("nan")
    tol = np.maximum(STATIC_ABS, STATIC_REL * (x.max(axis=0) - x.min(axis=0)))
    return float(np.mean(np.all(np.abs(np.diff(x, axis=0)) <= tol, axis=1)))


def direction_reversals(g: np.ndarray) -> int:
    """Times a scalar signal turns back: sign changes between consecutive moves larger
    than ``CHATTER_DEADBAND`` of its spread (smaller moves are held, not counted)."""
    if len(g) < 3:
        return 0
    d = np.diff(g)
    band = CHATTER_DEADBAND * float(g.max() - g.min())
    s = np.sign(d[np.abs(d) > max(band, 1e-12)])
    return int(np.count_nonzero(s[1:] != s[:-1]))


def action_state_lag(a: np.ndarray, s: np.ndarray, max_lag: int) -> int | None:
    """Steps by which the state follows the action: the lag in ``[-max_lag, max_lag]``
    that maximises the cross-correlation of their mean-removed first differences, summed
    over components (:func:`scipy.signal.correlate`).  Negative when the state leads
    (an action stream written late); None when either does not move or is too short."""
    da, ds = np.diff(a, axis=0), np.diff(s, axis=0)
    da, ds = da - da.mean(axis=0), ds - ds.mean(axis=0)
    if len(da) <= max_lag or not (np.abs(da).sum() and np.abs(ds).sum()):
        return None
    from scipy import signal  # lazy: scipy.signal costs ~0.4 s to import (kur run start-up)

    cc = sum(signal.correlate(ds[:, j], da[:, j], mode="full") for j in range(da.shape[1]))
    zero = len(da) - 1  # index of lag 0 in the full correlation
    return int(np.argmax(cc[zero - max_lag : zero + max_lag + 1])) - max_lag


def dead_dims(x: np.ndarray) -> int:
    """Components that never change over the rows (max - min <= 1e-9)."""
    if len(x) < 2:
        return 0
    return int(np.count_nonzero(x.max(axis=0) - x.min(axis=0) <= 1e-9))


def hampel_z(x: np.ndarray, width: int = HAMPEL_WIDTH) -> np.ndarray:
    """Spike scores per sample and component, shape (N, D): the distance of ``x`` from its
    running median over ``width`` samples, over a robust scale of those distances
    (``1.4826 * MAD``, floored at ``SPIKE_FLOOR`` of the component's spread and at its
    resolution, the smallest non-zero step: a one-quantum flip of quantised data is not a
    spike) -- the Hampel identifier (Hampel 1974; Pearson 2002).  A running median follows ramps and
    steps, so only excursions shorter than ``width / 2`` samples stand out."""
    from scipy import ndimage  # lazy, like scipy.signal above

    med = ndimage.median_filter(x, size=(width, 1), mode="nearest")
    r = np.abs(x - med)
    mad = 1.4826 * np.median(r, axis=0)
    floor = np.maximum(SPIKE_FLOOR * (x.max(axis=0) - x.min(axis=0)), _resolution(x))
    return r / np.maximum(np.maximum(mad, floor), 1e-12)


def _resolution(x: np.ndarray) -> np.ndarray:
    """Per component, the smallest non-zero step between consecutive samples (the
    quantum of quantised data; tiny for continuous data), 0 where none moves."""
    d = np.abs(np.diff(x, axis=0))
    d = np.where(d > 0, d, np.inf)
    out = d.min(axis=0) if len(d) else np.zeros(x.shape[1])
    return np.where(np.isfinite(out), out, 0.0)


def _vec(buf: WindowBuffer, name: str, fn, *args) -> float:
    x = _rows(buf, name)
    return float("nan") if x is None else float(fn(x, *args))


@register_metric("ldj_state")
def ldj_state(buf: WindowBuffer) -> float:
    """:func:`ldj` of the ``state`` field (dimensionless)."""
    return _vec(buf, "state", ldj, buf.sample_hz)


@register_metric("jerk_p50_state")
def jerk_p50_state(buf: WindowBuffer) -> float:
    """Median jerk norm of ``state`` (unit/s**3; huggingface/lerobot#3760 asks for it)."""
    x = _rows(buf, "state")
    j = np.zeros(0) if x is None else jerk_norms(x, buf.sample_hz)
    return float(np.median(j)) if j.size else float("nan")


@register_metric("jerk_p95_state")
def jerk_p95_state(buf: WindowBuffer) -> float:
    """95th percentile of the jerk norm of ``state`` (unit/s**3)."""
    x = _rows(buf, "state")
    j = np.zeros(0) if x is None else jerk_norms(x, buf.sample_hz)
    return float(np.percentile(j, 95)) if j.size else float("nan")


@register_metric("jerk_rms_action")
def jerk_rms_action(buf: WindowBuffer) -> float:
    """:func:`jerk_rms` of the ``action`` field (unit/s**3)."""
    return _vec(buf, "action", jerk_rms, buf.sample_hz)


@register_metric("frozen_run_action")
def frozen_run_action(buf: WindowBuffer) -> float:
    """:func:`longest_repeat` of the ``action`` field over its recorded rows, in [0, 1)
    (lerobot-doctor's "consecutive identical actions" share of an episode)."""
    a = _rows(buf, "action")
    if a is None or len(a) < 2:
        return float("nan")
    return longest_repeat(a) / len(a)


@register_metric("static_fraction_action")
def static_fraction_action(buf: WindowBuffer) -> float:
    """:func:`static_fraction` of the ``action`` field (idle operator), in [0, 1]."""
    return _vec(buf, "action", static_fraction)


@register_metric("gripper_chatter_hz")
def gripper_chatter_hz(buf: WindowBuffer) -> float:
    """:func:`direction_reversals` of the ``gripper`` field per second of recorded rows."""
    g = _rows(buf, "gripper")
    if g is None or len(g) < 2:
        return float("nan")
    return direction_reversals(g[:, 0]) * buf.sample_hz / (len(g) - 1)


@register_metric("action_state_lag_s")
def action_state_lag_s(buf: WindowBuffer) -> float:
    """:func:`action_state_lag` of ``action`` and ``state``, in seconds (within
    ``+-MAX_LAG_S``; negative: the state leads); NaN when either is missing or still."""
    a, s = _rows(buf, "action"), _rows(buf, "state")
    if a is None or s is None or a.shape != s.shape:
        return float("nan")
    lag = action_state_lag(a, s, round(MAX_LAG_S * buf.sample_hz))
    return float("nan") if lag is None else lag / buf.sample_hz


@register_metric("dead_dims_state")
def dead_dims_state(buf: WindowBuffer) -> float:
    """:func:`dead_dims` of ``state``: components stuck at one value over the window."""
    return _vec(buf, "state", dead_dims)


@register_metric("spike_z_state")
def spike_z_state(buf: WindowBuffer) -> float:
    """Largest :func:`hampel_z` of any ``state`` component over the window (a spike or a
    glitch of a few frames scores far above smooth motion, ramps and steps)."""
    x = _rows(buf, "state")
    if x is None or len(x) < HAMPEL_WIDTH:
        return float("nan")
    return float(hampel_z(x).max())


@register_metric("gap_fraction")
def gap_fraction(buf: WindowBuffer) -> float:
    """Share of the window's ticks at which the entity is absent (dropped frames, gaps in
    the timestamps), in [0, 1]."""
    return float(1.0 - buf.present[:, 0].mean()) if buf.n_steps else float("nan")
