"""The ``random`` method: a seeded uniform draw per window, the control every strategy is
compared with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ...contracts.segment import Segment
from ..draws import seeded_uniform, segment_key
from .base import check_keys

__all__ = ["RandomMethod"]


@dataclass(frozen=True)
class RandomMethod:
    """Uniform random order: each window's priority is a seeded draw in ``[0, 1)``.

    The draw is keyed by the window's stable id and the seed
    (:func:`~kuration.selection.draws.seeded_uniform`), so it does not depend on
    the pool's order, the runtime or the executor, and features are not read
    (``nan_policy`` has nothing to act on).  In an hours run the fill does not
    aggregate these per-window draws (a mean over many windows would crowd
    towards 0.5 and favour short spans): each candidate track or span instead gets
    its own draw, keyed by (source, entity, span) -- a uniformly random order
    over the candidate spans, filled with the same stop rule as every method.
    """

    #: the parameters this method takes (none)
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType({})

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None:
        check_keys(params, set(), "random")

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray:
        keys = (segment_key(s.source_id, s.entity, s.start_idx) for s in segments)
        return seeded_uniform(seed, keys)
