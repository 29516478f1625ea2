"""Hours runs on the disk-backed pool (``pool="disk"`` with an hours budget).

The in-memory hours run (:mod:`kuration.pipeline.hours_steps`) holds every
scored segment as a Python object from scoring to ``config.json``.  On this
runtime (:mod:`kuration.pipeline.disk_pool`) three steps change and one is
added; the rest (split, fill, shard plan, resume, stage, publish, manifest,
commit) are the same functions over the same inputs, so the shards and the
manifest are byte-identical to the in-memory run's:

1. ``read+segment+features`` -- each source is scored into its own
   checkpointed partition on the run's executor (the count runtime's score
   stage, :mod:`kuration.pipeline.disk_score`; the executor's workers run it,
   and later write the shards); the partition's
   commit also records what scoring learned of the source
   (:class:`~kuration.pipeline.scoring.SourceInfo`: extents of its tracks,
   counts, fingerprint), so a rerun that reuses a partition does not read its
   source.  ``r.scoring`` is a :class:`DiskScoringResult`: every source, no
   segment.
2. ``index`` + ``bin`` -- the partitions are loaded into the DuckDB index;
   filters, bin edges, tag labels and the method's priority of *every* segment
   are computed there (:func:`~kuration.pipeline.disk_index.rank_pool_sql`), as
   :func:`~kuration.selection.select.apply_strategy` computes them in memory.
3. ``candidates`` -- the index is read back in canonical order, one source at a
   time: that source's segments become :class:`Segment` objects, are cut into
   candidates by :func:`~kuration.selection.candidates.build_candidate_table`
   and dropped; the per-source tables are concatenated
   (:func:`concat_candidate_tables`) into one columnar table (tens of bytes per
   track or span).
4. ``summary`` (after ``fill``) -- the parts of ``config.json`` that read the
   pool (feature histograms against the admitted spans, the top and bottom
   ranked windows) are computed in SQL, equal to
   :func:`~kuration.pipeline.summary.feature_distributions` and
   :func:`~kuration.pipeline.summary.ranking_examples`; the index is closed.

Checkpoints live in ``checkpoint_dir`` when one is given (kept, reused by any
later run with the same run key), else in the destination's staging namespace
(``.kuration_staging/pool``): a killed run leaves them there for ``resume``,
and the commit removes them with the rest of the staging area.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..contracts.segment import Segment
from ..core.executors import worker_environment
from ..core.progress import emit
from ..errors import EmptyPoolError, PipelineError
from ..output.commit import SPLITS, STAGING_NAME
from ..selection.candidates import CandidateTable, build_candidate_table
from ..selection.constraints import source_group
from ..selection.fill import FillResult
from ..selection.strategy import Strategy
from .checkpoint import PartitionCommit, StageCheckpoint
from .disk_index import _col, _q, apply_filter, bin_pool, connect, load_partitions, rank_pool_sql
from .disk_pool import DISK_RUNTIME, INDEX_MEMORY, INDEX_MEMORY_MIN, plan_identity
from .disk_score import score_stage
from .disk_tags import tag_pool
from .plan import StageTelemetry
from .scoring import (
    ScoringResult,
    SourceInfo,
    TrackExtent,
    _checked_sources,
    source_info,
)
from .track_columns import TrackColumns

if TYPE_CHECKING:
    from .hours_steps import HoursRun, Step

__all__ = [
    "DiskScoringResult",
    "concat_candidate_tables",
    "disk_session",
    "disk_steps",
    "source_info_doc",
    "source_info_from_doc",
    "uses_disk_pool",
]

#: rows per Arrow batch when the index is read back source by source
_READ_ROWS = 8192
#: segments whose sources' candidates are built together (then joined to the others)
_CHUNK_SEGMENTS = 4096

# ---- SourceInfo in a partition's meta ------------------------------------------------------

_CLASSES: dict[str, type[Any]] = {"SourceInfo": SourceInfo, "TrackExtent": TrackExtent}
#: the fields a :class:`TrackColumns` holds (a track with more is decoded as objects)
_TRACK_FIELDS = {"entity_id", "first", "last", "n_present", "gaps"}


def _enc(v: Any) -> Any:
    """``v`` as JSON: scalars JSON keeps exactly as they are, anything else as a one-key
    object naming its type (dataclasses field by field, over :func:`dataclasses.fields`)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, TrackColumns):  # recorded as the tuple of tracks it reads as
        v = tuple(v)
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = type(v).__name__
        if _CLASSES.get(name) is not type(v):
            raise PipelineError(f"cannot record a {name} in a checkpoint", step="score")
        return {name: {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, np.ndarray):
        return {"ndarray": [v.dtype.str, list(v.shape), _enc(v.ravel().tolist())]}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    if _rows_of_one_class(v):  # e.g. a source's tracks: one list per field, not per row
        names = [f.name for f in dataclasses.fields(v[0])]
        cols = {n: _enc([getattr(x, n) for x in v]) for n in names}
        return {"rows": [type(v[0]).__name__, cols]}
    if isinstance(v, tuple | list | frozenset):
        items = sorted(v, key=repr) if isinstance(v, frozenset) else v
        return {type(v).__name__: [_enc(x) for x in items]}
    if isinstance(v, Mapping):
        return {"map": [[_enc(k), _enc(x)] for k, x in v.items()]}
    raise PipelineError(f"cannot record a {type(v).__name__} in a checkpoint", step="score")


def _rows_of_one_class(v: Any) -> bool:
    """Whether ``v`` is a non-empty tuple of instances of one recorded dataclass."""
    if not isinstance(v, tuple) or not v:
        return False
    cls = type(v[0])
    return _CLASSES.get(cls.__name__) is cls and all(type(x) is cls for x in v)


def _dec(v: Any) -> Any:
    """The value :func:`_enc` encoded."""
    if not isinstance(v, dict):
        return v
    ((kind, x),) = v.items()
    if kind == "rows":  # a tuple of one dataclass, stored by column
        name, cols = x
        cls, got = _CLASSES[name], {n: _dec(c) for n, c in cols.items()}
        if cls is TrackExtent and set(got) == _TRACK_FIELDS:  # kept by column for the run
            return TrackColumns(
                got["entity_id"], got["first"], got["last"], got["n_present"], got["gaps"]
            )
        return tuple(
            cls(**dict(zip(got, row, strict=True))) for row in zip(*got.values(), strict=True)
        )
    if kind in _CLASSES:
        return _CLASSES[kind](**{k: _dec(y) for k, y in x.items()})
    if kind == "float":
        return float(x)
    if kind == "ndarray":
        dtype, shape, flat = x
        return np.array(_dec(flat), dtype=np.dtype(dtype)).reshape(shape)
    if kind == "bytes":
        return bytes.fromhex(x)
    if kind in ("tuple", "list", "frozenset"):
        return {"tuple": tuple, "list": list, "frozenset": frozenset}[kind](_dec(y) for y in x)
    if kind == "map":
        return {_dec(k): _dec(y) for k, y in x}
    raise PipelineError(f"a checkpoint records an unknown value kind {kind!r}", step="score")


def source_info_doc(info: SourceInfo) -> dict[str, Any]:
    """``info`` as a JSON-ready document, field by field (:func:`source_info_from_doc`
    rebuilds an equal object)."""
    return dict(_enc(info))


def source_info_from_doc(doc: Mapping[str, Any]) -> SourceInfo:
    """The :class:`SourceInfo` of a :func:`source_info_doc` document.

    Raises
    ------
    PipelineError
        The document names a kind of value this version does not record.
    """
    info = _dec(dict(doc))
    if not isinstance(info, SourceInfo):
        raise PipelineError("a checkpoint's source record is not a SourceInfo", step="score")
    return info


def _describe(uri: str, fingerprint: str, table: Any, segs: list[Segment]) -> dict[str, Any]:
    """What a partition's meta records of its source: its :class:`SourceInfo`."""
    return {"info": source_info_doc(source_info(table, uri, fingerprint, len(segs)))}


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
    from .._version import __version__
    from ..core.plugins import run_code, used_names

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
        "batch_rows": int(r.opt["batch_rows"]),
        "plan": plan_identity(r.plan),
    }


