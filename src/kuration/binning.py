"""Equal-frequency (quantile) binning of segments.

Rules: edges are the ``1/n .. (n-1)/n`` quantiles of the finite values of an
axis (numpy's linear interpolation); duplicated edges collapse, so ties and a
constant feature share one bin instead of being split arbitrarily; a value on
an edge goes to the upper bin (``searchsorted(side="right")``); a NaN or
infinite feature gets coordinate ``-1`` on that axis.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import StrategyError
from .segment import Segment

__all__ = ["bin_segments", "quantile_bins"]


def quantile_bins(values: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin coordinates of ``values`` (shape (N,), float) into ``n_bins`` equal-frequency bins.

    Returns
    -------
    coords : ndarray, shape (N,), int64
        0..n_bins-1, or -1 for non-finite values.
    edges : ndarray, float64
        The interior edges used (deduplicated).
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    coords = np.full(values.shape, -1, dtype=np.int64)
    if not finite.any():
        return coords, np.zeros(0)
    edges = np.unique(np.quantile(values[finite], np.linspace(0, 1, n_bins + 1)[1:-1]))
    coords[finite] = np.searchsorted(edges, values[finite], side="right")
    return coords, edges


def bin_segments(
    segments: Sequence[Segment], axes: Sequence[str], n_bins: int | Sequence[int]
) -> dict[str, list[float]]:
    """Assign ``seg.bin`` for every segment (in place); returns the edges per axis.

    Raises
    ------
    StrategyError
        If an axis is not a feature of the segments.
    """
    counts = [n_bins] * len(axes) if isinstance(n_bins, int) else list(n_bins)
    if len(counts) != len(axes):
        raise StrategyError("n_bins must be one integer or one per axis")
    cols = []
    edges: dict[str, list[float]] = {}
    for ax, nb in zip(axes, counts, strict=True):
        if segments and ax not in segments[0].features:
            raise StrategyError(f"binning axis {ax!r} is not a feature")
        vals = np.array([s.features[ax] for s in segments], dtype=np.float64)
        c, e = quantile_bins(vals, int(nb))
        cols.append(c)
        edges[ax] = [float(x) for x in e]
    for i, seg in enumerate(segments):
        seg.bin = tuple(int(c[i]) for c in cols)
    return edges
