"""Fill candidates as columns: one row per track or span, no Python object per row.

A long track cut into spans (``span_seconds``) makes many candidates: 30 hours
of one aircraft at 5-minute spans are 360 of them, a week of one AIS ship at
the same spans two thousand.  As frozen :class:`Candidate` objects (a features
dict, a tag set, an ident tuple each) they cost about a kilobyte apiece, which
made the fill's pool, not the data, the peak of a long streamed run.
:class:`CandidateTable` keeps them as numpy columns instead: source and entity
as indices into small rosters, group and tag set as indices into interned
tuples, features as one ``(n, F)`` array -- about 60 bytes per span plus 8 per
feature.  :class:`Candidate` objects are made only on demand: the admitted
ones, or a pool read back by :mod:`kuration.tools.review`
(:class:`CandidateRows`, :class:`DecisionMap`).

:func:`build_candidate_table` cuts every entity's extent into spans and
aggregates the segments overlapping each span with ``reduceat`` over the
overlapping runs; :func:`aggregate_segments` is the same arithmetic for one
span, bit for bit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from ..contracts.segment import Segment
from ..core.ids import tag_entity_id
from ..errors import PipelineError
from .decisions import REASONS, DecisionMap
from .presence import present_ticks
from .segment_columns import SegmentColumns
from .span_overlap import overlap_runs as _overlap_runs
from .span_overlap import reduce_runs as _reduce_runs
from .span_overlap import vetoed as _vetoed

__all__ = [
    "REASONS",
    "Candidate",
    "CandidateRows",
    "CandidateTable",
    "DecisionMap",
    "aggregate_segments",
    "build_candidate_table",
]

_AGG: dict[str, Callable[[np.ndarray], Any]] = {"max": np.max, "mean": np.mean, "min": np.min}


Ident = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A track or span that may be admitted: ticks ``[first, last]`` of ``entity_id`` in ``source_id``."""

    source_id: str
    entity_id: Any
    entity_index: int
    first: int
    last: int
    priority: float
    features: Mapping[str, float]
    span_index: int | None = None
    group: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def n_steps(self) -> int:
        return self.last - self.first + 1

    def sort_key(self) -> tuple[float, str, str, int]:
        return (-self.priority, self.source_id, tag_entity_id(self.entity_id), self.span_index or 0)

    def ident(self) -> Ident:
        span = -1 if self.span_index is None else self.span_index
        return (self.source_id, tag_entity_id(self.entity_id), span)


