"""Strategy: a declarative, validated JSON description of what to keep.

::

    {
      "name": "busy-airspace",
      "define": {"speed_p90": "field:position | speed | p90"},
      "registered": [],
      "bin": {"axes": ["speed_p90"], "n_bins": 4},
      "method": "uniform-bins",
      "params": {},
      "nan_policy": "exclude",
      "seed": 0
    }

``nan_policy`` says what a NaN feature means for selection: ``exclude`` (the
segment gets priority -inf and is never selected) or ``lowest`` (it ranks
below every finite segment).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import StrategyError
from .features import FeatureEngine
from .jsonio import loads_strict
from .schema import SchemaSpec
from .select import get_method

__all__ = ["Strategy", "load_strategy"]

_KEYS = {"name", "define", "registered", "bin", "method", "params", "nan_policy", "seed"}


@dataclass(frozen=True)
class Strategy:
    """A validated strategy (see the module docstring for the JSON form)."""

    name: str
    define: Mapping[str, str]
    method: str
    bin_axes: tuple[str, ...] = ()
    n_bins: int = 4
    params: Mapping[str, Any] = field(default_factory=dict)
    registered: tuple[str, ...] = ()
    nan_policy: str = "exclude"
    seed: int = 0

    @property
    def feature_names(self) -> tuple[str, ...]:
        return (*self.define, *self.registered)

    def engine(self, schema: SchemaSpec) -> FeatureEngine:
        return FeatureEngine(self.define, schema, self.registered)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "define": dict(self.define),
            "registered": list(self.registered),
            "bin": {"axes": list(self.bin_axes), "n_bins": self.n_bins},
            "method": self.method,
            "params": dict(self.params),
            "nan_policy": self.nan_policy,
            "seed": self.seed,
        }


def load_strategy(spec: Mapping[str, Any] | str | os.PathLike[str], schema: SchemaSpec) -> Strategy:
    """Parse and validate a strategy against ``schema`` before any data is read.

    Parameters
    ----------
    spec : mapping, JSON text or path to a JSON file

    Raises
    ------
    StrategyError
        Unknown keys, missing ``define``/``method``, unknown method or bad
        parameters, binning axes that are not features.
    MetricCompileError
        Any ``define`` expression that does not compile against the schema.
    """
    if isinstance(spec, str | os.PathLike) and not (
        isinstance(spec, str) and spec.lstrip().startswith("{")
    ):
        try:
            with open(spec, "rb") as fh:
                spec = loads_strict(fh.read(), what=str(spec))
        except ValueError as exc:
            raise StrategyError(str(exc)) from None
    elif isinstance(spec, str):
        try:
            spec = loads_strict(spec, what="strategy")
        except ValueError as exc:
            raise StrategyError(str(exc)) from None
    if not isinstance(spec, Mapping):
        raise StrategyError(f"a strategy must be a JSON object, got {type(spec).__name__}")
    extra = set(spec) - _KEYS
    if extra:
        raise StrategyError(f"unknown strategy keys {sorted(extra)} (allowed: {sorted(_KEYS)})")
    define = spec.get("define")
    if not isinstance(define, Mapping) or not all(isinstance(v, str) for v in define.values()):
        raise StrategyError("strategy 'define' must map feature names to metric expressions")
    method_name = spec.get("method")
    if not isinstance(method_name, str):
        raise StrategyError("strategy needs a 'method'")
    try:
        method = get_method(method_name)
    except KeyError as exc:
        raise StrategyError(str(exc)) from None
    b = spec.get("bin", {}) or {}
    if not isinstance(b, Mapping) or set(b) - {"axes", "n_bins"}:
        raise StrategyError("strategy 'bin' is {'axes': [feature, ...], 'n_bins': int}")
    axes = tuple(b.get("axes", ()))
    n_bins = b.get("n_bins", 4)
    if not isinstance(n_bins, int) or isinstance(n_bins, bool) or not 1 <= n_bins <= 1024:
        raise StrategyError(f"n_bins must be an integer in 1..1024, got {n_bins!r}")
    nan_policy = spec.get("nan_policy", "exclude")
    if nan_policy not in ("exclude", "lowest"):
        raise StrategyError(f"nan_policy must be 'exclude' or 'lowest', got {nan_policy!r}")
    seed = spec.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise StrategyError(f"seed must be an integer, got {seed!r}")
    registered = tuple(spec.get("registered", ()))
    strat = Strategy(
        name=str(spec.get("name", "strategy")),
        define=dict(define),
        method=method_name,
        bin_axes=axes,
        n_bins=n_bins,
        params=dict(spec.get("params", {}) or {}),
        registered=registered,
        nan_policy=nan_policy,
        seed=seed,
    )
    strat.engine(schema)  # compiles every metric now: unknown tokens raise at load
    for ax in axes:
        if ax not in strat.feature_names:
            raise StrategyError(
                f"binning axis {ax!r} is not a defined feature ({', '.join(strat.feature_names)})"
            )
    method.validate(strat.params, strat.feature_names, axes)
    return strat


def strategy_json(s: Strategy) -> str:
    return json.dumps(s.to_dict(), sort_keys=True)
