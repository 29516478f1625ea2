"""The hours candidates of the disk runtime, in a Parquet file rather than in memory.

An hours run cuts every entity's track into spans (``span_seconds``): the quickstart
job makes about 94 candidates a source, 1.4 million over 15,000 sources, which as
columns in memory (:class:`~kuration.selection.candidates.CandidateTable`, about 100
bytes a row) were the largest part of the disk runtime's peak.  The candidate step
builds each chunk of sources' table as before and :meth:`CandidateStore.append`
writes it to one Parquet file (a row group per chunk); the fill
(:mod:`kuration.pipeline.disk.fill`) reads the file in admission order, a page at a
time, and only admitted rows come back to Python as objects.

Each row keeps the table's columns plus what the fill orders by:

* ``rid`` -- the row's place in the whole table (sources sorted, entities in roster
  order, spans in order): what :meth:`CandidateStore.to_table` restores;
* ``tie`` -- the row's rank by (source id, tagged entity id, span index), the order
  :meth:`Candidate.sort_key` breaks equal priorities in; chunks hold successive
  sources, so a chunk's ranks follow the previous chunk's (with ``tie_break: "seed"``
  it is the seeded 63-bit key of :attr:`CandidateTable.tie` instead);
* ``okey`` -- the priority with ``-0.0`` made ``0.0`` (numpy's sort ties them);
* ``etag`` -- the tagged entity id (:func:`~kuration.core.ids.tag_entity_id`), the
  middle part of a candidate's ident;
* ``tagset`` -- an index into :attr:`CandidateStore.tag_sets`, interned over the run.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...core.ids import tag_entity_id
from ...errors import PipelineError
from ...selection.candidates import CandidateTable
from .source_record import text_value, value_text

__all__ = ["CANDIDATE_FILE", "CandidateStore"]

CANDIDATE_FILE = "candidates.parquet"


def _schema(n_features: int) -> pa.Schema:
    dict_str = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            pa.field("rid", pa.int64()),
            pa.field("tie", pa.int64()),
            pa.field("source_id", dict_str),
            pa.field("entity", pa.int32()),
            pa.field("etag", dict_str),
            pa.field("eid", dict_str),
            pa.field("first", pa.int64()),
            pa.field("last", pa.int64()),
            pa.field("span", pa.int32()),
            pa.field("priority", pa.float64()),
            pa.field("okey", pa.float64()),
            pa.field("grp", dict_str),
            pa.field("tagset", pa.int32()),
            pa.field("present", pa.int64()),
            *(pa.field(f"f{j}", pa.float64()) for j in range(n_features)),
        ]
    )


class CandidateStore:
    """A run's candidates in ``<root>/candidates.parquet``, appended a chunk at a time.

    Parameters
    ----------
    root : path
        An existing folder the store owns (the file and the fill's spill files go there).
    feature_names : sequence of str
        The aggregated features, columns ``f0``, ``f1``, ... in this order.

    Attributes
    ----------
    n_rows : int
        Rows written.
    empty_excluded : int
        Spans left out of the appended tables (entity never present), summed.
    tag_sets : list of frozenset of str
        The distinct tag sets, ``tagset`` indexes it (``0`` is the empty set).
    """

    @classmethod
    def temporary(cls, feature_names: Sequence[str]) -> CandidateStore:
        """A store in a new temporary folder (:func:`tempfile.mkdtemp`, so ``TMPDIR``
        chooses the disk), removed when the store is garbage-collected (or at exit)."""
        root = Path(tempfile.mkdtemp(prefix="kuration-candidates-"))
        store = cls(root, feature_names)
        weakref.finalize(store, shutil.rmtree, root, True)
        return store

    def __init__(self, root: str | Path, feature_names: Sequence[str]) -> None:
        self.root = Path(root)
        self.path = self.root / CANDIDATE_FILE
        self.feature_names = tuple(feature_names)
        self.schema = _schema(len(self.feature_names))
        self.n_rows = 0
        self.empty_excluded = 0
        self.tag_sets: list[frozenset[str]] = [frozenset()]
        self._tag_code: dict[frozenset[str], int] = {frozenset(): 0}
        self._pooled: list[str] = []
        self._groups: dict[str, str] = {}
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self.path, self.schema)

    # ---- writing -------------------------------------------------------------------------

    def append(self, table: CandidateTable) -> None:
        """Write ``table`` (the candidates of sources after every source appended so far).

        Raises
        ------
        PipelineError
            The store is closed, the table's features differ, or its sources do not come
            after the ones already appended.
        """
        if self._writer is None:
            raise PipelineError("the candidate store is closed", step="fill")
        if table.feature_names != self.feature_names:
            raise PipelineError("candidate tables of different features", step="fill")
        pooled = table.pooled_sources()
        if pooled and self._pooled and pooled[0] <= self._pooled[-1]:
            raise PipelineError(f"candidates of {pooled[0]!r} out of source order", step="fill")
        self.empty_excluded += table.empty_excluded
        n = len(table)
        if n:
            self._writer.write_table(pa.Table.from_batches([self._batch(table)], self.schema))
        self._pooled.extend(pooled)
        for sid, group in table.source_groups().items():
            self._groups.setdefault(sid, group)
        self.n_rows += n

    def _batch(self, t: CandidateTable) -> pa.RecordBatch:
        n, base = len(t), self.n_rows
        s_rank, e_rank = t.sort_ranks()
        tie = np.empty(n, np.int64)
        tie[np.lexsort((np.maximum(t.span, 0), e_rank, s_rank))] = base + np.arange(n)
        if t.tie is not None:  # tie_break "seed": the seeded key orders equal priorities
            tie = t.tie
        sizes = np.array([len(e) for e in t.entity_ids], np.int64)
        roster_at = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        ents = [e for roster in t.entity_ids for e in roster]
        etags, eids = [tag_entity_id(e) for e in ents], [value_text(e) for e in ents]
        tmap = np.array([self._intern(s) for s in t.tag_sets], np.int32)
        cols = {
            "rid": pa.array(base + np.arange(n, dtype=np.int64)),
            "tie": pa.array(tie),
            "source_id": _dict(t.source, t.source_ids),
            "entity": pa.array(t.entity.astype(np.int32)),
            "etag": _dict(roster_at[t.source] + t.entity, etags),
            "eid": _dict(roster_at[t.source] + t.entity, eids),
            "first": pa.array(t.first),
            "last": pa.array(t.last),
            "span": pa.array(t.span.astype(np.int32)),
            "priority": pa.array(t.priority),
            "okey": pa.array(t.priority + 0.0),  # -0.0 + 0.0 is 0.0
            "grp": _dict(t.group, t.groups),
            "tagset": pa.array(tmap[t.tags]),
            "present": pa.array(t.present),
        }
        for j in range(len(self.feature_names)):
            cols[f"f{j}"] = pa.array(np.ascontiguousarray(t.features[:, j]))
        return pa.RecordBatch.from_pydict(cols, schema=self.schema)

    def _intern(self, tags: frozenset[str]) -> int:
        code = self._tag_code.setdefault(tags, len(self.tag_sets))
        if code == len(self.tag_sets):
            self.tag_sets.append(tags)
        return code

    def close(self) -> None:
        """Finish the file (appending is over); reading works from here on."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # ---- what the split step reads -------------------------------------------------------

    def pooled_sources(self) -> list[str]:
        """The sources with at least one candidate, sorted."""
        return list(self._pooled)

    def source_groups(self) -> dict[str, str]:
        """Each source's first group label, in row order (sources without one left out)."""
        return dict(self._groups)

    def __len__(self) -> int:
        return self.n_rows

    # ---- reading back --------------------------------------------------------------------

    def read(self, sources: Sequence[str] | None = None) -> pa.Table:
        """The rows of ``sources`` (default: all), in ``rid`` order.

        Raises
        ------
        PipelineError
            The store is still being written.
        """
        if self._writer is not None:
            raise PipelineError("the candidate store is still being written", step="fill")
        got = pq.read_table(self.path)
        if sources is not None:
            got = got.filter(
                pc.is_in(got["source_id"].cast(pa.string()), pa.array(list(sources), pa.string()))
            )
        return got.sort_by("rid")

    def to_table(self, source_ids: Sequence[str]) -> CandidateTable:
        """The rows of ``source_ids`` as a :class:`CandidateTable` (what the appended
        tables held, labels interned again; see :func:`table_of` for the rosters).

        Parameters
        ----------
        source_ids : sequence of str, sorted
            The table's sources (those without a candidate too).

        Returns
        -------
        CandidateTable
            ``empty_excluded`` is the store's (the whole run's) count.
        """
        return table_of(self.read(source_ids), self, source_ids)


def _dict(codes: np.ndarray, labels: Sequence[str]) -> pa.DictionaryArray:
    """``labels[codes]`` dictionary-encoded; a negative code is null."""
    idx = np.asarray(codes, np.int32)
    mask = idx < 0
    indices = pa.array(np.where(mask, 0, idx), pa.int32(), mask=mask if mask.any() else None)
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(labels), pa.string()))


