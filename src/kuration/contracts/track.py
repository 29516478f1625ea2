"""Track: one entity's timestep sequence, the indivisible output unit."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .media import MediaColumn
from .schema import SchemaSpec
from .segment import Segment
from .tick import Tick, TickTable, table_from_ticks

__all__ = ["Track", "track_from_table", "tracks_from_segment", "tracks_from_ticks"]


@dataclass
class Track:
    """One entity of one source, from its first to its last present tick.

    Attributes
    ----------
    source_id : str
    entity_id : hashable
    start_idx : int
        Index of the first step within the source's grid.
    fields : dict of str to ndarray, shape (L, D), float64
        The entity's field values (NaN where absent or missing).
    present : ndarray, shape (L,), bool
    globals : dict of str to ndarray, shape (L, D), float64
    sample_hz : float
    span_index : int or None
        Set when the track is a sub-span of a longer one.
    meta : dict
        Segment features (read by ``segment:`` modalities) and priority: the
        selected segment's on the count path, the span aggregate on the hours path.
    k0 : int
        Grid index of the source's first tick, so step ``t`` of the track is at
        ``(k0 + start_idx + t) / sample_hz`` seconds.
    ints : dict of str to ndarray, shape (L, D), integer dtype
        Exact values of integer-dtype fields and globals (0 where missing, i.e.
        where ``fields``/``globals`` hold NaN); integer output modalities read
        them, so a ``uint64`` above 2**53 reaches the shard exactly.
    media : dict of str to MediaColumn
        Lazy media columns over the track's steps (frame references, decoded
        by the writer one shard at a time).
    """

    source_id: str
    entity_id: Hashable
    start_idx: int
    fields: dict[str, np.ndarray]
    present: np.ndarray
    sample_hz: float
    globals: dict[str, np.ndarray] = field(default_factory=dict)
    span_index: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    k0: int = 0
    ints: dict[str, np.ndarray] = field(default_factory=dict)
    media: dict[str, MediaColumn] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.present.shape[0])

    @property
    def duration_s(self) -> float:
        return self.n_steps / self.sample_hz

    def records(self) -> Iterator[dict[str, Any]]:
        """Per-timestep dicts (fields merged with globals) for encoders; ``None`` where absent."""
        for t in range(self.n_steps):
            if not self.present[t]:
                yield {}
                continue
            rec = {k: v[t] for k, v in self.fields.items()}
            rec.update({k: v[t] for k, v in self.globals.items()})
            yield rec


def track_from_table(
    table: TickTable,
    entity_index: int,
    first: int,
    last: int,
    span_index: int | None = None,
    meta: dict[str, Any] | None = None,
) -> Track:
    """Cut entity ``entity_index`` of ``table`` over ticks ``[first, last]`` (inclusive)."""
    sl = slice(first, last + 1)
    return Track(
        source_id=table.source_id,
        entity_id=table.entity_ids[entity_index],
        start_idx=first,
        fields={k: v[sl, entity_index].copy() for k, v in table.values.items()},
        present=table.present[sl, entity_index].copy(),
        sample_hz=table.sample_hz,
        globals={k: v[sl].copy() for k, v in table.globals.items()},
        span_index=span_index,
        meta=dict(meta or {}),
        k0=table.k0,
        ints={
            k: v[sl].copy() if v.ndim == 2 else v[sl, entity_index].copy()
            for k, v in table.ints.items()
        },
        media={k: c.slice(first, last + 1) for k, c in table.media.items()},
    )


def tracks_from_ticks(schema: SchemaSpec, ticks: Iterable[Tick], source_id: str) -> list[Track]:
    """One track per entity of a tick stream, each spanning its first to last present tick."""
    table = table_from_ticks(schema, ticks, source_id)
    out = []
    for e in range(table.n_entities):
        idx = np.flatnonzero(table.present[:, e])
        if idx.size:
            out.append(track_from_table(table, e, int(idx[0]), int(idx[-1])))
    return out


def tracks_from_segment(table: TickTable, segment: Segment) -> list[Track]:
    """Count path: one track per entity present in a selected segment's window.

    Each track covers the window ``[start_idx, end_idx)`` and carries the
    segment's features and priority in ``meta`` (what ``segment:`` modalities read).
    """
    meta = {**segment.features, "priority": segment.priority}
    last = min(segment.end_idx, table.n_steps) - 1
    out = []
    for e in range(table.n_entities):
        if table.present[segment.start_idx : last + 1, e].any():
            out.append(track_from_table(table, e, segment.start_idx, last, meta=meta))
    return out
