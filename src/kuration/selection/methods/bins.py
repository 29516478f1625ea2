"""Methods over the quantile bins: ``uniform-bins`` and ``target-distribution``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ...contracts.segment import Segment
from ...errors import StrategyError
from ..binning import joint_bins
from .base import check_keys, order_to_priorities, rank_nan_lowest

__all__ = ["TargetDistribution", "UniformBins", "apportion_order"]


def _within_order(
    segments: Sequence[Segment], params: Mapping[str, Any], rng: np.random.Generator
) -> np.ndarray:
    """A key (N,) ranking segments inside a bin: seeded random, or by a feature."""
    n = len(segments)
    shuffle = rng.permutation(n).astype(np.float64)
    within = params.get("within")
    if within is None:
        return shuffle
    vals = np.array([s.features[within["by"]] for s in segments], dtype=np.float64)
    if within.get("descending", True):
        vals = -vals
    vals = np.where(np.isfinite(vals), vals, np.inf)  # non-finite last within the bin
    # rank by value, ties by the seeded shuffle
    rank = np.empty(n, dtype=np.float64)
    rank[np.lexsort((shuffle, vals))] = np.arange(n)
    return rank


def _check_within(params: Mapping[str, Any], features: Sequence[str], method: str) -> None:
    within = params.get("within")
    if within is None:
        return
    if (
        not isinstance(within, Mapping)
        or set(within) - {"by", "descending"}
        or within.get("by") not in features
        or not isinstance(within.get("descending", True), bool)
    ):
        raise StrategyError(
            f"method {method!r} 'within' is {{'by': feature, 'descending': bool}} "
            f"(features: {', '.join(features)})"
        )


@dataclass(frozen=True)
class UniformBins:
    """Equal share per occupied bin: a round-robin over the joint quantile bins.

    Within each bin, segments are ranked by a seeded shuffle (or, with
    ``{"within": {"by": feature}}``, by that feature); the priority is
    ``-(r + u)`` with ``r`` the rank in the bin and ``u`` a seeded uniform
    tie-break in [0, 1).  So the top ``n`` take one segment from every occupied
    bin before a second from any, and every occupied bin ends within one
    segment of an equal share (until it runs out).  A segment with a -1
    coordinate (non-finite axis feature) follows ``nan_policy``.
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "within": "{'by': feature, 'descending': bool}: order inside a bin (default: seeded shuffle)",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "uniform-bins")
        if not axes:
            raise StrategyError(
                "method 'uniform-bins' needs bin axes (strategy 'bin': {'axes': [...]})"
            )
        _check_within(params, features, "uniform-bins")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        n = len(segments)
        if n == 0:
            return np.zeros(0)
        rng = np.random.default_rng(seed)
        key = _within_order(segments, params, rng)
        tiebreak = rng.random(n)
        cells, inv = joint_bins(segments)
        bad = (cells[inv] < 0).any(axis=1)
        order = np.lexsort((key, inv))  # by bin, then by the within-bin key
        rank = np.empty(n, dtype=np.float64)
        starts = np.flatnonzero(np.r_[True, inv[order][1:] != inv[order][:-1]])
        run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
        rank[order] = np.arange(n) - run_start
        return rank_nan_lowest(-(rank + tiebreak), bad, nan_policy)


def apportion_order(weights: np.ndarray, members: Sequence[np.ndarray]) -> np.ndarray:
    """Interleave bins so that every prefix of the result follows ``weights``.

    At step ``k`` (0-based) the next segment comes from the bin ``b`` with
    remaining members that maximises the deficit ``w_b (k + 1) - c_b``
    (``c_b`` taken so far; ties to the lowest bin) -- a sequential
    largest-deficit apportionment, so after ``k`` picks every bin that has not
    run out holds within one segment of ``k w_b``.  Bins of weight 0 are left
    out.

    Parameters
    ----------
    weights : ndarray, shape (B,), float, summing to 1 over bins with members
    members : sequence of B int arrays, each bin's rows in pick order
    """
    w = np.asarray(weights, dtype=np.float64)
    avail = np.array([len(m) for m in members], dtype=np.int64)
    live = (w > 0) & (avail > 0)
    total = int(avail[live].sum())
    taken = np.zeros(len(members), dtype=np.int64)
    out = np.empty(total, dtype=np.int64)
    wl = np.where(live, w, 0.0)
    if wl.sum() > 0:
        wl = wl / wl.sum()
    for k in range(total):
        deficit = np.where(live, wl * (k + 1) - taken, -np.inf)
        b = int(np.argmax(deficit))
        out[k] = members[b][taken[b]]
        taken[b] += 1
        if taken[b] == avail[b]:
            live[b] = False
    return out


