"""Strategy: a declarative, validated JSON description of what to keep.

::

    {
      "name": "busy-airspace",
      "define": {"speed_p90": "field:position | speed | p90",
                 "turn_p90": "field:track | angle_delta | abs | p90"},
      "registered": [],
      "filters": [{"feature": "speed_p90", "op": ">=", "value": 100}],
      "bin": {"axes": ["speed_p90", "turn_p90"], "n_bins": [4, 3]},
      "method": "uniform-bins",
      "params": {},
      "tags": {"turning": {"feature": "turn_p90", "bins": 3}},
      "group": {"regex": "^(.*)_\\d+$"},
      "tag_coverage": {"turning": 0.2},
      "group_cap": {"max_overshoot": 1.5},
      "nan_policy": "exclude",
      "seed": 0
    }

``filters`` (see :mod:`kuration.selection.filters`) exclude segments before any
method runs: they are never selected.  ``bin.n_bins`` is one count or one
per axis.  ``method``/``params`` name a registered method (see
:mod:`kuration.selection.methods`); defaults a method resolves at load (such as the
feature set of a coverage method) are written into ``params``.  ``tags``,
``group``, ``tag_coverage`` and ``group_cap`` are described in
:mod:`kuration.selection.constraints`.

``nan_policy`` says what a NaN feature means for selection: ``exclude`` (the
segment gets priority -inf and is never selected) or ``lowest`` (it ranks
below every finite segment).

Selection reads features by name and never imports the metric DSL: compiling
the ``define`` block (validation and the FeatureEngine) is the pipeline's
:func:`kuration.load_strategy`, which parses with :func:`parse_strategy`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.jsonio import loads_strict
from ..errors import StrategyError
from .constraints import (
    validate_group,
    validate_group_cap,
    validate_tag_coverage,
    validate_tags,
)
from .filters import normalize_filters
from .methods import get_method, resolve_params

__all__ = ["Strategy", "parse_strategy"]

_KEYS = {
    "name",
    "define",
    "registered",
    "filters",
    "bin",
    "method",
    "params",
    "tags",
    "group",
    "tag_coverage",
    "group_cap",
    "nan_policy",
    "seed",
}


@dataclass(frozen=True)
class Strategy:
    """A validated strategy (see the module docstring for the JSON form)."""

    name: str
    define: Mapping[str, str]
    method: str
    bin_axes: tuple[str, ...] = ()
    n_bins: int | tuple[int, ...] = 4
    params: Mapping[str, Any] = field(default_factory=dict)
    registered: tuple[str, ...] = ()
    nan_policy: str = "exclude"
    seed: int = 0
    filters: tuple[Mapping[str, Any], ...] = ()
    tags: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    group: Mapping[str, Any] | None = None
    tag_coverage: Mapping[str, Any] = field(default_factory=dict)
    group_cap: Mapping[str, Any] | None = None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return (*self.define, *self.registered)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; ``parse_strategy(s.to_dict())`` gives back an equal strategy."""
        n_bins = self.n_bins if isinstance(self.n_bins, int) else list(self.n_bins)
        d: dict[str, Any] = {
            "name": self.name,
            "define": dict(self.define),
            "registered": list(self.registered),
            "filters": [dict(f) for f in self.filters],
            "bin": {"axes": list(self.bin_axes), "n_bins": n_bins},
            "method": self.method,
            "params": dict(self.params),
            "tags": {k: dict(v) for k, v in self.tags.items()},
            "tag_coverage": dict(self.tag_coverage),
            "nan_policy": self.nan_policy,
            "seed": self.seed,
        }
        if self.group is not None:
            d["group"] = dict(self.group)
        if self.group_cap is not None:
            d["group_cap"] = dict(self.group_cap)
        return d


def parse_strategy(
    spec: Mapping[str, Any] | str | os.PathLike[str],
    compile_metrics: Callable[[Strategy], object] | None = None,
) -> Strategy:
    """Parse and validate a strategy before any data is read (all but its metrics).

    Parameters
    ----------
    spec : mapping, JSON text or path to a JSON file
    compile_metrics : callable, optional
        Called with the parsed strategy before its feature names are checked;
        :func:`kuration.load_strategy` passes one that compiles every metric
        against the schema, so an unknown token raises at load.

    Raises
    ------
    StrategyError
        A missing file, unknown keys, missing ``define``/``method``, unknown method or bad
        parameters, binning axes that are not features, malformed filters,
        tags, group rule, tag coverage or group cap.
    """
    if isinstance(spec, str | os.PathLike) and not (
        isinstance(spec, str) and spec.lstrip().startswith("{")
    ):
        try:
            with open(spec, "rb") as fh:
                spec = loads_strict(fh.read(), what=str(spec))
        except FileNotFoundError:
            raise StrategyError(f"strategy file {spec} not found") from None
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
    if not isinstance(b.get("axes", []), list | tuple):
        raise StrategyError("bin 'axes' must be a list of feature names")
    axes = tuple(b.get("axes", ()))
    if not all(isinstance(a, str) for a in axes) or len(set(axes)) != len(axes):
        raise StrategyError("bin 'axes' must be distinct feature names")
    n_bins = b.get("n_bins", 4)
    if isinstance(n_bins, list):
        if len(n_bins) != len(axes):
            raise StrategyError(f"bin 'n_bins' lists {len(n_bins)} counts for {len(axes)} axes")
        for nb in n_bins:
            _check_n_bins(nb)
        n_bins = tuple(n_bins)
    else:
        _check_n_bins(n_bins)
    nan_policy = spec.get("nan_policy", "exclude")
    if nan_policy not in ("exclude", "lowest"):
        raise StrategyError(f"nan_policy must be 'exclude' or 'lowest', got {nan_policy!r}")
    seed = spec.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise StrategyError(f"seed must be an integer, got {seed!r}")
    registered = spec.get("registered", ())
    if not isinstance(registered, list | tuple) or not all(isinstance(r, str) for r in registered):
        raise StrategyError("strategy 'registered' must be a list of metric names")
    params = spec.get("params", {}) or {}
    if not isinstance(params, Mapping):
        raise StrategyError("strategy 'params' must be an object")
    strat = Strategy(
        name=str(spec.get("name", "strategy")),
        define=dict(define),
        method=method_name,
        bin_axes=axes,
        n_bins=n_bins,
        params=dict(params),
        registered=tuple(registered),
        nan_policy=nan_policy,
        seed=seed,
    )
    if compile_metrics is not None:
        compile_metrics(strat)  # compiles every metric now: unknown tokens raise at load
    features = strat.feature_names
    for ax in axes:
        if ax not in features:
            raise StrategyError(
                f"binning axis {ax!r} is not a defined feature ({', '.join(features)})"
            )
    tags = validate_tags(spec.get("tags"), features)
    group = validate_group(spec.get("group"))
    return dataclasses.replace(
        strat,
        params=resolve_params(method, strat.params, features, axes),
        filters=tuple(normalize_filters(spec.get("filters"), features)),
        tags=tags,
        group=group,
        tag_coverage=validate_tag_coverage(spec.get("tag_coverage"), tags),
        group_cap=validate_group_cap(spec.get("group_cap"), group),
    )


def _check_n_bins(nb: Any) -> None:
    if not isinstance(nb, int) or isinstance(nb, bool) or not 1 <= nb <= 1024:
        raise StrategyError(f"n_bins must be an integer in 1..1024, got {nb!r}")


def strategy_json(s: Strategy) -> str:
    return json.dumps(s.to_dict(), sort_keys=True)
