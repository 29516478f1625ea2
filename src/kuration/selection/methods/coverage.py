"""Coverage selection: greedy k-center and greedy facility location.

Both build a selection *order* over a normalised feature space; the method
turns it into priorities with :func:`~kuration.selection.methods.base.order_to_priorities`
so the top ``n`` priorities are exactly the greedy selection of ``n``.

* k-center (Gonzalez 1985, "Clustering to minimize the maximum intercluster
  distance", Theoretical Computer Science 38:293-306): start from the point
  nearest the pool mean, then repeatedly add the point farthest from the
  chosen ones.  After ``k`` picks the covering radius
  ``max_i min_{c in S} d(x_i, x_c)`` is at most twice the optimum over every
  ``k``-subset (for any metric and any first point).
* facility location (Nemhauser, Wolsey & Fisher 1978, "An analysis of
  approximations for maximizing submodular set functions -- I", Mathematical
  Programming 14:265-294): ``f(S) = sum_i max_{c in S} sim(x_i, x_c)`` with
  non-negative similarities is monotone submodular with ``f({}) = 0``, so
  the greedy ``k``-set reaches at least ``(1 - 1/e)`` of the best
  ``k``-subset.  Greedy runs lazily (Minoux 1978, "Accelerated greedy
  algorithms for maximizing submodular set functions"): a stale gain is an
  upper bound, so a candidate whose refreshed gain still tops the heap is a
  maximum-gain pick.  Similarities follow the apricot library's facility
  location selection (Schreiber, Bilmes & Noble 2020, JMLR 21(161)) in
  turning a distance into a similarity by subtracting it from a constant.

Distances are Euclidean over the chosen features after normalisation.
Similarity kernels: ``distance`` -- ``sim = D - d`` with
``D = 2 max_i ||x_i - mean||`` (at least the pool diameter, so ``sim >= 0``;
the greedy order does not depend on ``D``, which only fixes ``f({}) = 0``);
``rbf`` -- ``sim = exp(-d^2 / (2 sigma^2))``, ``sigma`` by default the median
pairwise distance of at most 2048 evenly spaced pool points.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ...contracts.segment import Segment
from ...errors import StrategyError
from .base import (
    check_keys,
    check_normalize,
    feature_list,
    order_to_priorities,
    pool_matrix,
    rank_nan_lowest,
)

__all__ = [
    "FacilityLocation",
    "KCenter",
    "facility_location_value",
    "greedy_facility_location",
    "greedy_k_center",
    "k_center_radius",
    "similarity_scale",
]

_BLOCK = 1024
_REFRESH = 32  # stale candidates re-evaluated together by lazy greedy


def _dist_to(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Euclidean distances from every row of ``x`` (N, F) to ``c`` (F,), shape (N,)."""
    return np.sqrt(np.square(x - c).sum(axis=1))