def _codes(
    col: pa.ChunkedArray, labels: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """A dictionary column's values as codes into ``labels`` (default: its sorted distinct
    non-null values); -1 for null."""
    flat = col.cast(pa.string()).combine_chunks()
    if labels is None:
        labels = sorted(set(pc.unique(flat).drop_null().to_pylist()))
    codes = pc.index_in(flat, value_set=pa.array(list(labels), pa.string()))
    return codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), list(labels)


def rosters_of(rows: pa.Table, n_sources: int, src: np.ndarray) -> list[list[Any]]:
    """Each source's roster as far as ``rows`` show it: entity ``k`` of source ``s`` is the
    id of a row of ``s`` with entity index ``k``; an entity without a row is None (no
    row of the table refers to it)."""
    ent = rows["entity"].to_numpy().astype(np.int64)
    eid_col = pc.dictionary_encode(rows["eid"].cast(pa.string()).combine_chunks())
    out: list[list[Any]] = [[] for _ in range(n_sources)]
    if not ent.size:
        return out
    labels = eid_col.dictionary.to_pylist()
    codes = eid_col.indices.to_numpy()
    pairs = np.unique(np.stack([src, ent, codes.astype(np.int64)], axis=1), axis=0)
    decoded: dict[int, Any] = {}
    for s, k, c in pairs.tolist():
        roster = out[s]
        roster.extend([None] * (k + 1 - len(roster)))
        if c not in decoded:
            decoded[c] = text_value(labels[c])
        roster[k] = decoded[c]
    return out


