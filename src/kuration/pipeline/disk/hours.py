"""Hours runs on the disk-backed pool (``pool="disk"`` with an hours budget).

The in-memory hours run (:mod:`kuration.pipeline.run.steps`) holds every
scored segment as a Python object from scoring to ``config.json``.  On this
runtime (:mod:`kuration.pipeline.disk.pool`) four steps change and one is
added; the rest (split, shard plan, resume, stage, publish, manifest,
commit) are the same functions over the same inputs, so the shards and the
manifest are byte-identical to the in-memory run's:

1. ``read+segment+features`` -- each source is scored into its own
   checkpointed partition on the run's executor (the count runtime's score
   stage, :mod:`kuration.pipeline.disk.score`; the executor's workers run it,
   and later write the shards); the partition's
   commit also records what scoring learned of the source
   (:class:`~kuration.pipeline.run.scoring.SourceInfo`: extents of its tracks,
   counts, fingerprint), so a rerun that reuses a partition does not read its
   source.  ``r.scoring`` is a :class:`DiskScoringResult`: every source, no
   segment.
2. ``index`` + ``bin`` -- the partitions are loaded into the DuckDB index;
   filters, bin edges, tag labels and the method's priority of *every* segment
   are computed there (:func:`~kuration.pipeline.disk.index.rank_pool_sql`), as
   :func:`~kuration.selection.select.apply_strategy` computes them in memory.
3. ``candidates`` -- the index is read back in canonical order, one source at a
   time: a chunk of sources' segments, kept as the Arrow batches' columns
   (:class:`~kuration.selection.segment_columns.SegmentColumns`, no object per row), are
   cut into candidates by :func:`~kuration.selection.candidates.build_candidate_table` and
   dropped; each chunk's table is appended to a
   :class:`~kuration.pipeline.disk.candidates.CandidateStore` (a Parquet file), so the
   candidates are never all in memory.  Each source's tracks are read from its
   partition commit for the chunk (:mod:`kuration.pipeline.disk.source_record`).
   ``fill`` then runs over the store (:func:`~kuration.pipeline.disk.fill.fill_on_disk`,
   the in-memory fill in SQL order): only admitted candidates come back as objects.
4. ``summary`` (after ``fill``) -- the parts of ``config.json`` that read the
   pool (feature histograms against the admitted spans, the top and bottom
   ranked windows) are computed in SQL, equal to
   :func:`~kuration.pipeline.run.summary.feature_distributions` and
   :func:`~kuration.pipeline.run.summary.ranking_examples`; the index is closed.

Checkpoints live in ``checkpoint_dir`` when one is given (kept, reused by any
later run with the same run key), else in the destination's staging namespace
(``.kuration_staging/pool``): a killed run leaves them there for ``resume``,
and the commit removes them with the rest of the staging area.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import itertools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...contracts.segment import Segment
from ...core.executors import worker_environment
from ...core.ids import tag_entity_id
from ...core.progress import emit
from ...errors import EmptyPoolError, PipelineError
from ...output.commit import SPLITS, STAGING_NAME
from ...selection.candidates import build_candidate_table
from ...selection.constraints import source_group
from ...selection.fill import FillResult
from ...selection.segment_columns import SegmentColumns
from ...selection.strategy import Strategy
from ..run.reread import reread
from ..run.scoring import ScoringResult, SourceInfo, _checked_sources
from ..run.span_rules import apply_span_rules
from ..run.steps import step_fill
from ..run.summary import bin_edges
from ..spec.plan import StageTelemetry
from .candidates import CandidateStore
from .checkpoint import PartitionCommit, StageCheckpoint
from .fill import fill_on_disk
from .index import _col, _q, apply_filter, bin_pool, connect, load_partitions, rank_pool_sql
from .pool import DISK_RUNTIME, INDEX_MEMORY, INDEX_MEMORY_MIN, plan_identity
from .score import score_stage
from .source_record import describe_source, loaded_tracks, source_info_kept
from .tags import tag_pool

if TYPE_CHECKING:
    from ..run.steps import HoursRun, Step

__all__ = [
    "DiskScoringResult",
    "disk_session",
    "disk_steps",
    "uses_disk_pool",
]

#: rows per Arrow batch when the index is read back source by source
_READ_ROWS = 8192
#: segments whose sources' candidates are built together (then joined to the others)
_CHUNK_SEGMENTS = 4096

# ---- the run's disk state -------------------------------------------------------------------


@dataclass
class DiskScoringResult(ScoringResult):
    """A :class:`ScoringResult` whose segments stay in the disk pool: ``segments`` is
    empty, ``sources`` complete, and ``n_pool`` the number of scored segments."""

    n_pool: int = 0

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "segments": self.n_pool}


@dataclass
class _DiskHours:
    """The disk runtime's state across the steps of one hours run."""

    ck: StageCheckpoint
    memory_limit: str
    commits: dict[str, PartitionCommit] = field(default_factory=dict)
    con: Any = None
    label_sets: dict[str, list[str]] = field(default_factory=dict)
    distributions: dict[str, Any] = field(default_factory=dict)
    examples: dict[str, Any] = field(default_factory=dict)
    unidentified: list[str] = field(default_factory=list)  # sources never reused

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def reopen(self) -> Any:
        """The index again after :meth:`close` (the database file this run built)."""
        if self.con is None:
            self.con = connect(self.ck.dir.parent, self.memory_limit, fresh=False)
        return self.con