def _dist_block(x: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Distances from every row of ``x`` to each row of ``cols``, shape (N, B)
    (``scipy.spatial.distance.cdist``: exact differences, no Gram-matrix cancellation)."""
    from scipy.spatial.distance import cdist

    return cdist(x, cols)


def k_center_radius(x: np.ndarray, chosen: Sequence[int]) -> float:
    """Covering radius ``max_i min_{c in chosen} ||x_i - x_c||`` (``inf`` for no centre)."""
    if len(chosen) == 0:
        return math.inf
    return float(_dist_block(x, x[np.asarray(chosen)]).min(axis=1).max())


def greedy_k_center(
    x: np.ndarray, k: int | None = None, first: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Gonzalez's farthest-point order over the rows of ``x``.

    Parameters
    ----------
    x : ndarray, shape (N, F), float64, finite
    k : int, optional
        Picks to make (default N).
    first : int, optional
        First centre (default: the row nearest the mean; ties to the lowest row).

    Returns
    -------
    order : ndarray, shape (k,), int64
        Rows in pick order; ties go to the lowest row.
    radius : ndarray, shape (k,), float64
        Covering radius after each pick (non-increasing).
    """
    n = x.shape[0]
    k = n if k is None else max(0, min(int(k), n))
    order = np.empty(k, dtype=np.int64)
    radius = np.empty(k, dtype=np.float64)
    if k == 0:
        return order, radius
    c = int(np.argmin(_dist_to(x, x.mean(axis=0)))) if first is None else int(first)
    mind = np.full(n, np.inf)
    chosen = np.zeros(n, dtype=bool)
    for step in range(k):
        order[step] = c
        chosen[c] = True
        mind = np.minimum(mind, _dist_to(x, x[c]))
        radius[step] = mind.max()
        if step + 1 < k:
            c = int(np.argmax(np.where(chosen, -np.inf, mind)))
    return order, radius


def similarity_scale(x: np.ndarray, kernel: str, sigma: float | None = None) -> float:
    """``D`` for the ``distance`` kernel or ``sigma`` for ``rbf`` (see the module docs)."""
    if kernel == "distance":
        return 2.0 * float(_dist_to(x, x.mean(axis=0)).max()) if x.shape[0] else 0.0
    if sigma is not None:
        return float(sigma)
    sub = x[:: max(1, math.ceil(x.shape[0] / 2048))]
    if sub.shape[0] < 2:
        return 1.0
    d = _dist_block(sub, sub)[np.triu_indices(sub.shape[0], 1)]
    med = float(np.median(d))
    if med > 0:
        return med
    pos = d[d > 0]
    return float(pos.mean()) if pos.size else 1.0


def _sim(d: np.ndarray, kernel: str, scale: float) -> np.ndarray:
    if kernel == "distance":
        return np.maximum(scale - d, 0.0)
    return np.exp(-np.square(d) / (2.0 * scale * scale))


def facility_location_value(
    x: np.ndarray, chosen: Sequence[int], kernel: str = "distance", scale: float | None = None
) -> float:
    """``f(S) = sum_i max_{c in S} sim(x_i, x_c)`` (0 for the empty set)."""
    if len(chosen) == 0:
        return 0.0
    s = similarity_scale(x, kernel) if scale is None else scale
    return float(_sim(_dist_block(x, x[np.asarray(chosen)]), kernel, s).max(axis=1).sum())


def greedy_facility_location(
    x: np.ndarray, k: int | None = None, kernel: str = "distance", sigma: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Lazy-greedy facility-location order over the rows of ``x``.

    Parameters
    ----------
    x : ndarray, shape (N, F), float64, finite
    k : int, optional
        Picks to make (default N).
    kernel : {"distance", "rbf"}
    sigma : float, optional
        RBF bandwidth (default: the median pairwise distance).

    Returns
    -------
    order : ndarray, shape (k,), int64
        Rows in pick order (equal gains, up to rounding, go to the lowest row).
    gains : ndarray, shape (k,), float64
        Marginal gain of each pick (non-increasing); their cumulative sum is ``f``.
    """
    n = x.shape[0]
    k = n if k is None else max(0, min(int(k), n))
    order = np.empty(k, dtype=np.int64)
    gains = np.empty(k, dtype=np.float64)
    if k == 0:
        return order, gains
    scale = similarity_scale(x, kernel, sigma)
    init = np.empty(n)
    for b0 in range(0, n, _BLOCK):
        init[b0 : b0 + _BLOCK] = _sim(_dist_block(x, x[b0 : b0 + _BLOCK]), kernel, scale).sum(0)
    heap = [(-float(g), i, 0) for i, g in enumerate(init)]
    heapq.heapify(heap)
    cur = np.zeros(n)
    step = 0
    while step < k:
        if heap[0][2] == step:  # fresh and on top: no other bound beats it
            neg, i, _ = heapq.heappop(heap)
            order[step] = i
            gains[step] = -neg
            cur = np.maximum(cur, _sim(_dist_to(x, x[i]), kernel, scale))
            step += 1
            continue
        # refresh the stale top of the heap in one vectorised block
        stale: list[int] = []
        while heap and heap[0][2] != step and len(stale) < _REFRESH:
            stale.append(heapq.heappop(heap)[1])
        cols = np.asarray(stale)
        g = np.maximum(_sim(_dist_block(x, x[cols]), kernel, scale) - cur[:, None], 0.0).sum(0)
        for gi, i in zip(g.tolist(), stale, strict=True):
            heapq.heappush(heap, (-gi, i, step))
    return order, gains


def _rest_by(score: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Rows not in ``done``, by ``score`` descending (ties to the lowest row)."""
    rest = np.setdiff1d(np.arange(score.size), done)
    return rest[np.lexsort((rest, -score[rest]))]


def _check_coverage(params: Mapping[str, Any], method: str, extra: set[str]) -> None:
    check_keys(params, {"features", "normalize", "limit", *extra}, method)
    check_normalize(params, method)
    lim = params.get("limit")
    if lim is not None and (not isinstance(lim, int) or isinstance(lim, bool) or lim < 1):
        raise StrategyError(f"method {method!r} 'limit' must be a positive integer")


@dataclass(frozen=True)
class KCenter:
    """Greedy k-center coverage (Gonzalez 1985; see the module docs).

    ``params``: ``features`` (default the bin axes, else every feature),
    ``normalize`` (``zscore`` default), ``limit`` (greedy picks to compute;
    default the whole pool -- beyond it the rest rank by their distance to the
    chosen centres, farthest first).  Deterministic: the first centre is the
    segment nearest the pool mean, ties go to the canonical order.
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "features": "feature names (default: the bin axes, else every feature)",
            "normalize": "zscore (default), minmax, rank or none",
            "limit": "greedy picks to compute (default: the whole pool)",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        _check_coverage(params, "k-center", set())
        feature_list(params, features, axes, "k-center")

    def resolve(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> dict[str, Any]:
        """``params`` with the default ``features`` written out."""
        return {**params, "features": feature_list(params, features, axes, "k-center")}

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        xg, rows, bad = _coverage_matrix(segments, params)
        order, _ = greedy_k_center(xg, params.get("limit"))
        if order.size < rows.size:
            mind = _dist_block(xg, xg[order]).min(axis=1) if order.size else np.zeros(rows.size)
            order = np.r_[order, _rest_by(mind, order)]
        return rank_nan_lowest(order_to_priorities(rows[order], len(segments)), bad, nan_policy)


def _coverage_matrix(
    segments: Sequence[Segment], params: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The normalised feature rows of the segments that can be ranked, their pool indices,
    and the mask of segments left out (non-finite features)."""
    names = params.get("features") or _all_axes(segments)
    x, bad = pool_matrix(segments, names, params.get("normalize", "zscore"))
    rows = np.flatnonzero(~bad)
    return x[rows], rows, bad


@dataclass(frozen=True)
class FacilityLocation:
    """Greedy facility-location coverage (Nemhauser, Wolsey & Fisher 1978; see the module docs).

    ``params``: ``features``, ``normalize`` and ``limit`` as for k-center;
    ``kernel`` (``distance`` default, or ``rbf``) and ``sigma`` (rbf bandwidth).
    Beyond ``limit`` the rest rank by their marginal gain, largest first.
    Cost: one pass over all pairs (in blocks of 1024 columns) plus one column
    per lazy re-evaluation; memory is O(N).
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "features": "feature names (default: the bin axes, else every feature)",
            "normalize": "zscore (default), minmax, rank or none",
            "limit": "greedy picks to compute (default: the whole pool)",
            "kernel": "distance (default) or rbf",
            "sigma": "rbf bandwidth (kernel rbf only)",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        _check_coverage(params, "facility-location", {"kernel", "sigma"})
        feature_list(params, features, axes, "facility-location")
        if params.get("kernel", "distance") not in ("distance", "rbf"):
            raise StrategyError("facility-location 'kernel' must be 'distance' or 'rbf'")
        sig = params.get("sigma")
        if sig is not None and (
            not isinstance(sig, int | float) or isinstance(sig, bool) or not sig > 0
        ):
            raise StrategyError("facility-location 'sigma' must be a positive number")
        if sig is not None and params.get("kernel", "distance") != "rbf":
            raise StrategyError("facility-location 'sigma' applies to kernel 'rbf' only")

    def resolve(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> dict[str, Any]:
        """``params`` with the default ``features`` written out."""
        return {**params, "features": feature_list(params, features, axes, "facility-location")}

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        xg, rows, bad = _coverage_matrix(segments, params)
        kernel = params.get("kernel", "distance")
        order, _ = greedy_facility_location(xg, params.get("limit"), kernel, params.get("sigma"))
        if order.size < rows.size:
            scale = similarity_scale(xg, kernel, params.get("sigma"))
            cur = _sim(_dist_block(xg, xg[order]), kernel, scale).max(axis=1)
            gain = np.empty(rows.size)
            for b0 in range(0, rows.size, _BLOCK):
                s = _sim(_dist_block(xg, xg[b0 : b0 + _BLOCK]), kernel, scale)
                gain[b0 : b0 + _BLOCK] = np.maximum(s - cur[:, None], 0.0).sum(axis=0)
            order = np.r_[order, _rest_by(gain, order)]
        return rank_nan_lowest(order_to_priorities(rows[order], len(segments)), bad, nan_policy)


def _all_axes(segments: Sequence[Segment]) -> list[str]:
    """Fallback feature set when params name none: the engine passes it resolved, so this
    only serves direct calls -- every feature of the first segment."""
    return list(segments[0].features) if segments else []