@contextmanager
def disk_session(r: HoursRun) -> Iterator[None]:
    """The disk runtime's state for the steps of ``r`` (nothing when its plan runs in
    memory); the index is closed at the end, however the steps end."""
    if not uses_disk_pool(r):
        yield
        return
    given = r.opt.get("checkpoint_dir")
    root = Path(given) if given is not None else r.root / STAGING_NAME / "pool"
    index = r.opt.get("index_bytes") or INDEX_MEMORY  # set when a memory_budget chose the pool
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
    uris = _checked_sources(r.sources, 1, r.opt["on_error"])
    emit(r.progress, "scoring", "start", total=len(uris))
    t0 = time.perf_counter()
    infos: dict[str, SourceInfo] = {}

    def keep(uri: str, c: PartitionCommit) -> PartitionCommit:
        # the record becomes a SourceInfo now and the commit kept for the index drops it:
        # the records of every source are never held at once (tens of KB each as JSON)
        info = source_info_from_doc(c.meta["info"])
        infos[info.source_id] = info
        return dataclasses.replace(c, meta={k: v for k, v in c.meta.items() if k != "info"})

    scored = score_stage(
        d.ck,
        r.adapter,
        uris,
        r.segmenter,
        r.strategy,
        r.schema,
        batch_rows=int(r.opt["batch_rows"]),
        on_error=r.opt["on_error"],
        durable=bool(r.opt["durable"]),
        describe=_describe,
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
    timing = {"read+segment+features": wall}
    ex = dict(scored.execution)
    r.scoring = DiskScoringResult([], infos, dict(scored.errors), skipped, timing, ex, n_pool)
    for seam in ("transforms", "scorers"):  # they run inside scoring
        emit(r.progress, seam, "start", total=0)
        emit(r.progress, seam, "complete", total=0)
    island = r.plan.stage("features").island if r.plan is not None else None
    return [scored.telemetry(d.ck, wall, len(uris), int(r.opt["batch_rows"]), island=island)]


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
    uris = {c.meta["source_id"]: c.meta["uri"] for c in d.commits.values()}
    for entry in st.filters:
        apply_filter(d.con, st, entry, lambda sid: r.adapter.read_table(uris[sid]))
    r.edges = bin_pool(d.con, st) if st.bin_axes else {}
    d.label_sets = tag_pool(d.con, st) if st.tags else {}
    rank_pool_sql(d.con, st, r.opt["seed"])
    d.commits = {}  # loaded: the index holds what the later steps read of the partitions
    t2 = time.perf_counter()
    island = r.plan.stage("bin").island if r.plan is not None else None
    parts = len(d.commits)
    return [
        StageTelemetry("index", t1 - t0, n_pool, n_pool, parts, island=island),
        StageTelemetry("bin", t2 - t1, n_pool, n_pool, island=island),
    ]


# ---- step 3: candidates, one source at a time ------------------------------------------------


def _segments(batch: pa.RecordBatch, st: Strategy, tags: Mapping[str, Sequence[str]]) -> Any:
    """``(source_id, Segment)`` of every row of one batch read back from the index."""
    names = list(st.feature_names)
    sid = batch.column(0).to_pylist()
    start = batch.column(1).to_numpy().tolist()
    end = batch.column(2).to_numpy().tolist()
    prio = batch.column(3).to_numpy(zero_copy_only=False).tolist()
    feats = [
        batch.column(4 + j).fill_null(math.nan).to_numpy(zero_copy_only=False).tolist()
        for j in range(len(names))
    ]
    labels = [batch.column(4 + len(names) + k).to_pylist() for k in range(len(tags))]
    rule = st.group
    groups: dict[str, str | None] = {}
    for i, s in enumerate(sid):
        if s not in groups:
            groups[s] = source_group(rule, s) if rule is not None else None
        seg_tags = {
            t: tags[t][int(lab[i])]
            for t, lab in zip(tags, labels, strict=True)
            if lab[i] is not None
        }
        f = {n: col[i] for n, col in zip(names, feats, strict=True)}
        yield s, Segment(s, start[i], end[i], f, None, seg_tags, groups[s], prio[i])


def _by_source(con: Any, st: Strategy, tags: Mapping[str, Sequence[str]]) -> Any:
    """``(source_id, segments)`` for each source with segments, in canonical order, read
    back from the index in Arrow batches (one source's segments held at a time)."""
    cols = ["source_id", "start_idx", "end_idx", "prio"]
    cols += [f"f{j}" for j in range(len(st.feature_names))]
    cols += [f"t{k}" for k in range(len(tags))]
    sql = f"SELECT {', '.join(cols)} FROM pool ORDER BY source_id, start_idx"
    reader = con.sql(sql).to_arrow_reader(_READ_ROWS)
    cur: str | None = None
    segs: list[Segment] = []
    for batch in reader:
        for sid, seg in _segments(batch, st, tags):
            if sid != cur:
                if cur is not None:
                    yield cur, segs
                cur, segs = sid, []
            segs.append(seg)
    if cur is not None:
        yield cur, segs


def concat_candidate_tables(parts: list[CandidateTable]) -> CandidateTable:
    """One table of the rows of ``parts`` in order (tables of distinct sources, in
    sorted order): sources, rosters and rows appended, group labels and tag sets
    interned again (codes change, values do not), ``empty_excluded`` summed.
    ``parts`` is emptied as its columns are taken, so the rows are held about once, not
    twice, while they are joined.

    Raises
    ------
    PipelineError
        The parts' feature names differ.
    """
    names = parts[0].feature_names if parts else ()
    if any(t.feature_names != names for t in parts):
        raise PipelineError("candidate tables of different features", step="fill")
    groups: dict[str, int] = {}
    sets: dict[frozenset[str], int] = {frozenset(): 0}
    keys = ("source", "entity", "first", "last", "span", "priority", "group", "tags", "present")
    keys += ("features",)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    source_ids: list[str] = []
    entity_ids: list[Any] = []
    empty = 0
    parts.reverse()
    while parts:  # take each table's columns and let the table go
        t = parts.pop()
        gmap = np.array([groups.setdefault(g, len(groups)) for g in t.groups] + [-1], np.int64)
        tmap = np.array([sets.setdefault(s, len(sets)) for s in t.tag_sets], np.int64)
        cols["source"].append(t.source.astype(np.int64) + len(source_ids))
        cols["group"].append(gmap[t.group])  # -1 (no group) indexes the trailing -1
        cols["tags"].append(tmap[t.tags])
        for k in ("entity", "first", "last", "span", "priority", "present", "features"):
            cols[k].append(getattr(t, k))
        empty += t.empty_excluded
        source_ids.extend(t.source_ids)
        entity_ids.extend(t.entity_ids)
    joined: dict[str, Any] = {}
    for k in keys:  # one column at a time: its parts are dropped once joined
        got = cols.pop(k)
        joined[k] = np.concatenate(got) if got else None
        del got
    feats = joined.pop("features")
    if feats is None:
        joined = {k: np.zeros(0) for k in joined}
    return CandidateTable(
        source_ids=source_ids,
        entity_ids=entity_ids,
        feature_names=names,
        features=feats,
        groups=list(groups),
        tag_sets=list(sets),
        empty_excluded=empty,
        **joined,
    )


def step_disk_candidates(r: HoursRun) -> dict[str, Any]:
    """Cut tracks (or spans) into candidates from the index, a chunk of sources (about
    :data:`_CHUNK_SEGMENTS` segments) at a time."""
    d, pool = _state(r), r.pool()
    min_steps = max(1, int(np.ceil(r.opt["min_track_seconds"] * r.hz)))
    build = functools.partial(
        build_candidate_table,
        how=r.opt["clip_aggregate"],
        features=r.strategy.feature_names,
        min_steps=min_steps,
        span_steps=r.opt["span_steps"],
        group_of=r.group_fn,
    )
    stream = _by_source(d.con, r.strategy, d.label_sets)
    nxt = next(stream, None)
    tables: list[CandidateTable] = []
    too_short = 0
    exts: dict[str, Any] = {}
    segs_of: dict[str, list[Segment]] = {}
    held, sids = 0, sorted(pool.sources)
    for i, sid in enumerate(sids, 1):
        segs: list[Segment] = []
        if nxt is not None and nxt[0] == sid:
            segs = nxt[1]
            nxt = next(stream, None)
        exts[sid], segs_of[sid] = pool.sources[sid].tracks, segs
        held += len(segs)
        if held >= _CHUNK_SEGMENTS or i == len(sids):
            # a chunk of sources at a time: a few dozen tables to join, not one per source
            table, short = build(exts, segs_of)
            tables.append(table)
            too_short += short
            exts, segs_of, held = {}, {}, 0
    if nxt is not None:  # the index's order is not the sources' sorted order
        raise PipelineError(f"index rows of {nxt[0]!r} out of source order", step="fill")
    # closed while the fill runs (DuckDB's buffers grow with the pool); summary reopens it
    d.close()
    r.candidates, r.too_short = concat_candidate_tables(tables), too_short
    r.empty_spans = r.candidates.empty_excluded
    return {"rows_in": pool.summary()["segments"], "rows_out": len(r.candidates)}


# ---- step 4: the config.json parts that read the pool ----------------------------------------


def _lit(x: float) -> str:
    return f"CAST({float(x)!r} AS DOUBLE)"


def _mark_admitted(con: Any, fill: FillResult) -> None:
    """Column ``adm``: the segment overlaps a span admitted to either split."""
    spans = [(c.source_id, c.first, c.last) for taken in fill.admitted.values() for c in taken]
    con.register(
        "_adm",
        pa.table(
            {
                "sid": pa.array([s[0] for s in spans], pa.string()),
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
        "ON p.source_id = s.sid AND p.start_idx <= s.b AND p.end_idx > s.a)",
    )
    con.unregister("_adm")


def distributions_sql(con: Any, st: Strategy, fill: FillResult, bins: int = 24) -> dict[str, Any]:
    """:func:`~kuration.pipeline.summary.feature_distributions` over the index: equal-width
    edges from the finite minimum and maximum (``numpy.histogram_bin_edges``), and each
    value counted in the bin whose edges hold it (the last one closed), in SQL."""
    _mark_admitted(con, fill)
    out: dict[str, Any] = {}
    for name in st.feature_names:
        c = _col(st, name)
        lo, hi, n = _q(con, f"SELECT min({c}), max({c}), count(*) FROM pool WHERE isfinite({c})")[0]
        if not n:
            continue
        edges = np.histogram_bin_edges(np.array([lo, hi], dtype=np.float64), bins=bins)
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
    """:func:`~kuration.pipeline.summary.ranking_examples` over the index: the ``k``
    highest- and lowest-ranked windows of finite priority."""
    names = list(st.feature_names)
    n_fin = int(_q(con, "SELECT count(*) FROM pool WHERE isfinite(prio)")[0][0])
    n = min(k, n_fin // 2)
    cols = ", ".join(["source_id", "start_idx", "end_idx", "prio", *(_col(st, x) for x in names)])

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
                    for x, v in zip(names, g[4:], strict=True)
                    if v is not None and math.isfinite(v)
                },
            }
            for g in got
        ]

    return {
        "top": rows("prio DESC, source_id, start_idx"),
        "bottom": rows("prio ASC, source_id DESC, start_idx DESC"),
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

_REPLACED: dict[str, Step] = {
    "read+segment+features": step_disk_score,
    "bin": step_disk_rank,
    "candidates": step_disk_candidates,
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
