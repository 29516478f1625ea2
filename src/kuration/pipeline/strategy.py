"""Loading a strategy: selection parses it, the metrics stage compiles its features.

Selection reads features by name and never imports the metric DSL, so the two
steps that need both -- compiling a strategy's ``define`` block against a
schema (to validate it at load) and building its FeatureEngine -- live here,
above both stages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..contracts.schema import SchemaSpec
from ..metrics.features import FeatureEngine
from ..selection.strategy import Strategy, parse_strategy

__all__ = ["load_strategy", "strategy_engine"]


def strategy_engine(strategy: Strategy, schema: SchemaSpec) -> FeatureEngine:
    """The FeatureEngine of ``strategy``: its ``define`` metrics compiled against ``schema``
    plus its registered metrics."""
    return FeatureEngine(strategy.define, schema, strategy.registered)


def load_strategy(spec: Mapping[str, Any] | str | os.PathLike[str], schema: SchemaSpec) -> Strategy:
    """Parse and validate a strategy against ``schema`` before any data is read.

    Parameters
    ----------
    spec : mapping, JSON text or path to a JSON file

    Raises
    ------
    StrategyError
        A missing file, unknown keys, missing ``define``/``method``, unknown method or bad
        parameters, binning axes that are not features, malformed filters,
        tags, group rule, tag coverage or group cap.
    MetricCompileError
        Any ``define`` expression that does not compile against the schema.
    """
    return parse_strategy(spec, compile_metrics=lambda s: strategy_engine(s, schema))
