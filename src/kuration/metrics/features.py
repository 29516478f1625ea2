"""FeatureEngine: all of a strategy's metrics, over one window or every window of a source."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from operator import attrgetter
from typing import Any

import numpy as np

from ..contracts.buffer import (
    WindowBatch,
    WindowBuffer,
    build_window,
    entity_column,
    entity_columns,
    entity_table,
    stacked_tracks,
)
from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment
from ..contracts.tick import TickTable
from ..core.registry import Registry
from ..core.traits import ExecutionTraits, checked_traits, declare_traits
from ..errors import StrategyError
from .dsl.compile import CompiledMetric, compile_metric
from .dsl.frame import Frame

__all__ = ["FeatureEngine", "register_metric", "registered_metric", "registered_metrics"]

MetricFn = Callable[[WindowBuffer], float]
_METRICS: Registry[MetricFn] = Registry("registered metric")

# a segment's fields, read by C calls instead of a Python generator per segment
_ENTITY, _START, _END = attrgetter("entity"), attrgetter("start_idx"), attrgetter("end_idx")


def register_metric(
    name: str,
    *,
    clobber: bool = False,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
) -> Callable[[MetricFn], MetricFn]:
    """Decorator registering a per-segment metric ``fn(WindowBuffer) -> float`` under ``name``.

    Register at module scope of an importable module so worker processes see it.
    ``execution_traits`` (see :mod:`kuration.core.traits`) default to a
    window-local, fusible, stateless map.

    Raises
    ------
    ValueError
        If ``name`` is already registered to another function and ``clobber`` is false.
    ExecutionTraitsError
        Invalid ``execution_traits``, raised when the decorator is created
        (nothing is registered).
    """
    traits = checked_traits("metric", name, execution_traits)

    def deco(fn: MetricFn) -> MetricFn:
        _METRICS.register(name, fn, clobber=clobber)
        declare_traits("metric", name, traits)
        return fn

    return deco


def registered_metrics() -> tuple[str, ...]:
    """Names of every ``@register_metric`` function, sorted."""
    return _METRICS.names()


def registered_metric(name: str) -> MetricFn | None:
    """The function registered under ``name``, or None."""
    try:
        return _METRICS.get(name)
    except KeyError:
        return None


def _finite_or_nan(value: Any) -> float:
    """A registered metric's value as a float; ±inf (no usable value) becomes NaN, as for
    compiled metrics, so every feature is finite or NaN."""
    v = float(value)
    return v if math.isfinite(v) else math.nan


class FeatureEngine:
    """Compiles a strategy's ``define`` block and evaluates it per window or per source.

    Metrics compile in ``define`` order; ``feature:<name>`` may read any metric
    defined before it.  Every metric of a window (or of a whole batch of
    windows) is evaluated on one shared frame, so a stage prefix common to
    several metrics (``field:position | speed``) is computed once.

    Parameters
    ----------
    define : mapping of str to str
        Feature name to metric expression, in evaluation order.
    schema : SchemaSpec
    registered : sequence of str
        Names of ``@register_metric`` functions to compute as features of the same name.

    Raises
    ------
    MetricCompileError
        If any expression fails to compile, or reads a feature that is unknown
        or defined later (before any data is read).
    StrategyError
        If a registered metric name is unknown or collides with a defined one.

    Notes
    -----
    The batched passes over whole sources (in memory, on workers, on the disk pool) raise
    glibc's mmap and trim thresholds once per process before scoring
    (:func:`kuration.metrics.alloc.retain_freed_memory`; ``KURATION_RETAIN_FREED_MEMORY=0``
    turns it off), so the per-source temporaries are not faulted in again for every
    source; a streamed run, which holds one window at a time, leaves the allocator alone.
    """

    #: Most samples (windows x ticks x entities) evaluated at once by :meth:`score_table`;
    #: more windows are processed in chunks that share the source-level work.
    chunk_samples: int = 1 << 22

    def __init__(
        self, define: Mapping[str, str], schema: SchemaSpec, registered: Sequence[str] = ()
    ) -> None:
        self.schema = schema
        self.define = dict(define)
        readable: dict[str, CompiledMetric | None] = dict.fromkeys(self.define)
        self.compiled: dict[str, CompiledMetric] = {}
        for n, e in self.define.items():
            m = compile_metric(e, schema, name=n, features=readable)
            self.compiled[n] = m
            readable[n] = m
        self.registered: dict[str, MetricFn] = {}
        for n in registered:
            if n in self.compiled:
                raise StrategyError(f"registered metric {n!r} collides with a defined feature")
            try:
                self.registered[n] = _METRICS.get(n)
            except KeyError as exc:
                raise StrategyError(str(exc)) from None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return (*self.compiled, *self.registered)

    def _run(self, frame: Frame) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for n, m in self.compiled.items():
            out[n] = frame.features[n] = m.grid(frame)
        return out

    def score_window(self, buf: WindowBuffer) -> dict[str, float]:
        """Every feature of one window (NaN where a metric had no valid sample)."""
        grid = self._run(Frame(WindowBatch.from_buffer(buf)))
        out = {n: float(v[0]) for n, v in grid.items()}
        for n, fn in self.registered.items():
            out[n] = _finite_or_nan(fn(buf))
        return out

    def score_table(
        self, table: TickTable, starts: Sequence[int] | np.ndarray, length: int
    ) -> dict[str, np.ndarray]:
        """The defined features of every window ``[s, s + length)`` of ``table`` at once.

        Windows are strided views of the table's arrays; no Python code runs
        per window.  Stages that only look back a few ticks run once on the
        whole table; many windows are evaluated in chunks of at most
        :attr:`chunk_samples` samples.  Registered metrics are not included
        (they need a WindowBuffer each; :meth:`score_segments` runs them).

        Returns
        -------
        dict of str to ndarray, shape (W,), float64
            One value per start, in the order of ``starts``.

        Raises
        ------
        ValueError
            If a window runs past the table.
        """
        batch = WindowBatch.from_table(table, starts, length)
        if batch.starts.size == 0:
            return {n: np.zeros(0) for n in self.compiled}
        grid = batch.grid
        # bound the window-level temporaries: chunks of windows share the source-level work
        per = max(1, self.chunk_samples // (int(length) * max(table.n_entities, 1)))
        if per >= grid.size:  # one chunk: the batch's own grid, no second batch to build
            out = self._run(Frame(batch))
            return {n: v[batch.index] for n, v in out.items()}
        shared: dict[Any, Any] = {}
        parts: dict[str, list[np.ndarray]] = {n: [] for n in self.compiled}
        for i in range(0, grid.size, per):
            sub = WindowBatch.from_table(table, grid[i : i + per], length)
            for n, v in self._run(Frame(sub, shared)).items():
                parts[n].append(v[sub.index])
        return {n: np.concatenate(v)[batch.index] for n, v in parts.items()}

    def score_segments(self, table: TickTable, segments: Sequence[Segment]) -> None:
        """Fill ``seg.features`` for every segment of ``table`` (in place).

        Segments are grouped by length and each group is scored in one batch
        (:meth:`score_table`); the result equals :meth:`score_window` on each
        segment's :func:`~kuration.contracts.buffer.build_window`.  Track-scoped
        segments (``seg.entity`` set) are scored over a table of their entity alone,
        so every metric reduces over that entity only: the tracks of all entities laid
        end to end in one pass (:meth:`_score_tracks`), or, when a metric names an
        entity (``id:``, ``dist_to:``), one :func:`~kuration.contracts.buffer.entity_table`
        per entity, cut to the ticks its windows cover.  Both give the same bits.
        """
        entities = list(map(_ENTITY, segments))
        if entities.count(None) == len(entities):  # scene windows only: no grouping loop
            by_entity: dict[str | None, list[Segment]] = {None: list(segments)} if segments else {}
        else:
            by_entity = {}
            for seg, entity in zip(segments, entities, strict=True):
                by_entity.setdefault(entity, []).append(seg)
        tracks = {e: segs for e, segs in by_entity.items() if e is not None}
        if None in by_entity:
            self._score_grouped(table, by_entity[None], 0)
        if len(tracks) > 1 and self._fusible:
            self._score_tracks(table, tracks)
        else:
            columns = entity_columns(table) if len(tracks) > 1 else None
            for entity, segs in tracks.items():
                lo = min(s.start_idx for s in segs)
                hi = max(s.end_idx for s in segs)
                self._score_grouped(entity_table(table, entity, lo, hi, columns), segs, lo)
        if self.registered:
            for seg in segments:
                buf = build_window(table, seg.start_idx, seg.end_idx, entity=seg.entity)
                for n, fn in self.registered.items():
                    seg.features[n] = _finite_or_nan(fn(buf))

    @cached_property
    def _fusible(self) -> bool:
        """Whether track windows of many entities can share one pass over stacked tracks:
        no metric names an entity (``id:``, ``dist_to:``), which a stacked table cannot
        resolve per track."""
        return not any(
            st.op in ("id", "dist_to") for m in self.compiled.values() for st in m.stages
        )

    def _score_tracks(self, table: TickTable, tracks: Mapping[str, Sequence[Segment]]) -> None:
        """Track-scoped windows of many entities in one pass: every entity's span of ticks
        laid end to end (:func:`~kuration.contracts.buffer.stacked_tracks`), windows moved
        onto the stacked ticks.  Every map looks back only and a window drops the ticks it
        looked back over, so each window reads its own entity's ticks alone, as on
        :func:`~kuration.contracts.buffer.entity_table`."""
        columns = entity_columns(table)
        cols = [columns[e] if e in columns else entity_column(table, e) for e in tracks]
        flat = [seg for segs in tracks.values() for seg in segs]
        count = len(flat)
        starts = np.fromiter((s.start_idx for s in flat), dtype=np.int64, count=count)
        ends = np.fromiter((s.end_idx for s in flat), dtype=np.int64, count=count)
        sizes = np.fromiter((len(segs) for segs in tracks.values()), np.int64, len(tracks))
        first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        block = np.repeat(np.arange(len(tracks)), sizes)
        lo = np.minimum.reduceat(starts, first)
        rel = starts - lo[block]
        spans = list(zip(cols, lo.tolist(), np.maximum.reduceat(ends, first).tolist(), strict=True))
        # keep windows of one stride on one grid: pad each block to a multiple of it
        stacked, offsets = stacked_tracks(table, spans, int(np.gcd.reduce(rel)))
        self._score_grouped(stacked, flat, 0, rel + offsets[block])

    def _score_grouped(
        self,
        table: TickTable,
        segments: Sequence[Segment],
        shift: int,
        at: np.ndarray | None = None,
    ) -> None:
        """:meth:`score_segments` over windows of ``table``, whose tick 0 is the segments'
        tick ``shift`` (or whose windows start at ``at``, one tick of ``table`` a segment)."""
        count = len(segments)
        starts = np.fromiter(map(_START, segments), dtype=np.int64, count=count)
        ends = np.fromiter(map(_END, segments), dtype=np.int64, count=count)
        lengths = ends - starts
        if at is not None:
            starts, shift = at, 0
        if not self.compiled:
            return
        names = list(self.compiled)
        for length in dict.fromkeys(lengths.tolist()):  # in order of first appearance
            pick = np.flatnonzero(lengths == length)
            values = self.score_table(table, starts[pick] - shift, length)
            # one row of Python floats per segment: a zip per segment, not a dict per feature
            rows = np.column_stack([values[n] for n in names]).tolist()
            segs = segments if pick.size == count else [segments[i] for i in pick.tolist()]
            for seg, row in zip(segs, rows, strict=True):
                seg.features.update(zip(names, row, strict=False))  # rows are names long

    def to_dict(self) -> dict[str, Any]:
        return {"define": dict(self.define), "registered": list(self.registered)}
