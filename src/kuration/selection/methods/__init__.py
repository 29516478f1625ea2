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
==================== ==========================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import Method, get_method, register_method, registered_methods
from .bins import TargetDistribution, UniformBins
from .coverage import FacilityLocation, KCenter
from .importance import ImportanceResampling
from .rank import FilterMethod, TopK, Weighted

__all__ = [
    "Method",
    "get_method",
    "register_method",
    "registered_methods",
    "resolve_params",
]

register_method("uniform-bins", UniformBins())
register_method("target-distribution", TargetDistribution())
register_method("top-k", TopK())
register_method("weighted", Weighted())
register_method("filter", FilterMethod())
register_method("k-center", KCenter())
register_method("facility-location", FacilityLocation())
register_method("importance", ImportanceResampling())


def resolve_params(
    method: Method, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
) -> dict[str, Any]:
    """Validate ``params`` and write out defaults the method resolves at load (e.g. ``features``)."""
    method.validate(params, features, axes)
    resolve = getattr(method, "resolve", None)
    return dict(resolve(params, features, axes)) if callable(resolve) else dict(params)