def uses_disk_pool(r: HoursRun) -> bool:
    """Whether the plan of ``r`` runs its pool on the disk runtime."""
    return r.plan is not None and r.plan.stage("features").runtime == DISK_RUNTIME


def _run_key(r: HoursRun) -> dict[str, Any]:
    from ..._version import __version__
    from ...core.plugins import run_code, used_names

    return {
        "format": "kuration-disk-hours/1",
        "strategy": r.strategy.to_dict(),
        "schema": r.schema.to_dict(),
        "adapter": r.adapter.to_dict(),
        "segmenter": r.segmenter.to_dict(),
        "components": {
            "kuration": __version__,
            **run_code(used_names(r.strategy.to_dict(), r.adapter.name, "none"), r.plugins),
        },
        "batch_rows": int(r.opts.stream_batch_rows),
        "plan": plan_identity(r.plan),
    }


@contextmanager
def disk_session(r: HoursRun) -> Iterator[None]:
    """The disk runtime's state for the steps of ``r`` (nothing when its plan runs in
    memory); the index is closed at the end, however the steps end."""
    if not uses_disk_pool(r):
        yield
        return
    given = r.opts.checkpoint_dir
    root = Path(given) if given is not None else r.root / STAGING_NAME / "pool"
    index = r.index_bytes or INDEX_MEMORY  # set when a memory_budget chose the pool
    limit = f"{max(int(index), INDEX_MEMORY_MIN) // 2**20}MiB"
    r.disk = _DiskHours(StageCheckpoint(root, _run_key(r), "score"), limit)
    try:
        yield
    finally:
        r.disk.close()


def _state(r: HoursRun) -> _DiskHours:
    if not isinstance(r.disk, _DiskHours):
        raise PipelineError("a disk-pool step ran outside disk_session", step="score")
    return r.disk


# ---- step 1: score into checkpointed partitions ---------------------------------------------


def _skip_reason(info: SourceInfo, window: int) -> str:
    """Why a source yields no segment, in the words of the in-memory path."""
    if info.n_steps < window:
        return f"shorter than one window ({info.n_steps} ticks < {window})"
    return "no window holds an entity"


