"""Selection methods: the contract, the registry and the built-in methods.

==================== ==========================================================
name                 what it ranks by
==================== ==========================================================
uniform-bins         equal share per occupied joint quantile bin
target-distribution  a declared distribution over bins (or feature ranges)
top-k                one feature, descending or ascending
weighted             weighted sum of normalised features
filter               predicates (failures never selected), then an inner method
k-center             greedy farthest-point coverage (Gonzalez 1985)
facility-location    greedy facility location (Nemhauser, Wolsey & Fisher 1978)
importance           importance resampling toward a target sample (DSIR, Xie et al. 2023)
random               a seeded uniform draw per window (per span in an hours fill): the control
==================== ==========================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import Method, get_method, register_method, registered_methods
from .bins import TargetDistribution, UniformBins
from .coverage import FacilityLocation, KCenter
from .importance import ImportanceResampling
from .random_order import RandomMethod
from .rank import FilterMethod, TopK, Weighted

__all__ = [
    "Method",
    "get_method",
    "register_method",
    "registered_methods",
    "resolve_params",
]

# execution traits (kuration.core.traits): every method ranks the whole pool (a barrier);
# the greedy coverage methods and importance resampling make more than one pass
_POOL = {"scope": "pool", "shape": "rank", "fusion": "barrier", "state": "pool"}
register_method("uniform-bins", UniformBins(), execution_traits=_POOL)
register_method("target-distribution", TargetDistribution(), execution_traits=_POOL)
register_method("top-k", TopK(), execution_traits=_POOL)
register_method("weighted", Weighted(), execution_traits={**_POOL, "passes": 2})
register_method("filter", FilterMethod(), execution_traits={**_POOL, "passes": 2})
register_method("k-center", KCenter(), execution_traits={**_POOL, "passes": 2})
register_method("facility-location", FacilityLocation(), execution_traits={**_POOL, "passes": 2})
register_method("importance", ImportanceResampling(), execution_traits={**_POOL, "passes": 2})
register_method("random", RandomMethod(), execution_traits=_POOL)


def resolve_params(
    method: Method, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
) -> dict[str, Any]:
    """Validate ``params`` and write out defaults the method resolves at load (e.g. ``features``)."""
    method.validate(params, features, axes)
    resolve = getattr(method, "resolve", None)
    return dict(resolve(params, features, axes)) if callable(resolve) else dict(params)
