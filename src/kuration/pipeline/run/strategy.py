"""Loading a strategy: selection parses it, the metrics stage compiles its features.

Selection reads features by name and never imports the metric DSL, so the two
steps that need both -- compiling a strategy's ``define`` block against a
schema (to validate it at load) and building its FeatureEngine -- live here,
above both stages.

A strategy's metrics compile once per process: :func:`strategy_engine` keeps
the engines it built, keyed by what they compile (the ``define`` block, the
registered metric names and the schema), so validating a strategy at load
and scoring with it later share one :class:`FeatureEngine`.  A registered
metric re-registered under the same name (``clobber=True``) invalidates the
cached engine.  Worker processes still rebuild their engine from JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

from ...contracts.schema import SchemaSpec
from ...metrics import media_transforms, mutual_info, robot  # noqa: F401  (built-ins register)
from ...metrics.features import FeatureEngine, registered_metric
from ...metrics.scorers import ScorerUse, resolve_scorer
from ...metrics.transforms import TransformUse, resolve_transform
from ...selection.strategy import Strategy, parse_strategy

__all__ = ["load_strategy", "resolve_uses", "strategy_engine"]


_ENGINES: OrderedDict[Hashable, FeatureEngine] = OrderedDict()
_MAX_ENGINES = 16


def _engine_key(strategy: Strategy, schema: SchemaSpec) -> Hashable:
    schema_doc = json.dumps(schema.to_dict(), sort_keys=True, default=str)
    return (tuple(strategy.define.items()), tuple(strategy.registered), schema_doc)


def strategy_engine(strategy: Strategy, schema: SchemaSpec) -> FeatureEngine:
    """The FeatureEngine of ``strategy``: its ``define`` metrics compiled against ``schema``
    plus its registered metrics; built once per process for the same metrics and schema.

    Raises
    ------
    MetricCompileError, StrategyError
        From :class:`FeatureEngine` (nothing is cached then).
    """
    key = _engine_key(strategy, schema)
    engine = _ENGINES.get(key)
    if engine is not None and all(
        registered_metric(n) is fn for n, fn in engine.registered.items()
    ):
        _ENGINES.move_to_end(key)
        return engine
    engine = FeatureEngine(strategy.define, schema, strategy.registered)
    _ENGINES[key] = engine
    while len(_ENGINES) > _MAX_ENGINES:
        _ENGINES.popitem(last=False)
    return engine


def resolve_uses(
    strategy: Strategy, schema: SchemaSpec
) -> tuple[list[TransformUse], list[ScorerUse]]:
    """The strategy's transforms and scorers checked against ``schema`` (no data read).

    A transform may read (``feature:``) every metric and the outputs of the
    transforms before it; a scorer may read every feature before it.

    Raises
    ------
    TransformError, ScorerError
        A use that does not resolve (see :func:`~kuration.metrics.transforms.resolve_transform`
        and :func:`~kuration.metrics.scorers.resolve_scorer`).
    StrategyError
        Two uses writing the same feature.
    """
    from ...errors import StrategyError

    features = [*strategy.define, *strategy.registered]
    transforms = []
    for t in strategy.transforms:
        use = resolve_transform(t, schema, features)
        for f in use.outputs.values():
            if f in features:
                raise StrategyError(f"transform {use.name!r} output {f!r} is already a feature")
            features.append(f)
        transforms.append(use)
    scorers = []
    for sc in strategy.scorers:
        su = resolve_scorer(sc, schema, features)
        features.append(su.output)
        scorers.append(su)
    return transforms, scorers


def _compile(strategy: Strategy, schema: SchemaSpec) -> Strategy:
    strategy_engine(strategy, schema)
    transforms, scorers = resolve_uses(strategy, schema)
    return dataclasses.replace(
        strategy,
        transforms=tuple(u.to_dict() for u in transforms),
        scorers=tuple(u.to_dict() for u in scorers),
    )


def load_strategy(
    spec: Mapping[str, Any] | str | os.PathLike[str], schema: SchemaSpec, *, what: str = "strategy"
) -> Strategy:
    """Parse and validate a strategy against ``schema`` before any data is read.

    Parameters
    ----------
    spec : mapping, JSON text or path to a JSON file
    schema : SchemaSpec
    what : str
        Names the strategy in error messages (a file's path is used when given one).

    Raises
    ------
    StrategyError
        A missing file, unknown keys, missing ``define``/``method``, unknown method or bad
        parameters, binning axes that are not features, malformed filters,
        tags, group rule, tag coverage or group cap.
    MetricCompileError
        Any ``define`` expression that does not compile against the schema.
    TransformError, ScorerError
        A transform or scorer use that does not resolve against the schema.
    """
    return parse_strategy(spec, compile_metrics=lambda s: _compile(s, schema), what=what)