def step_disk_score(r: HoursRun) -> list[StageTelemetry]:
    """Score every source into its own checkpointed partition (reused when its key
    matches), recording its :class:`SourceInfo` in the partition's meta."""
    d = _state(r)
    r.started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    uris = _checked_sources(r.sources, 1, r.opts.on_error)
    r.adapter.assign_source_ids(uris)  # unique ids, before any source is read
    emit(r.progress, "scoring", "start", total=len(uris))
    t0 = time.perf_counter()
    infos: dict[str, SourceInfo] = {}

    shared: dict[Any, Any] = {}

    def keep(uri: str, c: PartitionCommit) -> PartitionCommit:
        # the record becomes a SourceInfo now (its tracks stay in the commit file) and the
        # commit kept for the index drops it: no source's record is held for long
        info = source_info_kept(d.ck, c, shared)
        infos[info.source_id] = info
        return dataclasses.replace(c, meta={"source_id": info.source_id, "uri": info.uri})

    scored = score_stage(
        d.ck,
        r.adapter,
        uris,
        r.segmenter,
        r.strategy,
        r.schema,
        batch_rows=int(r.opts.stream_batch_rows),
        on_error=r.opts.on_error,
        durable=bool(r.opts.durable),
        describe=describe_source,
        progress=r.progress,
        keep=keep,
        executor=r.executor,
        env=worker_environment(r.plugins, r.include_entry_points),
    )
    wall = time.perf_counter() - t0
    emit(r.progress, "scoring", "complete", total=len(uris))
    skipped: dict[str, str] = {}
    for info in infos.values():
        if not info.n_segments:
            skipped[info.source_id] = _skip_reason(info, r.segmenter.window_steps)
    n_pool = scored.n_pool
    if n_pool == 0:
        raise EmptyPoolError(
            f"no segments: all {len(uris)} sources failed, were shorter than one window "
            "or had no entity in any window",
            errors={**scored.errors, **skipped},
        )
    d.commits = scored.commits
    d.unidentified = list(scored.unidentified)
    timing = {"read+segment+features": wall}
    ex = dict(scored.execution)
    r.scoring = DiskScoringResult([], infos, dict(scored.errors), skipped, timing, ex, n_pool)
    for seam in ("transforms", "scorers"):  # they run inside scoring
        emit(r.progress, seam, "start", total=0)
        emit(r.progress, seam, "complete", total=0)
    island = r.plan.stage("features").island if r.plan is not None else None
    return [scored.telemetry(d.ck, wall, len(uris), int(r.opts.stream_batch_rows), island=island)]


# ---- step 2: index, filters, bins, tags and every segment's priority ------------------------


def step_disk_rank(r: HoursRun) -> list[StageTelemetry]:
    """Load the partitions into the index and rank every segment there, as
    :func:`~kuration.selection.select.apply_strategy` does in memory (``bin_edges``)."""
    d, st = _state(r), r.strategy
    n_pool = r.pool().summary()["segments"]
    emit(r.progress, "selection", "start", total=len(SPLITS))
    t0 = time.perf_counter()
    d.con = connect(d.ck.dir.parent, d.memory_limit)
    load_partitions(d.con, d.ck, d.commits, len(st.feature_names))
    t1 = time.perf_counter()
    for entry in st.filters:
        apply_filter(d.con, st, entry, lambda sid: reread(r.adapter, r.pool().sources[sid]))
    r.edges = bin_pool(d.con, st) if st.bin_axes else {}
    d.label_sets = tag_pool(d.con, st) if st.tags else {}
    rank_pool_sql(d.con, st, r.opts.seed)
    parts = len(d.commits)
    d.commits = {}  # loaded: the index holds what the later steps read of the partitions
    # closed (so checkpointed to its file) and reopened by the next step: DuckDB lets go
    # of the pages the load and the ranking held, and reads back what it needs
    d.close()
    t2 = time.perf_counter()
    island = r.plan.stage("bin").island if r.plan is not None else None
    return [
        StageTelemetry("index", t1 - t0, n_pool, n_pool, parts, island=island),
        StageTelemetry("bin", t2 - t1, n_pool, n_pool, island=island),
    ]


# ---- step 3: candidates, one source at a time ------------------------------------------------


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[Any]]:
    """A column as int64 codes into its distinct values (-1 for null) and those values."""
    enc = col.dictionary_encode()
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, enc.dictionary.to_pylist()