@dataclass(frozen=True)
class TargetDistribution:
    """Match a declared distribution over bins.

    ``params``::

        {"target": "uniform"}                               # equal weight per occupied bin
        {"target": {"bins": {"0": 1, "3": 2, "1,2": 0.5}}}  # weights over the strategy's joint
                                                            # bins, keys = comma-joined coords
        {"target": {"feature": "turn_p90", "edges": [0.3, 0.6], "weights": [1, 1, 2]}}
                                                            # value-range bins of one feature
        "within": {"by": feature, "descending": true}       # order inside a bin (default:
                                                            # seeded shuffle)
        "others": "last" | "exclude"                        # segments in zero-weight bins

    Weights are relative (normalised over bins that have segments).  The
    ranking interleaves bins with :func:`apportion_order`, so the top ``n``
    follow the target to within one segment per bin until a bin runs out;
    its share then goes to the others in proportion.  Segments in bins of
    weight 0 (unlisted bins) rank after every weighted one (``others:
    "last"``) or never (``"exclude"``).  For ``edges``, a value on an edge
    goes to the upper range; a non-finite value follows ``nan_policy``.
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "target": "'uniform', {'bins': {coords: weight}} or {'feature', 'edges', 'weights'} (required)",
            "within": "{'by': feature, 'descending': bool}: order inside a bin",
            "others": "'last' (default) or 'exclude': segments in zero-weight bins",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "target-distribution")
        _check_within(params, features, "target-distribution")
        if params.get("others", "last") not in ("last", "exclude"):
            raise StrategyError("target-distribution 'others' must be 'last' or 'exclude'")
        t = params.get("target")
        if (t == "uniform" or (isinstance(t, Mapping) and "bins" in t)) and not axes:
            raise StrategyError(
                "target-distribution over bins needs bin axes (strategy 'bin': {'axes': [...]})"
            )
        if t == "uniform":
            return
        if not isinstance(t, Mapping):
            raise StrategyError(
                "target-distribution needs 'target': 'uniform', {'bins': {...}} or "
                "{'feature': name, 'edges': [...], 'weights': [...]}"
            )
        if "bins" in t:
            if set(t) != {"bins"} or not isinstance(t["bins"], Mapping) or not t["bins"]:
                raise StrategyError("target {'bins': {...}} maps bin keys to weights")
            for key, w in t["bins"].items():
                parts = str(key).split(",")
                if len(parts) != len(axes) or not all(p.strip().isdigit() for p in parts):
                    raise StrategyError(
                        f"target bin key {key!r} must be {len(axes)} comma-joined bin indices"
                    )
                _check_weight(w)
            if not any(float(w) > 0 for w in t["bins"].values()):
                raise StrategyError("target weights must not all be 0")
            return
        if set(t) != {"feature", "edges", "weights"}:
            raise StrategyError("target over a feature is {'feature', 'edges', 'weights'}")
        if t["feature"] not in features:
            raise StrategyError(f"target feature {t['feature']!r} is not a feature")
        edges, weights = t["edges"], t["weights"]
        if (
            not isinstance(edges, list)
            or not all(isinstance(e, int | float) and math.isfinite(e) for e in edges)
            or any(b <= a for a, b in itertools.pairwise(edges))
        ):
            raise StrategyError("target 'edges' must be increasing finite numbers")
        if not isinstance(weights, list) or len(weights) != len(edges) + 1:
            raise StrategyError(f"target 'weights' needs len(edges) + 1 = {len(edges) + 1} entries")
        for w in weights:
            _check_weight(w)
        if not any(float(w) > 0 for w in weights):
            raise StrategyError("target weights must not all be 0")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        n = len(segments)
        if n == 0:
            return np.zeros(0)
        rng = np.random.default_rng(seed)
        key = _within_order(segments, params, rng)
        t = params["target"]
        if isinstance(t, Mapping) and "feature" in t:
            x = np.array([s.features[t["feature"]] for s in segments], dtype=np.float64)
            bad = ~np.isfinite(x)
            idx = np.searchsorted(np.asarray(t["edges"], dtype=np.float64), x, side="right")
            weights = np.asarray(t["weights"], dtype=np.float64)
            cell = np.where(bad, -1, idx)
        else:
            cells, inv = joint_bins(segments)
            bad = (cells[inv] < 0).any(axis=1)
            if t == "uniform":
                weights = np.ones(len(cells))
            else:
                table = {
                    tuple(int(p) for p in str(k).split(",")): float(v) for k, v in t["bins"].items()
                }
                weights = np.array([table.get(tuple(c), 0.0) for c in cells.tolist()])
            cell = np.where(bad, -1, inv)
        members = []
        for b in range(len(weights)):
            rows = np.flatnonzero(cell == b)
            members.append(rows[np.argsort(key[rows], kind="stable")])
        order = apportion_order(weights, members)
        prio = order_to_priorities(order, n)
        rest = np.flatnonzero(~np.isin(np.arange(n), order) & ~bad)
        if rest.size and params.get("others", "last") == "last":
            rest = rest[np.argsort(key[rest], kind="stable")]
            prio[rest] = -np.arange(rest.size, dtype=np.float64)  # all below the weighted ones
        return rank_nan_lowest(prio, bad, nan_policy)


def _check_weight(w: Any) -> None:
    if not isinstance(w, int | float) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
        raise StrategyError(f"target weights must be finite numbers >= 0, got {w!r}")
