"""Out-of-core hours runs (``streaming=True``): two lazy passes over each source.

The in-memory path reads every source whole (:class:`~kuration.contracts.tick.TickTable`);
a streaming run never does.  Only the iteration drivers differ, so the
artifact (shards and manifest) is byte-identical to the in-memory run's on
time-ordered input:

1. **first pass** (step ``read+segment+features``): each source is read as
   blocks of ticks (:class:`~kuration.sources.stream.TickStream`);
   :meth:`Segmenter.stream <kuration.contracts.segment.Segmenter.stream>` slides
   a ``deque(maxlen=window)`` over them and each occupied window is scored
   alone (:meth:`FeatureEngine.score_segments
   <kuration.metrics.features.FeatureEngine.score_segments>` on the window's
   ticks, laid out over the source's roster as the whole-source pass lays
   them out -- the same floating-point operations in the same order); track
   extents and counts are accumulated block by block.  What stays resident is
   the segment pool (features only) and the extents: *counts*, which is all
   the hours fill needs, so admission between the passes holds no data.
2. **second pass** (step ``stage``): each source with an admitted track is
   read again and :func:`~kuration.output.stream.write_stream` flushes its
   shards holding at most ``shard_length`` records per active (entity, span).

Refused before any row is read (:func:`check_streaming`, a
:class:`~kuration.errors.StreamingError`): a count selection, ``workers > 1``,
an adapter that cannot read lazily, a partitioned Parquet directory, the npz
container (it builds each shard's archive in memory with no streaming
guarantee) or a packed output mode, media or ``encoder:`` modalities,
BatchTransforms (they reread whole sources) and a SegmentScorer with
``needs_buffers=True`` (it would hold every segment's sequences).  Disorder in
a source (time going back) is refused while reading it, naming the file row
(:class:`~kuration.errors.StreamOrderError`).

Each streaming step records ``streamed: true`` and the process's peak
resident memory so far (``peak_rss_bytes``: VmHWM of this program on Linux)
in its :class:`~kuration.pipeline.spec.plan.StageTelemetry`.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contracts.segment import Segment, Segmenter
from ...core.ids import tag_entity_id
from ...core.progress import ProgressCallback, emit
from ...errors import SourceChangedError, StreamingError
from ...metrics.features import FeatureEngine
from ...output.commit import Journal, make_durable, remove_tree, staging_dir
from ...output.containers import container_can
from ...output.stream import StreamTrack, write_stream
from ...output.writer import ShardWriter
from ...selection.presence import absent_runs, gap_tuples
from ...sources.stream import DEFAULT_BATCH_ROWS, TickStream
from ...sources.timeseries import TimeseriesAdapter
from ..run.reread import held_still
from ..run.scorer_pass import run_scorers
from ..run.scoring import ScoringResult, SourceInfo, TrackExtent, _merge, _Tally
from ..run.steps import STEPS, HoursRun, _reuse
from ..run.strategy import resolve_uses, strategy_engine
from ..spec.budget import peak_rss_bytes
from ..spec.logical import HoursSelection
from ..spec.plan import STREAM_RUNTIME, StageTelemetry

if TYPE_CHECKING:
    from ...sources.base import InputAdapter
    from ..spec.runspec import RunSpec

__all__ = ["STREAMING_STEPS", "check_streaming", "stream_score_sources"]


def _packed(spec: Any) -> bool:
    """Whether an output spec asks for the packed (partitioned Parquet dataset) layout."""
    return bool(getattr(spec, "shared_files", False))


def check_streaming(p: RunSpec) -> None:
    """Refuse, before any row is read, a plan that ``streaming=True`` cannot run in bounded memory.

    Raises
    ------
    StreamingError
        Naming the part at fault and what to do instead (see the module docstring).
    """
    if not isinstance(p.selection, HoursSelection):
        raise StreamingError(
            "streaming=True writes an hours dataset (sample(hours=...)); a count selection "
            "runs in memory",
            step="select",
        )
    if p.opts.workers > 1 or p.opts.resolved_executor != "local":
        raise StreamingError(
            "streaming=True reads one source at a time in this process: use workers=1 "
            f"(executor 'local', not {p.opts.resolved_executor!r})",
            step="options",
        )
    if p.adapter is not None and not p.adapter.streams:
        raise StreamingError(
            f"adapter {p.adapter.name!r} reads whole sources; only an adapter that declares "
            "streams=True ('timeseries': CSV, Parquet) reads them lazily",
            step="adapter",
        )
    spec = p.output_spec
    if spec is not None:
        _check_output(spec, p.encoder)
    if p.strategy_ is not None and p.schema is not None:
        transforms, scorers = resolve_uses(p.strategy_, p.schema)
        if transforms:
            raise StreamingError(
                f"transform {transforms[0].name!r} rereads whole sources; streaming=True "
                "cannot run BatchTransforms",
                step="transform",
            )
        for s in scorers:
            if s.needs_buffers:
                raise StreamingError(
                    f"scorer {s.name!r} needs every segment's buffers (needs_buffers=True), "
                    "which a bounded stream cannot hold; use a per-segment embedding feature",
                    step="scorer",
                )


def _check_output(spec: Any, encoder: Any) -> None:
    """Refuse outputs that cannot be written shard by shard from the stream."""
    if not container_can(spec.container, "streams"):
        raise StreamingError(
            f"the {spec.container} container cannot honour bounded memory (each shard is "
            "assembled whole in memory); use container parquet, json or hdf5",
            step="output",
        )
    if _packed(spec):
        raise StreamingError(
            f"layout {spec.layout!r} orders shards across a whole split into shared files, "
            "which a bounded stream cannot; use layout 'files' (container parquet, "
            "json or hdf5)",
            step="output",
        )
    for name, m in spec.modalities.items():
        if m.route in ("media", "encoder"):
            raise StreamingError(
                f"modality {name!r} ({m.route}:) is encoded per whole track; streaming=True "
                "writes field: and segment: modalities only",
                step="output",
            )


def _check_sources(sources: Sequence[str]) -> None:
    for uri in sources:
        if os.path.isdir(uri):
            raise StreamingError(
                f"{uri} is a partitioned Parquet directory: it has no single row order to "
                "stream; pass its files in time order or run without streaming",
                step="source",
            )


# ---- the first pass ----------------------------------------------------------------------


def _stream_one(
    adapter: TimeseriesAdapter,
    uri: str,
    segmenter: Segmenter,
    engine: FeatureEngine,
    batch_rows: int,
) -> tuple[SourceInfo, list[Segment], str | None]:
    """Stream one source: windows scored one at a time, extents and counts block by block."""
    ts = TickStream(adapter, uri, batch_rows=batch_rows)
    ext = _Extents()
    segs: list[Segment] = []
    blocks = (segmenter.presence(b) for b in ts.blocks())  # present_where, when set
    with held_still(adapter, uri) as digest:  # a stream is not hashed as it is parsed
        for seg, window in segmenter.stream(ts.source_id, ext.watch(blocks)):
            one = Segment(seg.source_id, 0, seg.n_steps, entity=seg.entity)
            engine.score_segments(window, [one])
            seg.features = one.features
            segs.append(seg)
    reason = None
    if not segs:
        reason = (
            f"shorter than one window ({ext.n_steps} ticks < {segmenter.window_steps})"
            if ext.n_steps < segmenter.window_steps
            else "no window holds an entity"
        )
    info = SourceInfo(
        source_id=ts.source_id,
        uri=str(uri),
        n_steps=ext.n_steps,
        k0=ext.k0,
        fingerprint=digest.fingerprint,
        n_segments=len(segs),
        tracks=ext.tracks(ts.roster),
        counts=dict(sorted(ts.counts.items())),
    )
    return info, segs, reason


class _Extents:
    """Per-entity first/last present tick, count and gaps, accumulated over blocks
    (counts and the gap runs only: O(entities + gaps), never O(ticks))."""

    def __init__(self) -> None:
        self.k0 = 0
        self.n_steps = 0
        self.first = self.last = self.count = np.zeros(0, dtype=np.int64)
        self.gaps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def watch(self, blocks: Any) -> Any:
        for blk in blocks:
            if self.first.size == 0:
                self.k0 = blk.k0
                e = blk.n_entities
                self.first = np.full(e, -1, dtype=np.int64)
                self.last = np.full(e, -1, dtype=np.int64)
                self.count = np.zeros(e, dtype=np.int64)
            b0 = blk.k0 - self.k0
            pres = blk.present
            self.gaps.append(absent_runs(pres, b0, self.last))
            seen = pres.any(axis=0)
            lo = b0 + np.argmax(pres, axis=0)
            hi = b0 + blk.n_steps - 1 - np.argmax(pres[::-1], axis=0)
            self.first = np.where(seen & (self.first < 0), lo, self.first)
            self.last = np.where(seen, hi, self.last)
            self.count += pres.sum(axis=0)
            self.n_steps = b0 + blk.n_steps
            yield blk

    def tracks(self, roster: Sequence[Any]) -> tuple[TrackExtent, ...]:
        gaps: list[tuple[int, ...]] = [()] * self.first.size
        if self.gaps:
            ent, start, stop = (np.concatenate(c) for c in zip(*self.gaps, strict=True))
            gaps = gap_tuples(ent, start, stop, self.first.size)
        return tuple(
            TrackExtent(
                roster[e], int(self.first[e]), int(self.last[e]), int(self.count[e]), gaps[e]
            )
            for e in np.flatnonzero(self.first >= 0).tolist()
        )


def stream_score_sources(
    schema: Any,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Any,
    *,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> ScoringResult:
    """The streaming first pass: :func:`~kuration.pipeline.run.scoring.score_sources`'s pool,
    built without reading any source whole (sources one at a time, in this process).

    Raises
    ------
    StreamingError
        An adapter that cannot stream, a directory source (before any source is read).
    EmptyPoolError, KurationError
        As :func:`~kuration.pipeline.run.scoring.score_sources`.
    """
    if not isinstance(adapter, TimeseriesAdapter):
        raise StreamingError(f"adapter {adapter.name!r} cannot stream", step="adapter")
    uris = [str(u) for u in sources]
    _check_sources(uris)
    adapter.assign_source_ids(uris)  # unique ids, before any source is read
    engine = strategy_engine(strategy, schema)
    _, scorers = resolve_uses(strategy, schema)
    emit(progress, "scoring", "start", total=len(uris))
    tally = _Tally(len(uris), on_error, progress)
    t0 = time.perf_counter()
    for uri in uris:
        try:
            out: Any = _stream_one(adapter, uri, segmenter, engine, batch_rows)
        except Exception as exc:
            out = exc
        tally.record(uri, out)
    timing = {"read+segment+features": time.perf_counter() - t0}
    emit(progress, "scoring", "complete", total=len(uris))
    result = _merge(tally.results, tally.errors, len(uris), timing)
    if scorers:
        t1 = time.perf_counter()
        run_scorers(result, scorers, schema, adapter, on_error=on_error, progress=progress)
        result.timing["scorers"] = time.perf_counter() - t1
    return result


def step_stream_score(r: HoursRun) -> list[StageTelemetry]:
    """Streaming ``read+segment+features`` (the first pass)."""
    r.started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    r.scoring = stream_score_sources(
        r.schema,
        r.adapter,
        r.sources,
        r.segmenter,
        r.strategy,
        on_error=r.opts.on_error,
        progress=r.progress,
        batch_rows=int(r.opts.stream_batch_rows or DEFAULT_BATCH_ROWS),
    )
    n_src, n_seg = len(r.sources), len(r.scoring.segments)
    scored = r.scoring.summary()["sources_scored"]
    island = r.plan.stage("read").island if r.plan is not None else 0
    for seam in ("transforms", "scorers"):
        emit(r.progress, seam, "start", total=0)
        emit(r.progress, seam, "complete", total=0)
    wall = r.scoring.timing["read+segment+features"]
    scorers = r.scoring.timing.get("scorers")
    tail = [] if scorers is None else [StageTelemetry("scorers", scorers, n_seg, n_seg)]
    return [
        StageTelemetry(
            "read+segment+features",
            wall,
            n_src,
            n_seg,
            scored,
            island=island,
            streamed=True,
            peak_rss_bytes=peak_rss_bytes(),
            executor="local",  # the lead reads each source itself, one at a time
        ),
        *tail,
    ]


# ---- the second pass ---------------------------------------------------------------------


def _stream_write(
    r: HoursRun, writer: ShardWriter, info: SourceInfo, todo: list[Any], batch_rows: int
) -> tuple[int, list[StreamTrack]]:
    """Stream one source again and flush its admitted tracks' shards (the largest number
    of tracks open at once, and the tracks)."""
    ts = TickStream(r.adapter, info.uri, batch_rows=batch_rows)
    row = {tag_entity_id(e): j for j, e in enumerate(ts.roster)}
    tracks = [
        StreamTrack(
            split,
            c.entity_id,
            row[tag_entity_id(c.entity_id)],
            c.first,
            c.last,
            c.span_index,
            {**c.features, "priority": c.priority},
            [dict(e) for e in planned],
        )
        for split, c, planned in todo
    ]
    return write_stream(writer, info.source_id, info.k0, ts.blocks(), tracks), tracks


def _forget_attempt(r: HoursRun) -> None:
    """Drop this attempt's staging journal: its shards may hold bytes of a changed source,
    and a resumed run must rebuild rather than adopt them."""
    assert r.journal is not None
    r.journal.close()
    r.journal.path.unlink(missing_ok=True)


def step_stream_stage(r: HoursRun) -> list[StageTelemetry]:
    """Streaming ``stage``: each source with a shard to build is read again, block by block,
    and its shards are flushed from the stream into the staging namespace."""
    t0 = time.perf_counter()
    stage = staging_dir(r.root, r.fingerprint)
    if not r.resume and stage.exists():
        remove_tree(stage)
    r.journal = Journal(stage, r.fingerprint, keep=r.resume)
    writer = ShardWriter(stage, r.spec, r.schema, r.encoder, on_shard=r.journal.record)
    pool = r.pool()
    work: dict[str, list[Any]] = {}
    for item in r.admitted:
        work.setdefault(item[1].source_id, []).append(item)
    r.partitions = len(work)
    assert isinstance(r.adapter, TimeseriesAdapter)
    batch_rows = int(r.opts.stream_batch_rows or DEFAULT_BATCH_ROWS)
    emit(r.progress, "writing", "start", total=len(work))
    most = 0
    for i, sid in enumerate(sorted(work), 1):
        todo = [(split, c, planned) for split, c, planned in work[sid]]
        todo = [x for x in todo if not _reuse(r, stage, x[2])]
        if todo:
            info = pool.sources[sid]
            try:  # roster and blocks: the bytes the score pass streamed, or fail
                with held_still(r.adapter, info.uri, info.expected):
                    tracks = _stream_write(r, writer, info, todo, batch_rows)
            except SourceChangedError:
                _forget_attempt(r)  # shards streamed from other bytes: none may be reused
                raise
            most = max(most, tracks[0])
            for t in tracks[1]:
                r.entries.extend(t.planned)
                r.to_move.extend(e["path"] for e in t.planned)
                r.rebuilt += len(t.planned)
        emit(r.progress, "writing", "advance", current=i, total=len(work), source=sid)
    r.journal.close()
    if r.opts.durable:
        make_durable([stage / p for p in r.to_move], stage)
    island = r.plan.stage("write").island if r.plan is not None else None
    return [
        StageTelemetry(
            "stage",
            time.perf_counter() - t0,
            rows_in=len(r.admitted),
            rows_out=len(r.entries),
            partitions=len(work),
            bytes=sum(int(e.get("size", 0)) for e in r.entries),
            checkpoint_hits=r.reused,
            checkpoint_misses=r.rebuilt,
            queue_depth=most,  # most (entity, span) buffers open at once
            island=island,
            streamed=True,
            peak_rss_bytes=peak_rss_bytes(),
            executor="local",
        )
    ]


#: the runtime the steps of this module run (stamped on their telemetry)
RUNTIME = STREAM_RUNTIME

_SWAP = {"read+segment+features": step_stream_score, "stage": step_stream_stage}
if not set(_SWAP) <= {name for name, _ in STEPS}:  # pragma: no cover - a renamed step
    raise ImportError(f"hours steps {sorted(_SWAP)} are not all in STEPS")

#: :data:`~kuration.pipeline.run.steps.STEPS` with the two passes that read sources streamed.
STREAMING_STEPS = tuple((name, _SWAP.get(name, step)) for name, step in STEPS)
