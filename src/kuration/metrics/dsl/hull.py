"""Convex-hull areas of many planar point sets at once.

:func:`hull_area` runs Andrew's monotone chain on a whole batch of point sets
together: the loop walks the points of the sorted sets in step, and every
operation inside it is a numpy operation over the batch.  There is no Python
loop per set, so the per-tick formation area of a source (one set per tick)
and the trajectory area of every window (one set per window) each cost a
loop over points, not over ticks or windows.

Degenerate sets are not errors: fewer than three distinct points, identical
points or collinear points have area ``0.0``.  A set with no valid point has
area NaN.

Reference: A. M. Andrew, "Another efficient algorithm for convex hulls in two
dimensions", Information Processing Letters 9 (1979) 216-219; the prefilter is
S. G. Akl and G. T. Toussaint, "A fast convex hull algorithm", Information
Processing Letters 7 (1978) 219-222.
"""

from __future__ import annotations

import numpy as np

__all__ = ["hull_area"]


def _prefilter(x: np.ndarray, y: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Drop points strictly inside the octagon spanned by the extreme points in eight
    directions (Akl-Toussaint): they cannot be hull vertices.  Returns the kept mask."""
    rows = np.arange(x.shape[0])
    # missing points sit on a valid one: they can tie with it but never widen the octagon
    first = np.argmax(ok, axis=1)
    x = np.where(ok, x, x[rows, first][:, None])
    y = np.where(ok, y, y[rows, first][:, None])
    s, d = x + y, y - x

    # extreme points for outward directions in counter-clockwise order:
    # +x, +x+y, +y, -x+y, -x, -x-y, -y, +x-y
    # picked among valid points only: a tie must not pick a missing slot, which would
    # leave every valid point "inside" (identical points after a missing first one)
    def top(v: np.ndarray) -> np.ndarray:
        return np.argmax(np.where(ok, v, -np.inf), axis=1)

    def bottom(v: np.ndarray) -> np.ndarray:
        return np.argmin(np.where(ok, v, np.inf), axis=1)

    picks = [top(x), top(s), top(y), top(d), bottom(x), bottom(s), bottom(y), bottom(d)]
    px = np.stack([x[rows, i] for i in picks], axis=1)  # (B, 8)
    py = np.stack([y[rows, i] for i in picks], axis=1)
    inside = np.ones(x.shape, dtype=bool)
    for a in range(8):
        b = (a + 1) % 8
        ex = (px[:, b] - px[:, a])[:, None]
        ey = (py[:, b] - py[:, a])[:, None]
        # strictly left of edge a -> b: ex * y - ey * x > ex * ay - ey * ax
        c = ex * py[:, a, None] - ey * px[:, a, None]
        c = np.where((ex == 0) & (ey == 0), -np.inf, c)  # a repeated vertex is no edge
        lhs = ex * y
        lhs -= ey * x
        inside &= lhs > c
    for i in picks:  # the extreme points themselves always stay
        inside[rows, i] = False
    return ok & ~inside


def _chain(xs: np.ndarray, ys: np.ndarray, n: np.ndarray, reverse: bool) -> np.ndarray:
    """Twice the signed area swept by the lower (or, reversed, upper) hull chain of every
    row of the sorted points; rows hold ``n`` valid points first."""
    b, m = xs.shape
    rows = np.arange(b)
    stack = np.zeros((b, m), dtype=np.intp)
    top = np.zeros(b, dtype=np.intp)
    for step in range(int(n.max())):
        act = step < n
        k = np.where(act, (n - 1 - step) if reverse else step, 0)
        px, py = xs[rows, k], ys[rows, k]
        while True:
            can = act & (top >= 2)
            if not can.any():
                break
            i1 = stack[rows, np.maximum(top - 2, 0)]
            i2 = stack[rows, np.maximum(top - 1, 0)]
            ax, ay = xs[rows, i1], ys[rows, i1]
            cross = (xs[rows, i2] - ax) * (py - ay) - (ys[rows, i2] - ay) * (px - ax)
            pop = can & (cross <= 0)
            if not pop.any():
                break
            top -= pop
        stack[rows[act], top[act]] = k[act]
        top += act
    cx = np.take_along_axis(xs, stack, axis=1)
    cy = np.take_along_axis(ys, stack, axis=1)
    cross = cx[:, :-1] * cy[:, 1:] - cx[:, 1:] * cy[:, :-1]
    edge = np.arange(m - 1)[None, :] < (top - 1)[:, None]
    return np.where(edge, cross, 0.0).sum(axis=1)


def hull_area(points: np.ndarray, *, prefilter: bool = False) -> np.ndarray:
    """Area of the convex hull of each point set.

    Parameters
    ----------
    points : ndarray, shape (B, M, 2), float
        ``B`` sets of up to ``M`` planar points; a point with a NaN coordinate is absent.
    prefilter : bool
        Discard points inside the octagon of extreme points first (worth it for
        large sets, such as every sample of a window).

    Returns
    -------
    ndarray, shape (B,), float64
        Areas in the squared unit of ``points``; 0.0 for sets of one or two
        points, identical or collinear points; NaN for an empty set and for a
        set whose coordinates span more than the largest float (overflow).
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 3 or pts.shape[-1] != 2:
        raise ValueError(f"points must have shape (B, M, 2), got {pts.shape}")
    ok = ~np.asarray(np.isnan(pts).any(axis=-1))
    n = ok.sum(axis=1)
    area = np.where(n > 0, 0.0, np.nan)
    sel = np.flatnonzero(n >= 3)
    if sel.size == 0:
        return area
    p, ok = pts[sel], ok[sel]
    # centre each set for conditioning (every valid point, so the result is roster-independent);
    # summing p / n cannot overflow where the sum of p would
    cnt = ok.sum(axis=1)
    ref = np.where(ok[..., None], p / cnt[:, None, None], 0.0).sum(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        x = p[..., 0] - ref[:, :1]
        y = p[..., 1] - ref[:, 1:]
    # a set whose centred coordinates overflow has no finite area: NaN, not computed
    wide = (ok & ~(np.isfinite(x) & np.isfinite(y))).any(axis=1)
    if wide.any():
        area[sel[wide]] = np.nan
        sel, p, ok, x, y = sel[~wide], p[~wide], ok[~wide], x[~wide], y[~wide]
        if sel.size == 0:
            return area
    if prefilter:
        ok = _prefilter(np.where(ok, x, 0.0), np.where(ok, y, 0.0), ok)
    cnt = ok.sum(axis=1)
    width = int(cnt.max())
    # valid points first, sorted by (x, y); absent points last
    x = np.where(ok, x, np.inf)
    y = np.where(ok, y, np.inf)
    order = np.lexsort((y, x), axis=1)[:, :width]
    xs = np.take_along_axis(x, order, axis=1)
    ys = np.take_along_axis(y, order, axis=1)
    # the lower chain only visits points on or below the line from the leftmost to the
    # rightmost point, the upper chain those on or above it: each walks about half the set
    rows = np.arange(xs.shape[0])
    last = np.maximum(cnt - 1, 0)
    lx, ly = xs[:, :1], ys[:, :1]
    rx, ry = xs[rows, last][:, None], ys[rows, last][:, None]
    inside = np.arange(width)[None, :] < cnt[:, None]
    dx = np.where(inside, xs - lx, 0.0)
    dy = np.where(inside, ys - ly, 0.0)
    side = (rx - lx) * dy - (ry - ly) * dx
    twice = _chain(*_compact(xs, ys, inside & (side <= 0)), reverse=False)
    twice += _chain(*_compact(xs, ys, inside & (side >= 0)), reverse=True)
    area[sel] = 0.5 * np.abs(twice)
    return area


def _compact(
    xs: np.ndarray, ys: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kept points of each row moved to the front, order preserved, and their counts."""
    n = keep.sum(axis=1)
    order = np.argsort(~keep, axis=1, kind="stable")[:, : max(int(n.max()), 1)]
    return np.take_along_axis(xs, order, axis=1), np.take_along_axis(ys, order, axis=1), n
