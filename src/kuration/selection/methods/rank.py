"""Methods that rank by feature values: ``top-k``, ``weighted`` and ``filter``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ...contracts.segment import Segment
from ...errors import StrategyError
from ..filters import apply_filters, normalize_filters
from .base import (
    check_keys,
    check_normalize,
    get_method,
    pool_matrix,
    rank_nan_lowest,
)

__all__ = ["FilterMethod", "TopK", "Weighted"]


@dataclass(frozen=True)
class TopK:
    """Rank by one feature: ``{"by": name, "descending": true}``."""

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "by": "the feature to rank by (required)",
            "descending": "true (default) keeps the highest values first",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "top-k")
        by = params.get("by")
        if by not in features:
            raise StrategyError(
                f"method 'top-k' needs 'by' naming a feature ({', '.join(features)}), got {by!r}"
            )
        if not isinstance(params.get("descending", True), bool):
            raise StrategyError("top-k 'descending' must be true or false")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        vals = np.array([s.features[params["by"]] for s in segments], dtype=np.float64)
        if not params.get("descending", True):
            vals = -vals
        bad = ~np.isfinite(vals)
        return rank_nan_lowest(np.where(bad, 0.0, vals), bad, nan_policy)


@dataclass(frozen=True)
class Weighted:
    """Priority = ``sum_f w_f * norm(f)``: ``{"weights": {feature: w}, "normalize": "zscore"}``.

    Each weighted feature is normalised over the pool (``zscore`` default,
    ``minmax``, ``rank`` or ``none``; see
    :func:`kuration.selection.methods.base.normalize_columns`) so weights compare
    features of different units.  A negative weight prefers low values.  A
    segment with a non-finite weighted feature follows ``nan_policy``.
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "weights": "{feature: weight}; a negative weight prefers low values (required)",
            "normalize": "zscore (default), minmax, rank or none",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "weighted")
        w = params.get("weights")
        if not isinstance(w, Mapping) or not w:
            raise StrategyError("method 'weighted' needs 'weights': {feature: weight, ...}")
        for name, v in w.items():
            if name not in features:
                raise StrategyError(f"weighted: {name!r} is not a feature ({', '.join(features)})")
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                raise StrategyError(f"weighted: weight of {name!r} must be a finite number")
        if not any(float(v) != 0 for v in w.values()):
            raise StrategyError("weighted: weights must not all be 0")
        check_normalize(params, "weighted")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        names = list(params["weights"])
        w = np.array([float(params["weights"][n]) for n in names])
        x, bad = pool_matrix(segments, names, params.get("normalize", "zscore"))
        prio = np.where(bad, 0.0, np.nan_to_num(x, nan=0.0) @ w)
        return rank_nan_lowest(prio, bad, nan_policy)


@dataclass(frozen=True)
class FilterMethod:
    """Keep only segments passing ``where``; rank the rest with an inner method.

    ``params``::

        {"where": [filter entries, see kuration.selection.filters],
         "then": {"method": "top-k", "params": {"by": "turn_p90"}}}

    Failing segments get ``-inf``: they are never selected, even when the
    budget has room (an under-filled selection is reported, not topped up).
    Without ``then`` the passing segments are ranked by a seeded shuffle (a
    uniform random sample of the passing pool).  The inner method sees only
    the passing segments.
    """

    #: the parameters this method takes (validate() accepts exactly these keys)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "where": "a non-empty list of filter entries (required)",
            "then": "{'method': name, 'params': {...}}: ranks the passing segments (default: seeded shuffle)",
        }
    )

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(self.parameters), "filter")
        if not params.get("where"):
            raise StrategyError("method 'filter' needs a non-empty 'where' list")
        normalize_filters(params["where"], features, where="params.where")
        then = params.get("then")
        if then is None:
            return
        if (
            not isinstance(then, Mapping)
            or set(then) - {"method", "params"}
            or not isinstance(then.get("method"), str)
        ):
            raise StrategyError("filter 'then' is {'method': name, 'params': {...}}")
        try:
            inner = get_method(then["method"])
        except KeyError as exc:
            raise StrategyError(f"filter 'then': {exc}") from None
        inner.validate(then.get("params", {}) or {}, features, axes)

    def _keep(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> tuple[Any, Any]:
        entries = [e if "filter" in e else {"filter": "predicate", **e} for e in params["where"]]
        return apply_filters(segments, entries)

    def explain(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> list[str | None]:
        return self._keep(segments, params)[1]

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        n = len(segments)
        keep, _ = self._keep(segments, params)
        prio = np.full(n, -np.inf)
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return prio
        then = params.get("then")
        if then is None:
            prio[rows] = np.random.default_rng(seed).random(rows.size)
        else:
            inner = get_method(then["method"])
            sub = [segments[i] for i in rows.tolist()]
            prio[rows] = inner.priorities(sub, then.get("params", {}) or {}, seed, nan_policy)
        return prio
