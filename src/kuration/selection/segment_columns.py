"""One source's scored segments as columns, the input :func:`build_candidate_table` aggregates.

A pool read back from disk already holds its segments as columns; turning each row into a
:class:`~kuration.contracts.segment.Segment` only for the candidate table to turn them back
into arrays cost more than the aggregation itself.  :class:`SegmentColumns` is the shared
form: the in-memory path converts its segments with :meth:`SegmentColumns.of_segments`, the
disk path builds it straight from its Arrow batches.  Tag sets, groups and entity keys are
codes into small per-object rosters; the candidate table interns them in first-occurrence
order, the order the per-segment code interned them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..contracts.segment import Segment

__all__ = ["SegmentColumns"]


@dataclass(frozen=True, slots=True)
class SegmentColumns:
    """Segments as columns, in segment order (sorted by ``start`` within each entity).

    Attributes
    ----------
    start, end : ndarray, shape (n,), int64
        Each segment's ``start_idx`` and ``end_idx`` (ticks).
    priority : ndarray, shape (n,), float64
    feature_names : tuple of str
    features : ndarray, shape (n, F), float64
        Column ``j`` is ``feature_names[j]``; NaN where a segment has none.
    tag : ndarray, shape (n,), int64
        Index into ``tag_sets`` (each a frozenset of ``"name=label"``).
    tag_sets : tuple of frozenset of str
    group : ndarray, shape (n,), int64
        Index into ``groups``, -1 for none.
    groups : tuple of str
    entity : ndarray, shape (n,), int64
        Index into ``entities`` (the segment's track key), -1 for a source-scoped segment.
    entities : tuple of str
    """

    start: np.ndarray
    end: np.ndarray
    priority: np.ndarray
    feature_names: tuple[str, ...]
    features: np.ndarray
    tag: np.ndarray
    tag_sets: tuple[frozenset[str], ...]
    group: np.ndarray
    groups: tuple[str, ...]
    entity: np.ndarray
    entities: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.start.size)

    @classmethod
    def of_segments(cls, segs: Sequence[Segment], names: Sequence[str]) -> SegmentColumns:
        """The columns of ``segs`` for the features ``names`` (NaN where one is missing)."""
        n = len(segs)
        tag_of: dict[frozenset[str], int] = {frozenset(): 0}
        group_of: dict[str, int] = {}
        ent_of: dict[str, int] = {}
        tag = np.zeros(n, np.int64)
        group = np.full(n, -1, np.int64)
        entity = np.full(n, -1, np.int64)
        for i, s in enumerate(segs):
            if s.tags:
                ts = frozenset(f"{k}={v}" for k, v in s.tags.items())
                tag[i] = tag_of.setdefault(ts, len(tag_of))
            if s.group is not None:
                group[i] = group_of.setdefault(s.group, len(group_of))
            if s.entity is not None:
                entity[i] = ent_of.setdefault(s.entity, len(ent_of))
        feats = np.empty((n, len(names)))
        for j, name in enumerate(names):
            feats[:, j] = np.fromiter((s.features.get(name, np.nan) for s in segs), np.float64, n)
        return cls(
            start=np.fromiter((s.start_idx for s in segs), np.int64, n),
            end=np.fromiter((s.end_idx for s in segs), np.int64, n),
            priority=np.fromiter((s.priority for s in segs), np.float64, n),
            feature_names=tuple(names),
            features=feats,
            tag=tag,
            tag_sets=tuple(tag_of),
            group=group,
            groups=tuple(group_of),
            entity=entity,
            entities=tuple(ent_of),
        )

    def take(self, idx: np.ndarray) -> SegmentColumns:
        """The rows ``idx`` (same rosters)."""
        return SegmentColumns(
            self.start[idx],
            self.end[idx],
            self.priority[idx],
            self.feature_names,
            self.features[idx],
            self.tag[idx],
            self.tag_sets,
            self.group[idx],
            self.groups,
            self.entity[idx],
            self.entities,
        )

    def select(self, names: Sequence[str]) -> SegmentColumns:
        """These columns with the features ``names`` (NaN for a name it lacks)."""
        if tuple(names) == self.feature_names:
            return self
        feats = np.full((len(self), len(names)), np.nan)
        where = {n: j for j, n in enumerate(self.feature_names)}
        for j, name in enumerate(names):
            if name in where:
                feats[:, j] = self.features[:, where[name]]
        return SegmentColumns(
            self.start,
            self.end,
            self.priority,
            tuple(names),
            feats,
            self.tag,
            self.tag_sets,
            self.group,
            self.groups,
            self.entity,
            self.entities,
        )

    @classmethod
    def concat(cls, parts: Sequence[SegmentColumns], names: Sequence[str]) -> SegmentColumns:
        """``parts`` one after the other, their rosters joined (codes shifted; a label may
        then appear under two codes, which interning in first-occurrence order absorbs)."""
        parts = [p.select(names) for p in parts]
        if len(parts) == 1:
            return parts[0]

        def joined(col: str, roster: str) -> tuple[np.ndarray, tuple[Any, ...]]:
            sizes = np.array([len(getattr(p, roster)) for p in parts], np.int64)
            shift = np.r_[0, np.cumsum(sizes)[:-1]]
            codes = [
                np.where(getattr(p, col) >= 0, getattr(p, col) + k, -1)
                for p, k in zip(parts, shift.tolist(), strict=True)
            ]
            items = tuple(x for p in parts for x in getattr(p, roster))
            return np.concatenate(codes) if codes else np.zeros(0, np.int64), items

        tag, tag_sets = joined("tag", "tag_sets")
        group, groups = joined("group", "groups")
        entity, entities = joined("entity", "entities")
        cat = np.concatenate
        return cls(
            start=cat([p.start for p in parts]) if parts else np.zeros(0, np.int64),
            end=cat([p.end for p in parts]) if parts else np.zeros(0, np.int64),
            priority=cat([p.priority for p in parts]) if parts else np.zeros(0),
            feature_names=tuple(names),
            features=cat([p.features for p in parts]) if parts else np.zeros((0, len(names))),
            tag=tag,
            tag_sets=tag_sets,
            group=group,
            groups=groups,
            entity=entity,
            entities=entities,
        )

    def by_entity(self) -> dict[str, np.ndarray] | None:
        """Row indices of each entity key (in row order), or None when a row has no entity."""
        if not len(self) or bool(np.any(self.entity < 0)):
            return None
        order = np.argsort(self.entity, kind="stable")
        codes = self.entity[order]
        cut = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True])
        out: dict[str, list[np.ndarray]] = {}
        for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True):
            out.setdefault(self.entities[int(codes[lo])], []).append(order[lo:hi])
        return {k: v[0] if len(v) == 1 else np.sort(np.concatenate(v)) for k, v in out.items()}
