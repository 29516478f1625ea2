"""Equal-frequency (quantile) binning of segments.

Rules
-----
* Edges are the ``1/n, 2/n, ..., (n-1)/n`` quantiles of the finite values of
  an axis (numpy's default linear interpolation), fitted on the *fit pool*
  (by default every segment; the selection engine fits on the segments that
  pass the strategy's filters) and then applied to every segment.
* Duplicated edges collapse, so heavy ties and a constant feature share one
  bin instead of being split arbitrarily; an axis may therefore end up with
  fewer than ``n`` bins (``len(edges) + 1`` of them).
* A value equal to an edge goes to the *lower* bin (``searchsorted`` with
  ``side="left"``), so a constant feature lands in bin 0 and a tie sitting
  on a quantile stays with the values below it.
* A NaN or infinite value gets coordinate ``-1`` on that axis; so does every
  value of an axis whose fit pool has no finite value.

Coordinates are stored in ``Segment.bin`` (one int per axis).  Binning is a
global reduction, one ``searchsorted`` per axis, and is not parallelised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..contracts.segment import Segment
from ..errors import StrategyError

__all__ = ["bin_segments", "feature_matrix", "joint_bins", "quantile_bins"]


def quantile_bins(
    values: np.ndarray, n_bins: int, *, fit: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-frequency bin coordinates of ``values`` (see the module rules).

    Parameters
    ----------
    values : ndarray, shape (N,), float
    n_bins : int
        Requested bins (at least 1); ties may leave fewer.
    fit : ndarray, shape (N,), bool, optional
        Which values the edges are fitted on (default: all).

    Returns
    -------
    coords : ndarray, shape (N,), int64
        ``0 .. len(edges)``, or -1 for non-finite values.
    edges : ndarray, shape (B - 1,), float64
        The deduplicated interior edges.

    Raises
    ------
    StrategyError
        If ``n_bins`` is below 1.

    Examples
    --------
    >>> quantile_bins(np.array([1.0, 2.0, 3.0, 4.0]), 2)[0].tolist()
    [0, 0, 1, 1]
    >>> quantile_bins(np.array([5.0, 5.0, np.nan]), 4)[0].tolist()
    [0, 0, -1]
    """
    if int(n_bins) < 1:
        raise StrategyError(f"n_bins must be at least 1, got {n_bins!r}")
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    coords = np.full(values.shape, -1, dtype=np.int64)
    pool = finite if fit is None else finite & np.asarray(fit, dtype=bool)
    if not pool.any():
        return coords, np.zeros(0)
    qs = np.linspace(0.0, 1.0, int(n_bins) + 1)[1:-1]
    edges = np.unique(np.quantile(values[pool], qs)) if qs.size else np.zeros(0)
    coords[finite] = np.searchsorted(edges, values[finite], side="left")
    return coords, edges


def feature_matrix(segments: Sequence[Segment], names: Sequence[str]) -> np.ndarray:
    """Features ``names`` of ``segments`` as an array of shape (N, F), float64.

    Raises
    ------
    StrategyError
        If a segment lacks one of the features.
    """
    out = np.empty((len(segments), len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        try:
            out[:, j] = [s.features[name] for s in segments]
        except KeyError:
            raise StrategyError(f"{name!r} is not a feature of the scored segments") from None
    return out


def bin_segments(
    segments: Sequence[Segment],
    axes: Sequence[str],
    n_bins: int | Sequence[int],
    *,
    fit: np.ndarray | None = None,
) -> dict[str, list[float]]:
    """Set ``seg.bin`` for every segment (in place) and return the interior edges per axis.

    Parameters
    ----------
    segments : sequence of Segment
    axes : sequence of str
        Feature names, one binning axis each.
    n_bins : int or sequence of int
        One count for every axis, or one per axis.
    fit : ndarray, shape (N,), bool, optional
        Segments the edges are fitted on (default: all).

    Raises
    ------
    StrategyError
        If an axis is not a feature of the segments or ``n_bins`` does not match ``axes``.
    """
    counts = [n_bins] * len(axes) if isinstance(n_bins, int) else [int(b) for b in n_bins]
    if len(counts) != len(axes):
        raise StrategyError("n_bins must be one integer or one per axis")
    vals = feature_matrix(segments, axes)
    cols = np.empty((len(segments), len(axes)), dtype=np.int64)
    edges: dict[str, list[float]] = {}
    for j, (ax, nb) in enumerate(zip(axes, counts, strict=True)):
        cols[:, j], e = quantile_bins(vals[:, j], int(nb), fit=fit)
        edges[ax] = [float(x) for x in e]
    for seg, row in zip(segments, cols.tolist(), strict=True):
        seg.bin = tuple(row)
    return edges


def joint_bins(segments: Sequence[Segment]) -> tuple[np.ndarray, np.ndarray]:
    """Joint bin of every segment: ``(cells, index)``.

    Returns
    -------
    cells : ndarray, shape (C, A), int64
        The distinct bin coordinate tuples, sorted lexicographically.
    index : ndarray, shape (N,), int64
        Row of ``cells`` for each segment.

    Raises
    ------
    StrategyError
        If a segment has not been binned.
    """
    if any(s.bin is None for s in segments):
        raise StrategyError("segments are not binned (the strategy has no bin axes)")
    n = len(segments)
    width = len(segments[0].bin or ()) if n else 0
    coords = np.array([s.bin for s in segments], dtype=np.int64).reshape(n, width)
    if n == 0:
        return coords, np.zeros(0, dtype=np.int64)
    cells, index = np.unique(coords, axis=0, return_inverse=True)
    return cells, index.reshape(-1).astype(np.int64)
