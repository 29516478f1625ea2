"""The ``whole_source`` filter: a source is kept only when every one of its windows is.

``{"filter": "whole_source", "where": [entries...]}`` evaluates ``where`` (any
filter entries: predicates, ``dedup``...) over the segments and then drops
every segment of a source that has a dropped one.  With one LeRobot episode
per source, window metrics become episode flags: an episode with one jerky,
idle or duplicated window is kept out whole, never admitted in part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..contracts.segment import Segment
from ..errors import StrategyError
from .filters import apply_filters, describe_filter, normalize_filters, register_filter

__all__ = ["WholeSource"]


@dataclass(frozen=True)
class WholeSource:
    """``{"where": [entries]}``: keep a source's segments only if ``where`` keeps all of them."""

    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"where": "filter entries every window of a kept source must pass (required)"}
    )

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        extra = set(params) - {"where"}
        if extra:
            raise StrategyError(f"filter 'whole_source' takes only 'where', not {sorted(extra)}")
        if not isinstance(params.get("where"), list) or not params["where"]:
            raise StrategyError("filter 'whole_source' needs 'where': a non-empty list of entries")
        normalize_filters(params["where"], features, where="whole_source.where")

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        entries = normalize_filters(params["where"], _features(segments), "whole_source.where")
        keep, _ = apply_filters(segments, entries)
        flagged = {segments[i].source_id for i in np.flatnonzero(~keep).tolist()}
        return np.array([s.source_id not in flagged for s in segments], dtype=bool)

    def describe(self, params: Mapping[str, Any]) -> str:
        entries = [e if "filter" in e else {"filter": "predicate", **e} for e in params["where"]]
        return "every window of the source passes " + "; ".join(describe_filter(e) for e in entries)


def _features(segments: Sequence[Segment]) -> list[str]:
    return sorted(segments[0].features) if segments else []


register_filter(
    "whole_source",
    WholeSource(),
    execution_traits={"scope": "pool", "shape": "filter", "fusion": "barrier", "passes": 2},
)