class CandidateTable(Sequence[Candidate]):
    """Fill candidates as columns, one row per track or span (a read-only sequence of Candidate).

    Parameters
    ----------
    source_ids : sequence of str
        The sources; ``source`` indexes it.
    entity_ids : sequence of sequence
        Per source, its entity ids in roster order; ``entity`` indexes ``entity_ids[source]``
        (and is the candidate's ``entity_index``).
    source, entity : ndarray, shape (n,), int
    first, last : ndarray, shape (n,), int64, ticks
        The span ``[first, last]`` (inclusive).
    span : ndarray, shape (n,), int
        Span index within the track, -1 for a whole track.
    priority : ndarray, shape (n,), float64
        ``-inf`` where no segment gave a finite priority (never admitted).
    feature_names : sequence of str
    features : ndarray, shape (n, F), float64, optional
        Aggregated features, column ``j`` named ``feature_names[j]`` (NaN when none).
    groups : sequence of str
        Group labels; ``group`` indexes it, -1 for none.
    group : ndarray, shape (n,), int, optional
    tag_sets : sequence of frozenset of str
        Distinct tag sets (``"name=label"``); ``tags`` indexes it.  Default: only the empty set.
    tags : ndarray, shape (n,), int, optional
    present : ndarray, shape (n,), int64, ticks, optional
        Ticks of each row at which its entity is present (default: every tick,
        ``last - first + 1``).
    empty_excluded : int
        Spans left out of the table because their entity is present at none of their
        ticks (:func:`build_candidate_table`; not rows of the table).
    tie : ndarray, shape (n,), int64, optional
        A seeded order key (:func:`~kuration.selection.draws.seeded_ranks`) that breaks
        equal priorities before the names do (job key ``tie_break: "seed"``); None
        (the default): ties go by source, entity and span.

    Raises
    ------
    PipelineError
        A column's length differs from ``source``'s, or an index is out of range.
    """

    __slots__ = (
        "_idents",
        "_objects",
        "_ranks",
        "empty_excluded",
        "entity",
        "entity_ids",
        "feature_names",
        "features",
        "first",
        "group",
        "groups",
        "last",
        "present",
        "priority",
        "source",
        "source_ids",
        "span",
        "tag_sets",
        "tags",
        "tie",
    )

    def __init__(
        self,
        *,
        source_ids: Sequence[str],
        entity_ids: Sequence[Sequence[Any]],
        source: np.ndarray,
        entity: np.ndarray,
        first: np.ndarray,
        last: np.ndarray,
        span: np.ndarray,
        priority: np.ndarray,
        feature_names: Sequence[str] = (),
        features: np.ndarray | None = None,
        groups: Sequence[str] = (),
        group: np.ndarray | None = None,
        tag_sets: Sequence[frozenset[str]] = (frozenset(),),
        tags: np.ndarray | None = None,
        present: np.ndarray | None = None,
        empty_excluded: int = 0,
        tie: np.ndarray | None = None,
    ) -> None:
        n = len(source)
        self.source_ids = tuple(source_ids)
        self.entity_ids = tuple(tuple(e) for e in entity_ids)
        self.source = np.asarray(source, np.int32)
        self.entity = np.asarray(entity, np.int32)
        self.first = np.asarray(first, np.int64)
        self.last = np.asarray(last, np.int64)
        self.span = np.asarray(span, np.int32)
        self.priority = np.asarray(priority, np.float64)
        self.feature_names = tuple(feature_names)
        shape = (n, len(self.feature_names))
        self.features = np.full(shape, np.nan) if features is None else np.asarray(features)
        self.groups = tuple(groups)
        self.group = np.full(n, -1, np.int32) if group is None else np.asarray(group, np.int32)
        self.tag_sets = tuple(tag_sets)
        self.tags = np.zeros(n, np.int32) if tags is None else np.asarray(tags, np.int32)
        if present is None:  # present at every tick (zeros when the shapes are off: refused)
            same = self.first.shape == self.last.shape
            present = self.last - self.first + 1 if same else np.zeros(n, np.int64)
        self.present = np.asarray(present, np.int64)
        self.empty_excluded = int(empty_excluded)
        self.tie = None if tie is None else np.asarray(tie, np.int64)
        self._objects: Sequence[Candidate] | None = None
        self._ranks: tuple[np.ndarray, np.ndarray] | None = None
        self._idents: np.ndarray | None = None
        self._check(n)

    def _check(self, n: int) -> None:
        cols = ("entity", "first", "last", "span", "priority", "group", "tags", "present")
        bad = [c for c in cols if getattr(self, c).shape != (n,)]
        bad += ["tie"] if self.tie is not None and self.tie.shape != (n,) else []
        if self.features.shape != (n, len(self.feature_names)):
            bad.append("features")
        if bad:
            raise PipelineError(f"candidate columns {bad} do not have {n} rows", step="fill")
        for col, size in (
            ("source", len(self.source_ids)),
            ("group", len(self.groups)),
            ("tags", len(self.tag_sets)),
        ):
            v = getattr(self, col)
            low = -1 if col == "group" else 0
            if v.size and (v.min() < low or v.max() >= size):
                raise PipelineError(f"candidate column {col!r} indexes past its {size} labels")
        sizes = np.array([len(e) for e in self.entity_ids], np.int64)
        if sizes.size != len(self.source_ids):
            raise PipelineError(
                f"{sizes.size} entity rosters for {len(self.source_ids)} sources", step="fill"
            )
        if n and (self.entity.min() < 0 or np.any(self.entity >= sizes[self.source])):
            raise PipelineError("candidate column 'entity' indexes past a source's roster")

    @classmethod
    def of(cls, candidates: Sequence[Candidate] | CandidateTable) -> CandidateTable:
        """``candidates`` itself when it is a table, else :meth:`from_candidates`."""
        return candidates if isinstance(candidates, cls) else cls.from_candidates(candidates)

    @classmethod
    def from_candidates(cls, candidates: Sequence[Candidate]) -> CandidateTable:
        """The columns of ``candidates``; reading a row back returns the object itself."""
        sids = sorted({c.source_id for c in candidates})
        s_of = {s: i for i, s in enumerate(sids)}
        rosters: list[dict[str, int]] = [{} for _ in sids]
        ents: list[list[Any]] = [[] for _ in sids]
        g_of: dict[str, int] = {}
        t_of: dict[frozenset[str], int] = {frozenset(): 0}
        n = len(candidates)
        cols: dict[str, np.ndarray] = {
            k: np.empty(n, np.int64) for k in ("source", "entity", "first", "last", "span")
        }
        cols.update(priority=np.empty(n), group=np.empty(n, np.int64), tags=np.empty(n, np.int64))
        for i, c in enumerate(candidates):
            s = s_of[c.source_id]
            e = rosters[s].setdefault(tag_entity_id(c.entity_id), len(ents[s]))
            if e == len(ents[s]):
                ents[s].append(c.entity_id)
            cols["source"][i], cols["entity"][i] = s, e
            cols["first"][i], cols["last"][i] = c.first, c.last
            cols["span"][i] = -1 if c.span_index is None else c.span_index
            cols["priority"][i] = c.priority
            cols["group"][i] = -1 if c.group is None else g_of.setdefault(c.group, len(g_of))
            cols["tags"][i] = t_of.setdefault(frozenset(c.tags), len(t_of))
        table = cls(
            source_ids=sids,
            entity_ids=ents,
            groups=list(g_of),
            tag_sets=list(t_of),
            source=cols["source"],
            entity=cols["entity"],
            first=cols["first"],
            last=cols["last"],
            span=cols["span"],
            priority=cols["priority"],
            group=cols["group"],
            tags=cols["tags"],
        )
        table._objects = candidates
        return table

    # -- the sequence of Candidate --------------------------------------------------------

    def __len__(self) -> int:
        return int(self.source.size)

    @overload
    def __getitem__(self, i: int) -> Candidate: ...
    @overload
    def __getitem__(self, i: slice) -> list[Candidate]: ...
    def __getitem__(self, i: int | slice) -> Candidate | list[Candidate]:
        if isinstance(i, slice):
            return [self.candidate(j) for j in range(len(self))[i]]
        return self.candidate(range(len(self))[i])

    def __iter__(self) -> Iterator[Candidate]:
        return (self.candidate(i) for i in range(len(self)))

    def candidate(self, i: int) -> Candidate:
        """Row ``i`` as a :class:`Candidate` (made now; the same values every time)."""
        if self._objects is not None:
            return self._objects[i]
        s, e, k, g = int(self.source[i]), int(self.entity[i]), int(self.span[i]), int(self.group[i])
        return Candidate(
            self.source_ids[s],
            self.entity_ids[s][e],
            e,
            int(self.first[i]),
            int(self.last[i]),
            float(self.priority[i]),
            dict(zip(self.feature_names, self.features[i].tolist(), strict=True)),
            None if k < 0 else k,
            self.groups[g] if g >= 0 else None,
            self.tag_sets[int(self.tags[i])],
        )

    # -- columns the fill reads -----------------------------------------------------------

    @property
    def n_steps(self) -> np.ndarray:
        """Ticks per row, shape (n,), int64."""
        return self.last - self.first + 1

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (the rosters and interned labels not counted)."""
        cols = ("source", "entity", "first", "last", "span", "priority", "features", "group")
        return sum(getattr(self, c).nbytes for c in cols) + self.tags.nbytes + self.present.nbytes

    def _rank(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's source rank among ``source_ids`` and entity rank within its source, by
        ``tag_entity_id`` (the order :meth:`Candidate.sort_key` compares them in)."""
        if self._ranks is None:
            order = sorted(range(len(self.source_ids)), key=self.source_ids.__getitem__)
            s_rank = np.empty(len(order), np.int64)
            s_rank[order] = np.arange(len(order))
            # every roster's entities ranked within their source, flattened
            flat: list[int] = []
            for ents in self.entity_ids:
                tags = [tag_entity_id(e) for e in ents]
                r = np.empty(len(tags), np.int64)
                r[sorted(range(len(tags)), key=tags.__getitem__)] = np.arange(len(tags))
                flat.extend(r.tolist())
            sizes = np.array([len(e) for e in self.entity_ids], np.int64)
            offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
            e_rank = np.asarray(flat, np.int64)[offsets[self.source] + self.entity]
            self._ranks = (s_rank[self.source], e_rank)
        return self._ranks

    def sort_ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """Shape (n,) int64 each: every row's source rank (by id) and entity rank within
        its source (by :func:`~kuration.core.ids.tag_entity_id`), the keys after the
        priority in :meth:`Candidate.sort_key`."""
        return self._rank()

    def ident_codes(self) -> np.ndarray:
        """Shape (n,), int64: equal exactly where :meth:`Candidate.ident` is equal."""
        if self._idents is None:
            s, e = self._rank()
            span = self.span.astype(np.int64)
            order = np.lexsort((span, e, s))
            new = np.zeros(order.size, bool)
            for k in (span, e, s):
                new[1:] |= np.diff(k[order]) != 0
            new[:1] = True
            codes = np.empty(order.size, np.int64)
            codes[order] = np.cumsum(new) - 1
            self._idents = codes
        return self._idents

    def ident(self, i: int) -> Ident:
        """Row ``i``'s :meth:`Candidate.ident` (source id, tagged entity id, span or -1)."""
        if self._objects is not None:
            return self._objects[i].ident()
        s = int(self.source[i])
        ent = self.entity_ids[s][int(self.entity[i])]
        return (self.source_ids[s], tag_entity_id(ent), int(self.span[i]))

    def order(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` sorted as :meth:`Candidate.sort_key` sorts them (stable), the seeded
        :attr:`tie` key first among equal priorities when the table has one."""
        s, e = self._rank()
        span0 = np.maximum(self.span[rows], 0)
        keys: tuple[np.ndarray, ...] = (span0, e[rows], s[rows])
        if self.tie is not None:
            keys = (*keys, self.tie[rows])
        return rows[np.lexsort((*keys, -self.priority[rows]))]

    def source_groups(self) -> dict[str, str]:
        """Each source's first group label, in row order (sources without one are left out)."""
        labelled = np.flatnonzero(self.group >= 0)
        src, first = np.unique(self.source[labelled], return_index=True)
        g = self.group[labelled[first]]
        return {
            self.source_ids[s]: self.groups[k]
            for s, k in zip(src.tolist(), g.tolist(), strict=True)
        }

    def pooled_sources(self) -> list[str]:
        """The sources with at least one candidate, sorted."""
        return sorted(self.source_ids[s] for s in np.unique(self.source).tolist())


class CandidateRows(Sequence[Candidate]):
    """Some rows of a :class:`CandidateTable`, in the given order, read as Candidate objects."""

    __slots__ = ("rows", "table")

    def __init__(self, table: CandidateTable, rows: np.ndarray) -> None:
        self.table = table
        self.rows = rows

    def __len__(self) -> int:
        return int(self.rows.size)

    @overload
    def __getitem__(self, i: int) -> Candidate: ...
    @overload
    def __getitem__(self, i: slice) -> list[Candidate]: ...
    def __getitem__(self, i: int | slice) -> Candidate | list[Candidate]:
        if isinstance(i, slice):
            return [self.table.candidate(r) for r in self.rows[i].tolist()]
        return self.table.candidate(int(self.rows[i]))

    def __iter__(self) -> Iterator[Candidate]:
        return (self.table.candidate(r) for r in self.rows.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CandidateRows({len(self)} rows)"


# -- building the table from segments --------------------------------------------------------


def aggregate_segments(
    segments: Sequence[Segment],
    first: int,
    last: int,
    how: str,
    features: Sequence[str],
    entity: str | None = None,
    veto: bool = False,
) -> tuple[float, dict[str, float]]:
    """Priority and features of the span ``[first, last]`` from the segments overlapping it.

    ``how`` is max, mean or min.  With ``entity`` (a tagged id) only the track-scoped
    segments of that entity count.  Only finite priorities count; a span with
    none gets -inf (never admitted).  Features aggregate their finite values
    (NaN when none).  The arithmetic is :func:`build_candidate_table`'s own (a
    mean is ``np.add.reduceat`` over the values divided by their count), so the
    one span computed here is bit for bit the one computed there; it can differ
    from ``np.mean`` in the last bit, whose summation order numpy does not fix.
    With ``veto``, one overlapping segment of priority ``-inf`` (a filter failed it)
    makes the span's priority ``-inf`` too.
    """
    over = [
        s
        for s in segments
        if s.start_idx <= last and s.end_idx > first and (entity is None or s.entity == entity)
    ]
    idx, off = np.arange(len(over)), np.array([0, len(over)])
    pr = np.array([s.priority for s in over], dtype=np.float64)
    p = _reduce_runs(pr, idx, off, how)[0]
    if veto and _vetoed(pr, idx, off)[0]:
        p = -math.inf
    feats: dict[str, float] = {}
    for name in features:
        v = np.array([s.features.get(name, np.nan) for s in over], dtype=np.float64)
        feats[name] = float(_reduce_runs(v, idx, off, how)[0])
    return (-math.inf if math.isnan(p) else float(p)), feats


def _spans(
    first: np.ndarray, last: np.ndarray, min_steps: int, span_steps: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """One source's spans: entity index, span index (-1: whole track), first and last tick,
    and the number of tracks shorter than ``min_steps``."""
    length = last - first + 1
    keep = np.flatnonzero(length >= min_steps)
    too_short = int(length.size - keep.size)
    if span_steps is None:
        return keep, np.full(keep.size, -1, np.int64), first[keep], last[keep], too_short
    n = (length[keep] + span_steps - 1) // span_steps
    e_idx = np.repeat(keep, n)
    off = np.r_[0, np.cumsum(n)].astype(np.int64)
    k = np.arange(off[-1], dtype=np.int64) - np.repeat(off[:-1], n)
    a = first[e_idx] + k * span_steps
    return e_idx, k, a, np.minimum(a + span_steps - 1, last[e_idx]), too_short


class _Interner:
    """Group labels and tag sets of a table being built, each stored once."""

    def __init__(self) -> None:
        self.groups: dict[str, int] = {}
        self.tag_sets: dict[frozenset[str], int] = {frozenset(): 0}
        self._sets: list[frozenset[str]] = [frozenset()]
        self._unions: dict[tuple[int, ...], int] = {}

    def group(self, label: str | None) -> int:
        return -1 if label is None else self.groups.setdefault(label, len(self.groups))

    def tags(self, tags: frozenset[str]) -> int:
        code = self.tag_sets.setdefault(tags, len(self.tag_sets))
        if code == len(self._sets):
            self._sets.append(tags)
        return code

    def union(self, codes: tuple[int, ...]) -> int:
        """The code of the union of the tag sets ``codes`` (sorted, distinct, non-empty)."""
        got = self._unions.get(codes)
        if got is None:
            union = frozenset().union(*(self._sets[c] for c in codes))
            got = self._unions[codes] = self.tags(union)
        return got


def _interned(codes: np.ndarray, roster: Sequence[Any], put: Callable[[Any], int]) -> np.ndarray:
    """``codes`` (into ``roster``, -1 for none) as interned codes, each label interned in the
    order of its first row, as interning row by row would."""
    used, first = np.unique(codes, return_index=True)
    table = np.full(len(roster) + 1, -1, np.int64)  # the last slot answers code -1
    for c in used[np.argsort(first, kind="stable")].tolist():
        if c >= 0:
            table[c] = put(roster[c])
    return table[codes]


def _span_tags(
    segs: SegmentColumns, idx: np.ndarray, off: np.ndarray, intern: _Interner
) -> np.ndarray:
    """Each span's tag set code: the union of its overlapping segments' ``name=label`` tags."""
    seg_code = _interned(segs.tag, segs.tag_sets, intern.tags)
    n = off.size - 1
    span_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(off))
    code = seg_code[idx]
    has = code > 0
    width = int(code.max(initial=0)) + 1
    pairs = np.unique(span_of[has] * width + code[has])  # by span, then code
    sp, cd = pairs // width, pairs % width
    out = np.zeros(n, np.int64)
    if pairs.size:
        starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]])
        cds = cd.tolist()
        bounds = [*starts.tolist(), pairs.size]
        out[sp[starts]] = [intern.union(tuple(cds[i:j])) for i, j in itertools.pairwise(bounds)]
    return out


def _span_groups(
    segs: SegmentColumns, idx: np.ndarray, off: np.ndarray, intern: _Interner
) -> np.ndarray:
    """Each span's group code: the first labelled overlapping segment's group, -1 if none."""
    seg_g = _interned(segs.group, segs.groups, intern.group)
    g = seg_g[idx]
    has = g >= 0
    cf = np.r_[0, np.cumsum(has)]
    pos = np.flatnonzero(has)
    n_has = cf[off[1:]] - cf[off[:-1]]
    out = np.full(off.size - 1, -1, np.int64)
    sel = n_has > 0
    out[sel] = g[pos[cf[off[:-1]][sel]]]
    return out


_COLUMNS = ("source", "entity", "first", "last", "span", "priority", "group", "tags", "present")

#: One source's spans: source index, entity, span index, first, last, its segments' rows
#: (into the build's :class:`SegmentColumns`), present ticks.
_Part = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _first_last(exts: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Each track's first and last tick (int64): the columns of tracks held by column (the
    disk pool's ``TrackColumns``: int64 arrays ``first``, ``last``), else one per track."""
    first, last = getattr(exts, "first", None), getattr(exts, "last", None)
    if isinstance(first, np.ndarray) and isinstance(last, np.ndarray):
        return first.astype(np.int64, copy=False), last.astype(np.int64, copy=False)
    first = np.fromiter((e.first for e in exts), np.int64, len(exts))
    return first, np.fromiter((e.last for e in exts), np.int64, len(exts))


def _entity_ids(exts: Sequence[Any]) -> Sequence[Any]:
    """Each track's entity id: the column of tracks held by column, else one per track."""
    ids = getattr(exts, "entity_ids", None)
    return ids if isinstance(ids, tuple) else [e.entity_id for e in exts]


def build_candidate_table(
    extents: Mapping[str, Sequence[Any]],
    segments_by_source: Mapping[str, Sequence[Segment] | SegmentColumns],
    *,
    how: str,
    features: Sequence[str],
    min_steps: int = 1,
    span_steps: int | None = None,
    group_of: Callable[[str], str | None] | None = None,
    veto: bool = False,
) -> tuple[CandidateTable, int]:
    """One candidate row per entity extent (or per span of ``span_steps``), as columns.

    Each row's priority and features aggregate the segments overlapping it as
    :func:`aggregate_segments` does, computed for all of a source's spans at once
    (``reduceat`` over the overlapping runs); no Python object is made per span.
    Rows come source by source (sorted ids), entity by entity in roster order,
    span by span.

    Parameters
    ----------
    extents : mapping of source id to sequence of TrackExtent
        ``entity_id``, ``first``, ``last`` of each entity, in roster order.
    segments_by_source : mapping of source id to segments sorted by ``start_idx``
        (track-scoped ones, :attr:`Segment.entity` set, sorted by ``start_idx`` within
        each entity: a span then aggregates only its own entity's segments), as
        :class:`Segment` objects or as :class:`SegmentColumns` (the same rows as columns)
    how : {"max", "mean", "min"}
    features : sequence of str
        Feature names to aggregate (a segment without one counts as NaN).
    min_steps : int
        Whole tracks shorter than this are left out (counted in the second return value).
    span_steps : int, optional
        Subdivide each track into consecutive spans of this many steps.
    group_of : callable, optional
        Source id to group label; without it a span takes the first group
        label of its overlapping segments.
    veto : bool
        A span overlapping any segment of priority ``-inf`` (one a filter failed) gets
        ``-inf`` itself (the job's ``filter_scope: "span"``); by default only finite
        segment priorities aggregate, so such a span keeps its other segments' priority.

    Returns
    -------
    table : CandidateTable
        With each row's present ticks (``present``, from the extents' ``gaps``); a span
        where its entity is present at no tick is no candidate, and is counted in
        ``table.empty_excluded``.  Span indices keep their place on the track (span ``k``
        starts at ``first + k * span_steps``), so an excluded span leaves a hole.
    too_short : int

    Raises
    ------
    KeyError
        ``how`` is not max, mean or min.
    """
    _AGG[how]  # an unknown aggregate is a KeyError, as before
    names = tuple(features)
    sids = sorted(extents)
    intern = _Interner()
    parts: list[_Part] = []
    held: list[SegmentColumns] = []
    too_short = empty = n_held = 0
    for s_idx, sid in enumerate(sids):
        exts = extents[sid]
        first, last = _first_last(exts)
        ids = _entity_ids(exts)
        e_idx, k, a, b, short = _spans(first, last, min_steps, span_steps)
        too_short += short
        present = present_ticks(exts, e_idx, a, b)
        keep = np.flatnonzero(present > 0)
        empty += present.size - keep.size
        if keep.size < present.size:
            e_idx, k, a, b, present = (x[keep] for x in (e_idx, k, a, b, present))
        segs = _columns(segments_by_source.get(sid, ()), names)
        rows = np.arange(n_held, n_held + len(segs), dtype=np.int64)
        held.append(segs)
        n_held += len(segs)
        by_ent = segs.by_entity()  # track-scoped windows: a span sees its own entity's only
        track = e_idx.size > 0 and by_ent is not None
        bounds: list[int] = (
            np.flatnonzero(np.r_[True, e_idx[1:] != e_idx[:-1], True]).tolist() if track else []
        )
        none = np.zeros(0, np.int64)
        for lo, hi in itertools.pairwise(bounds):
            c = slice(lo, hi)
            ent = by_ent.get(tag_entity_id(ids[int(e_idx[lo])])) if by_ent else None
            ent_rows = none if ent is None else rows[ent]
            parts.append((s_idx, e_idx[c], k[c], a[c], b[c], ent_rows, present[c]))
        if e_idx.size and not track:
            parts.append((s_idx, e_idx, k, a, b, rows, present))
    every = SegmentColumns.concat(held, names) if held else _columns((), names)
    cols = _aggregate_sources(parts, every, how, names, intern, group_of is None, veto)
    if group_of is not None:
        codes = np.array([intern.group(group_of(sids[p[0]])) for p in parts], np.int64)
        cols["group"] = np.repeat(codes, [p[1].size for p in parts])
    feats = cols.pop("features") if parts else None
    table = CandidateTable(
        source_ids=sids,
        entity_ids=[list(_entity_ids(extents[sid])) for sid in sids],
        feature_names=names,
        features=feats,
        groups=list(intern.groups),
        tag_sets=list(intern.tag_sets),
        empty_excluded=empty,
        **cols,
    )
    return table, too_short


def _columns(segs: Sequence[Segment] | SegmentColumns, names: tuple[str, ...]) -> SegmentColumns:
    """``segs`` as columns of the features ``names``."""
    if isinstance(segs, SegmentColumns):
        return segs.select(names)
    return SegmentColumns.of_segments(segs, names)


def _aggregate_sources(
    parts: Sequence[_Part],
    every: SegmentColumns,
    how: str,
    names: tuple[str, ...],
    intern: _Interner,
    by_label: bool,
    veto: bool = False,
) -> dict[str, np.ndarray]:
    """The columns of every source's spans ``(source index, entity, span, first, last,
    segments)``, aggregated in one pass: each source's ticks are shifted past the previous
    source's so that all spans and segments form one sorted axis on which a span overlaps
    only its own source's segments.  Sources of windows of several lengths (ends out of
    order) are aggregated one by one instead."""
    if not parts:
        return {c: np.zeros(0, np.int64) for c in _COLUMNS}
    n_span = np.array([p[1].size for p in parts])
    n_seg = np.array([p[5].size for p in parts])
    segs = every.take(np.concatenate([p[5] for p in parts]))
    a, b = np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts])
    starts, ends = segs.start, segs.end
    span_part = np.repeat(np.arange(len(parts)), n_span)
    seg_part = np.repeat(np.arange(len(parts)), n_seg)
    lo = np.minimum.reduceat(a, np.r_[0, np.cumsum(n_span)[:-1]])
    hi = np.maximum.reduceat(b, np.r_[0, np.cumsum(n_span)[:-1]])
    np.minimum.at(lo, seg_part, starts)
    np.maximum.at(hi, seg_part, ends)
    width = hi - lo + 2
    shift = np.r_[0, np.cumsum(width)[:-1]] - lo
    ends_s = ends + shift[seg_part]
    cols: dict[str, np.ndarray] = {
        "source": np.repeat(np.array([p[0] for p in parts], np.int64), n_span),
        "entity": np.concatenate([p[1] for p in parts]),
        "span": np.concatenate([p[2] for p in parts]),
        "first": a,
        "last": b,
        "present": np.concatenate([p[6] for p in parts]),
    }
    if np.all(ends_s[1:] >= ends_s[:-1]):  # every source of one window length
        a_s, b_s = a + shift[span_part], b + shift[span_part]
        s_s = starts + shift[seg_part]
        cols.update(_aggregate(segs, a_s, b_s, how, names, intern, by_label, s_s, ends_s, veto))
        return cols
    each = [
        _aggregate(every.take(p[5]), p[3], p[4], how, names, intern, by_label, veto=veto)
        for p in parts
    ]
    cols.update({c: np.concatenate([x[c] for x in each]) for c in each[0]})
    return cols


def _aggregate(
    segs: SegmentColumns,
    a: np.ndarray,
    b: np.ndarray,
    how: str,
    names: tuple[str, ...],
    intern: _Interner,
    by_label: bool,
    starts: np.ndarray | None = None,
    ends: np.ndarray | None = None,
    veto: bool = False,
) -> dict[str, np.ndarray]:
    """Priority, features, tag set and group label of the spans ``[a, b]`` over ``segs``
    (one source's, or every source's on one shifted axis with their ``starts``/``ends``)."""
    if starts is not None and ends is not None:
        idx, off = _overlap_runs(starts, ends, a, b)
    elif len(segs):
        idx, off = _overlap_runs(segs.start, segs.end, a, b)
    else:
        idx, off = np.zeros(0, np.intp), np.zeros(a.size + 1, np.int64)
    seg_prio = segs.priority
    prio = _reduce_runs(seg_prio, idx, off, how)
    prio[np.isnan(prio)] = -math.inf
    if veto:
        prio[_vetoed(seg_prio, idx, off)] = -math.inf
    feats = np.empty((a.size, len(names)))
    for j in range(len(names)):
        vals = np.ascontiguousarray(segs.features[:, j], np.float64)
        feats[:, j] = _reduce_runs(vals, idx, off, how)
    tags = np.zeros(a.size, np.int64)
    tagged = np.array([bool(t) for t in segs.tag_sets], bool)
    if len(segs) and bool(tagged[segs.tag].any()):
        tags = _span_tags(segs, idx, off, intern)
    group = np.full(a.size, -1, np.int64)
    if by_label and bool(np.any(segs.group >= 0)):
        group = _span_groups(segs, idx, off, intern)
    return {"priority": prio, "features": feats, "tags": tags, "group": group}