def _tag_codes(
    n: int, labels: Sequence[np.ndarray], tags: Mapping[str, Sequence[str]]
) -> tuple[np.ndarray, tuple[frozenset[str], ...]]:
    """Each row's tag set (``"name=label"`` of its non-null labels) as a code into a roster."""
    combo = np.zeros(n, np.int64)
    for lab, t in zip(labels, tags, strict=True):  # mixed radix: label + 1, 0 for none
        combo = combo * (len(tags[t]) + 1) + (lab + 1)
    uniq, code = np.unique(combo, return_inverse=True)
    roster = []
    for c in uniq.tolist():
        digits = []
        for t in reversed(list(tags)):
            c, d = divmod(c, len(tags[t]) + 1)
            digits.append((t, d - 1))
        roster.append(frozenset(f"{t}={tags[t][d]}" for t, d in digits if d >= 0))
    return code.astype(np.int64).reshape(n), tuple(roster)


def _segments(
    batch: pa.RecordBatch, st: Strategy, tags: Mapping[str, Sequence[str]], groups: dict[str, Any]
) -> Iterator[tuple[str, SegmentColumns]]:
    """``(source_id, columns)`` of each run of one source's rows in one batch read back from
    the index (no Python object per row)."""
    names = tuple(st.feature_names)
    nf, nt = len(names), len(tags)
    n = batch.num_rows
    if not n:
        return
    sid_code, sids = _codes(batch.column(0))
    start = batch.column(1).to_numpy().astype(np.int64)
    end = batch.column(2).to_numpy().astype(np.int64)
    prio = batch.column(3).to_numpy(zero_copy_only=False).astype(np.float64)
    feats = np.empty((n, nf))
    for j in range(nf):
        feats[:, j] = batch.column(4 + j).fill_null(math.nan).to_numpy(zero_copy_only=False)
    labels = [
        batch.column(4 + nf + k).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        for k in range(nt)
    ]
    tag, tag_sets = _tag_codes(n, labels, tags)
    ent, ents = _codes(batch.column(4 + nf + nt))
    ents_t = tuple(ents)
    rule = st.group
    cut = np.flatnonzero(np.r_[True, sid_code[1:] != sid_code[:-1], True]).tolist()
    for lo, hi in itertools.pairwise(cut):
        s = sids[int(sid_code[lo])]
        if s not in groups:
            groups[s] = source_group(rule, s) if rule is not None else None
        g = groups[s]
        yield (
            s,
            SegmentColumns(
                start[lo:hi],
                end[lo:hi],
                prio[lo:hi],
                names,
                feats[lo:hi],
                tag[lo:hi],
                tag_sets,
                np.full(hi - lo, -1 if g is None else 0, np.int64),
                () if g is None else (g,),
                ent[lo:hi],
                ents_t,
            ),
        )


def _by_source(
    con: Any, st: Strategy, tags: Mapping[str, Sequence[str]]
) -> Iterator[tuple[str, SegmentColumns]]:
    """``(source_id, segments)`` for each source with segments, in canonical order, read
    back from the index :data:`_READ_ROWS` canonical rows (``rn``) at a time, so that
    DuckDB sorts one such range per query rather than the whole pool (one source's
    segments held at a time)."""
    cols = ["source_id", "start_idx", "end_idx", "prio"]
    cols += [f"f{j}" for j in range(len(st.feature_names))]
    cols += [f"t{k}" for k in range(len(tags))]
    cols += ["entity"]
    sql = f"SELECT {', '.join(cols)} FROM pool WHERE rn >= ? AND rn < ? ORDER BY rn"
    n = int(_q(con, "SELECT count(*) FROM pool")[0][0])
    names = tuple(st.feature_names)
    groups: dict[str, Any] = {}
    cur: str | None = None
    pieces: list[SegmentColumns] = []
    for a in range(0, n, _READ_ROWS):
        for batch in con.sql(sql, params=[a, a + _READ_ROWS]).to_arrow_table().to_batches():
            for sid, seg in _segments(batch, st, tags, groups):
                if sid != cur:
                    if cur is not None:
                        yield cur, SegmentColumns.concat(pieces, names)
                    cur, pieces = sid, []
                pieces.append(seg)
    if cur is not None:
        yield cur, SegmentColumns.concat(pieces, names)