def table_of(rows: pa.Table, store: CandidateStore, source_ids: Sequence[str]) -> CandidateTable:
    """Rows read from ``store`` (all of sources among ``source_ids``) as a
    :class:`CandidateTable` over ``source_ids`` (rosters by :func:`rosters_of`).

    Raises
    ------
    PipelineError
        A row's source is not among ``source_ids``.
    """
    src, sids = _codes(rows["source_id"], source_ids)
    if src.size and src.min() < 0:
        raise PipelineError("candidate rows of a source outside the table", step="fill")
    grp, groups = _codes(rows["grp"])
    tags = rows["tagset"].to_numpy().astype(np.int64)
    used = np.unique(tags)
    tmap = np.zeros(len(store.tag_sets), np.int64)
    tmap[used] = np.arange(used.size)
    n_feat = len(store.feature_names)
    features = np.empty((rows.num_rows, n_feat))
    for j in range(n_feat):
        features[:, j] = rows[f"f{j}"].to_numpy()
    return CandidateTable(
        source_ids=sids,
        entity_ids=rosters_of(rows, len(sids), src),
        source=src,
        entity=rows["entity"].to_numpy().astype(np.int64),
        first=rows["first"].to_numpy(),
        last=rows["last"].to_numpy(),
        span=rows["span"].to_numpy(),
        priority=rows["priority"].to_numpy(),
        feature_names=store.feature_names,
        features=features,
        groups=groups,
        group=grp,
        tag_sets=[store.tag_sets[c] for c in used.tolist()] or [frozenset()],
        tags=tmap[tags],
        present=rows["present"].to_numpy(),
        empty_excluded=store.empty_excluded,
    )
