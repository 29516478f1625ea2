"""SegmentScorer: whole-pool, model-backed features, computed after the feature pass.

A scorer sees the entire pool of segments at once (after every source's
metrics and transforms), may load a model or a reference set, and returns one
value per segment, which the pipeline writes into ``seg.features`` under the
use's ``output`` name; selection then weighs it like any other feature::

    register_scorer("novelty", NoveltyScorer, check=NoveltyScorer.check)

    "scorers": [{"name": "novelty", "params": {"features": ["speed_p90", "turn_p90"], "k": 5},
                 "output": "novelty"}]

``needs_buffers=True`` asks the pipeline for every segment's raw sequences: each
source is read again once and each segment's
:class:`~kuration.contracts.buffer.WindowBuffer` is handed over in
``ctx.buffers`` (pool order).  A scorer's value may be NaN (no value: too
few samples); ``nan_policy`` of the strategy decides what selection does
with it.  Infinite values, wrong lengths and exceptions raise
:class:`~kuration.errors.ScorerError`.

Built-ins: ``novelty`` (here) and ``mutual_information``
(:mod:`kuration.metrics.mutual_info`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.buffer import WindowBuffer
from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment
from ..core.traits import ExecutionTraits, register_with_traits
from ..errors import MissingExtraError, ScorerError
from .seams import SCORERS as _SCORERS
from .seams import registered_scorers

__all__ = [
    "NoveltyScorer",
    "ScorerContext",
    "ScorerInfo",
    "ScorerUse",
    "SegmentScorer",
    "get_scorer",
    "register_scorer",
    "registered_scorers",
    "resolve_scorer",
]

Check = Callable[[Mapping[str, Any], SchemaSpec, Sequence[str]], None]


@dataclass(frozen=True)
class ScorerInfo:
    """One registration: ``factory(**params)`` builds the scorer; ``check(params, schema,
    features)`` (optional) validates a use's parameters before any data is read."""

    name: str
    factory: Callable[..., Any]
    needs_buffers: bool = False
    check: Check | None = None

    @property
    def implementation(self) -> Any:
        """The code the run fingerprint identifies (the factory)."""
        return self.factory


def register_scorer(
    name: str,
    factory: Callable[..., Any],
    *,
    needs_buffers: bool = False,
    check: Check | None = None,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
    clobber: bool = False,
) -> ScorerInfo:
    """Register a SegmentScorer.

    Parameters
    ----------
    name : str
    factory : callable
        ``factory(**params)`` returns an object with ``score(segments, ctx)``
        (a :class:`SegmentScorer`); called once per run, in the main process.
    needs_buffers : bool
        Hand every segment's WindowBuffer to the scorer (each source is read
        once more).
    check : callable, optional
        ``check(params, schema, features)`` raising :class:`ScorerError` for a
        bad use, called when the strategy is loaded.
    execution_traits : ExecutionTraits or mapping, optional
        What the planner is told (:mod:`kuration.core.traits`); default: a
        pool-scoped barrier.

    Raises
    ------
    ExecutionTraitsError
        Invalid ``execution_traits``.
    ValueError
        If ``name`` is taken and ``clobber`` is false.
    """
    info = ScorerInfo(name, factory, bool(needs_buffers), check)
    register_with_traits(
        _SCORERS, "scorer", name, info, clobber=clobber, execution_traits=execution_traits
    )
    return info


def get_scorer(name: str) -> ScorerInfo:
    """The registration of ``name``.

    Raises
    ------
    UnknownNameError
        With close matches.
    """
    return _SCORERS.get(name)


@dataclass(frozen=True)
class ScorerUse:
    """One resolved use of a scorer (plain data): ``name``, ``params``, ``output`` feature."""

    name: str
    params: Mapping[str, Any]
    output: str
    needs_buffers: bool

    def to_dict(self) -> dict[str, Any]:
        """The descriptor recorded in the strategy (config.json) and the run fingerprint."""
        return {
            "name": self.name,
            "params": json.loads(json.dumps(dict(self.params))),
            "output": self.output,
        }


def resolve_scorer(
    use: Mapping[str, Any], schema: SchemaSpec, features: Sequence[str]
) -> ScorerUse:
    """Check one strategy ``scorers`` entry (no data read).

    Raises
    ------
    ScorerError
        An unknown scorer, an output name that is already a feature, or
        parameters its ``check`` refuses.
    """
    name = str(use["name"])
    try:
        info = get_scorer(name)
    except KeyError as exc:
        raise ScorerError(str(exc), scorer=name) from None
    output = str(use.get("output") or name)
    if output in features:
        raise ScorerError(f"output {output!r} is already a feature", scorer=name)
    params = dict(use.get("params") or {})
    if info.check is not None:
        info.check(params, schema, features)
    return ScorerUse(name, params, output, info.needs_buffers)