def step_disk_candidates(r: HoursRun) -> dict[str, Any]:
    """Cut tracks (or spans) into candidates from the index, a chunk of sources (about
    :data:`_CHUNK_SEGMENTS` segments) at a time, each chunk's table appended to a
    :class:`~kuration.pipeline.disk.candidates.CandidateStore` (a Parquet file)."""
    d, pool = _state(r), r.pool()
    min_steps = max(1, int(np.ceil(r.sel.min_track_seconds * r.hz)))
    build = functools.partial(
        build_candidate_table,
        how=r.sel.clip_aggregate,
        features=r.strategy.feature_names,
        min_steps=min_steps,
        span_steps=r.span_steps,
        group_of=r.group_fn,
        veto=r.sel.filter_scope == "span",
    )
    store = CandidateStore.temporary(r.strategy.feature_names)
    stream = _by_source(d.reopen(), r.strategy, d.label_sets)
    nxt = next(stream, None)
    too_short = 0
    exts: dict[str, Any] = {}
    segs_of: dict[str, SegmentColumns | list[Segment]] = {}
    held, sids = 0, sorted(pool.sources)
    for i, sid in enumerate(sids, 1):
        segs: SegmentColumns | list[Segment] = []
        if nxt is not None and nxt[0] == sid:
            segs = nxt[1]
            nxt = next(stream, None)
        exts[sid], segs_of[sid] = loaded_tracks(pool.sources[sid].tracks), segs
        held += len(segs)
        if held >= _CHUNK_SEGMENTS or i == len(sids):
            # a chunk of sources at a time: its table goes to the file, not to memory
            table, short = build(exts, segs_of)
            table = apply_span_rules(r, table)
            store.append(table)
            too_short += short
            exts, segs_of, held = {}, {}, 0
    store.close()
    if nxt is not None:  # the index's order is not the sources' sorted order
        raise PipelineError(f"index rows of {nxt[0]!r} out of source order", step="fill")
    # closed while the fill runs (DuckDB's buffers grow with the pool); summary reopens it
    d.close()
    r.candidates, r.too_short = store, too_short
    r.empty_spans = store.empty_excluded
    return {"rows_in": pool.summary()["segments"], "rows_out": len(store)}


def step_disk_fill(r: HoursRun) -> dict[str, Any]:
    """The in-memory fill step over the candidate store (:func:`fill_on_disk`)."""
    limit = _state(r).memory_limit  # the index's: one DuckDB at a time holds it
    return step_fill(r, fill=functools.partial(fill_on_disk, memory_limit=limit))


# ---- step 4: the config.json parts that read the pool ----------------------------------------


def _lit(x: float) -> str:
    return f"CAST({float(x)!r} AS DOUBLE)"


def _mark_admitted(con: Any, fill: FillResult) -> None:
    """Column ``adm``: the segment overlaps a span admitted to either split."""
    spans = [
        (c.source_id, c.first, c.last, tag_entity_id(c.entity_id))
        for taken in fill.admitted.values()
        for c in taken
    ]
    con.register(
        "_adm",
        pa.table(
            {
                "sid": pa.array([s[0] for s in spans], pa.string()),
                "ent": pa.array([s[3] for s in spans], pa.string()),
                "a": pa.array([s[1] for s in spans], pa.int64()),
                "b": pa.array([s[2] for s in spans], pa.int64()),
            }
        ),
    )
    _q(con, "ALTER TABLE pool ADD COLUMN adm BOOLEAN DEFAULT false")
    _q(con, "UPDATE pool SET adm = false")
    _q(
        con,
        "UPDATE pool SET adm = true WHERE rn IN (SELECT p.rn FROM pool p JOIN _adm s "
        "ON p.source_id = s.sid AND p.start_idx <= s.b AND p.end_idx > s.a "
        "AND (p.entity IS NULL OR p.entity = s.ent))",
    )
    con.unregister("_adm")


