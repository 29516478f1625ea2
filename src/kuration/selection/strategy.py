"""Strategy: a declarative, validated JSON description of what to keep.

::

    {
      "name": "busy-airspace",
      "define": {"speed_p90": "field:position | speed | p90",
                 "turn_p90": "field:track | angle_delta | abs | p90"},
      "registered": [],
      "transforms": [{"name": "my_transform", "inputs": {"series": "field:track"}}],
      "scorers": [{"name": "novelty", "params": {"features": ["speed_p90", "turn_p90"]}}],
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

``transforms`` and ``scorers`` name registered BatchTransforms and
SegmentScorers (:mod:`kuration.metrics.transforms`, :mod:`kuration.metrics.scorers`);
their outputs are features like the others.  Selection keeps them as plain
descriptors: :func:`kuration.load_strategy` resolves them against the schema.
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
from typing import Any, cast

from ..core.config import StrategyModel, validate_config
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
    transforms: tuple[Mapping[str, Any], ...] = ()
    scorers: tuple[Mapping[str, Any], ...] = ()

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Defined and registered metrics, then transform outputs, then scorer outputs
        (transform outputs are known once :func:`kuration.load_strategy` resolved them)."""
        outs = [f for t in self.transforms for f in dict(t.get("outputs") or {}).values()]
        scored = [str(s.get("output") or s["name"]) for s in self.scorers]
        return (*self.define, *self.registered, *outs, *scored)

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
        if self.transforms:
            d["transforms"] = [dict(t) for t in self.transforms]
        if self.scorers:
            d["scorers"] = [dict(t) for t in self.scorers]
        if self.group is not None:
            d["group"] = dict(self.group)
        if self.group_cap is not None:
            d["group_cap"] = dict(self.group_cap)
        return d


def parse_strategy(
    spec: Mapping[str, Any] | str | os.PathLike[str],
    compile_metrics: Callable[[Strategy], object] | None = None,
    *,
    what: str = "strategy",
) -> Strategy:
    """Parse and validate a strategy before any data is read (all but its metrics).

    Parameters
    ----------
    spec : mapping, JSON text or path to a JSON file
        Checked by :class:`~kuration.core.config.StrategyModel` (strict JSON types, unknown
        keys rejected with the closest known key) before anything else.
    compile_metrics : callable, optional
        Called with the parsed strategy before its feature names are checked;
        :func:`kuration.load_strategy` passes one that compiles every metric
        against the schema and resolves its transforms and scorers, so an
        unknown token raises at load.  When it returns a :class:`Strategy`,
        that one (with resolved transform and scorer descriptors) is used.
    what : str
        Names the strategy in error messages (a file's path is used when given one).

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
        what = str(spec)
        try:
            with open(spec, "rb") as fh:
                spec = loads_strict(fh.read(), what=what)
        except FileNotFoundError:
            raise StrategyError(f"strategy file {spec} not found") from None
        except ValueError as exc:
            raise StrategyError(str(exc)) from None
    elif isinstance(spec, str):
        try:
            spec = loads_strict(spec, what="strategy")
        except ValueError as exc:
            raise StrategyError(str(exc)) from None
    m = validate_config(StrategyModel, spec, kind="strategy", what=what)
    doc: Mapping[str, Any] = cast(Mapping[str, Any], spec)  # a JSON object: checked just above
    try:
        method = get_method(m.method)
    except KeyError as exc:
        raise StrategyError(f"{what}: method: {exc}", path="method") from None
    axes = tuple(m.bin.axes) if m.bin is not None else ()
    if len(set(axes)) != len(axes):
        raise StrategyError(f"{what}: bin.axes must be distinct feature names", path="bin.axes")
    counts = m.bin.n_bins if m.bin is not None else 4
    if isinstance(counts, list) and len(counts) != len(axes):
        raise StrategyError(
            f"{what}: bin.n_bins lists {len(counts)} counts for {len(axes)} axes",
            path="bin.n_bins",
        )
    n_bins = tuple(counts) if isinstance(counts, list) else counts
    strat = Strategy(
        name=m.name,
        define=dict(m.define),
        method=m.method,
        bin_axes=axes,
        n_bins=n_bins,
        params=dict(m.params or {}),
        registered=tuple(m.registered),
        nan_policy=m.nan_policy,
        seed=m.seed,
        transforms=tuple(t.model_dump(exclude_defaults=True) for t in m.transforms),
        scorers=tuple(sc.model_dump(exclude_defaults=True) for sc in m.scorers),
    )
    if compile_metrics is not None:
        resolved = compile_metrics(strat)  # compiles every metric now: unknown tokens raise
        if isinstance(resolved, Strategy):
            strat = resolved
    features = strat.feature_names
    for ax in axes:
        if ax not in features:
            raise StrategyError(
                f"binning axis {ax!r} is not a defined feature ({', '.join(features)})"
            )
    tags = validate_tags(doc.get("tags"), features)
    group = validate_group(doc.get("group"))
    return dataclasses.replace(
        strat,
        params=resolve_params(method, strat.params, features, axes),
        filters=tuple(normalize_filters(doc.get("filters"), features)),
        tags=tags,
        group=group,
        tag_coverage=validate_tag_coverage(doc.get("tag_coverage"), tags),
        group_cap=validate_group_cap(doc.get("group_cap"), group),
    )


def strategy_json(s: Strategy) -> str:
    return json.dumps(s.to_dict(), sort_keys=True)