@dataclass(frozen=True)
class ScorerContext:
    """What a scorer learns of the pool besides the segments.

    Attributes
    ----------
    name : str
    output : str
        The feature the values are written to.
    params : mapping
    segment_ids : tuple of str
        Stable ids (``"<source_id>:<start_idx>"``), pool order.
    schema : SchemaSpec
    buffers : tuple of WindowBuffer or None
        Pool order; only when registered with ``needs_buffers=True``.
    """

    name: str
    output: str
    params: Mapping[str, Any]
    segment_ids: tuple[str, ...]
    schema: SchemaSpec
    buffers: tuple[WindowBuffer, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)


class SegmentScorer(ABC):
    """Base of a whole-pool scorer; implement :meth:`score`."""

    @abstractmethod
    def score(self, segments: Sequence[Segment], ctx: ScorerContext) -> Any:
        """One value per segment.

        Parameters
        ----------
        segments : sequence of Segment, length N
            The whole pool, sorted by ``(source_id, start_idx)``.
        ctx : ScorerContext

        Returns
        -------
        array-like, shape (N,), float
            Finite, or NaN where the segment has no value.  Raise
            :class:`~kuration.errors.ScorerError` with ``source=`` for a
            failure that belongs to one source (that source is then skipped).
        """


def sklearn_neighbors() -> Any:
    """``sklearn.neighbors``, or :class:`MissingExtraError` naming the ``scorers`` extra.

    Raises
    ------
    MissingExtraError
        scikit-learn is not installed.
    """
    try:
        import sklearn.neighbors
    except ImportError as exc:
        raise MissingExtraError(
            'the k-nearest-neighbour scorers need scikit-learn: pip install "kuration-sdk[scorers]"'
        ) from exc
    return sklearn.neighbors


def _feature_matrix(segments: Sequence[Segment], names: Sequence[str]) -> np.ndarray:
    return np.array([[s.features.get(n, np.nan) for n in names] for s in segments], dtype=float)


class NoveltyScorer(SegmentScorer):
    """Embedding novelty: mean distance to the ``k`` nearest other segments.

    Every feature is standardized over the pool (``(x - mean) / std``, a
    constant feature is left out); a segment's value is the mean Euclidean
    distance to its ``k`` nearest neighbours among the other segments
    (scikit-learn :class:`~sklearn.neighbors.NearestNeighbors`, exact search).
    A segment with a NaN feature gets NaN and is nobody's neighbour.

    Parameters
    ----------
    features : sequence of str
        Features spanning the embedding.
    k : int
        Neighbours averaged (default 5).

    Raises
    ------
    ScorerError
        Fewer than ``k + 1`` segments with every feature finite (a whole-pool failure).
    """

    def __init__(self, features: Sequence[str], k: int = 5) -> None:
        self.features = list(features)
        self.k = int(k)

    @staticmethod
    def check(params: Mapping[str, Any], schema: SchemaSpec, features: Sequence[str]) -> None:
        feats = params.get("features")
        if not isinstance(feats, list) or not feats or not all(isinstance(f, str) for f in feats):
            raise ScorerError(
                "params.features must be a non-empty list of feature names", scorer="novelty"
            )
        missing = [f for f in feats if f not in features]
        if missing:
            raise ScorerError(
                f"params.features {missing} are not features computed before "
                f"this scorer ({', '.join(features)})",
                scorer="novelty",
            )
        k = params.get("k", 5)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ScorerError(f"params.k must be an integer >= 1, got {k!r}", scorer="novelty")
        extra = sorted(set(params) - {"features", "k"})
        if extra:
            raise ScorerError(f"unknown params {extra}", scorer="novelty")

    def score(self, segments: Sequence[Segment], ctx: ScorerContext) -> np.ndarray:
        nearest = sklearn_neighbors().NearestNeighbors
        x = _feature_matrix(segments, self.features)
        ok = np.isfinite(x).all(axis=1)
        out = np.full(len(segments), np.nan)
        if ok.sum() < self.k + 1:
            raise ScorerError(
                f"needs at least k + 1 = {self.k + 1} segments with finite "
                f"{self.features}, the pool has {int(ok.sum())}",
                scorer=ctx.name,
            )
        z = x[ok]
        sd = z.std(axis=0)
        keep = sd > 0
        z = (
            (z[:, keep] - z[:, keep].mean(axis=0)) / sd[keep]
            if keep.any()
            else np.zeros((len(z), 1))
        )
        dist, _ = nearest(n_neighbors=self.k, algorithm="brute").fit(z).kneighbors()
        out[ok] = dist.mean(axis=1)
        return out


register_scorer("novelty", NoveltyScorer, check=NoveltyScorer.check)