def distributions_sql(con: Any, st: Strategy, fill: FillResult, bins: int = 24) -> dict[str, Any]:
    """:func:`~kuration.pipeline.run.summary.feature_distributions` over the index: equal-width
    edges from the finite minimum and maximum (:func:`~kuration.pipeline.run.summary.bin_edges`), and each
    value counted in the bin whose edges hold it (the last one closed), in SQL."""
    _mark_admitted(con, fill)
    out: dict[str, Any] = {}
    for name in st.feature_names:
        c = _col(st, name)
        lo, hi, n = _q(con, f"SELECT min({c}), max({c}), count(*) FROM pool WHERE isfinite({c})")[0]
        if not n:
            continue
        edges = bin_edges(lo, hi, bins)
        idx = " + ".join(f"({c} >= {_lit(e)})::BIGINT" for e in edges[1:-1]) or "0"
        pool, sel = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
        for b, k, s in _q(
            con,
            f"SELECT {idx} AS b, count(*), count(*) FILTER (WHERE adm) FROM pool "
            f"WHERE isfinite({c}) GROUP BY b",
        ):
            pool[int(b)], sel[int(b)] = int(k), int(s)
        out[name] = {
            "edges": [float(e) for e in edges],
            "pool": pool.tolist(),
            "selected": sel.tolist(),
        }
    return out


def examples_sql(con: Any, st: Strategy, k: int = 3) -> dict[str, list[dict[str, Any]]]:
    """:func:`~kuration.pipeline.run.summary.ranking_examples` over the index: the ``k``
    highest- and lowest-ranked windows of finite priority."""
    names = list(st.feature_names)
    n_fin = int(_q(con, "SELECT count(*) FROM pool WHERE isfinite(prio)")[0][0])
    n = min(k, n_fin // 2)
    cols = ", ".join(
        ["source_id", "start_idx", "end_idx", "prio", "entity", *(_col(st, x) for x in names)]
    )

    def rows(order: str) -> list[dict[str, Any]]:
        got = _q(
            con, f"SELECT {cols} FROM pool WHERE isfinite(prio) ORDER BY {order} LIMIT {int(n)}"
        )
        return [
            {
                "source_id": g[0],
                "start_idx": int(g[1]),
                "end_idx": int(g[2]),
                "priority": float(g[3]),
                "features": {
                    x: float(v)
                    for x, v in zip(names, g[5:], strict=True)
                    if v is not None and math.isfinite(v)
                },
                **({} if g[4] is None else {"entity": g[4]}),
            }
            for g in got
        ]

    return {
        "top": rows("prio DESC, rn"),
        "bottom": rows("prio ASC, rn DESC"),
    }


def step_disk_summary(r: HoursRun) -> dict[str, Any]:
    """The pool's feature histograms against the admitted spans and the ranking examples
    (for ``config.json``), from the index; then the index is closed."""
    d = _state(r)
    con = d.reopen()
    d.distributions = distributions_sql(con, r.strategy, r.filled())
    d.examples = examples_sql(con, r.strategy)
    d.close()
    n_pool = r.pool().summary()["segments"]
    return {"rows_in": n_pool, "rows_out": len(d.distributions)}


# ---- the step list ----------------------------------------------------------------------------

#: the runtime the steps of this module run (stamped on their telemetry)
RUNTIME = DISK_RUNTIME

_REPLACED: dict[str, Step] = {
    "read+segment+features": step_disk_score,
    "bin": step_disk_rank,
    "candidates": step_disk_candidates,
    "fill": step_disk_fill,
}


def disk_steps(r: HoursRun, steps: Sequence[tuple[str, Step]]) -> tuple[tuple[str, Step], ...]:
    """``steps`` with the pool steps on the disk runtime (and ``summary`` after ``fill``)
    when the plan of ``r`` runs there; otherwise ``steps`` unchanged."""
    if not uses_disk_pool(r):
        return tuple(steps)
    out: list[tuple[str, Step]] = []
    for name, step in steps:
        out.append((name, _REPLACED.get(name, step)))
        if name == "fill":
            out.append(("summary", step_disk_summary))
    return tuple(out)
