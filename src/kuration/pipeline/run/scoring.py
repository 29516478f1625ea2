"""score_sources: the feature pass shared by curate and write_dataset.

Each source is read into a :class:`~kuration.contracts.tick.TickTable`, cut into
windows and scored.  A source that fails is skipped and logged
(``on_error="skip"``) or re-raised (``"raise"``).  Segments are sorted by
``(source_id, start_idx)`` so that the pool is the same whatever the order in
which sources finished; an empty pool raises :class:`EmptyPoolError`.
Sources are scored through an :class:`~kuration.core.executors.Executor`
(ordered ``iter_batches``, at most ``max_in_flight`` sources in flight).
``local`` reads and windows the next source in this process while one
long-lived worker thread scores the previous one.  ``process`` (a spawn-based
pool) and ``ray`` (Ray tasks) score each source in a worker that rebuilds the
adapter and the feature engine from their JSON form (compiled metrics are
closures and do not pickle) after importing the ``plugins`` modules, once per
worker process (cached), so a registered metric must live in an importable
module.  Results are folded in submission order and merged in sorted order,
so the pool is identical for any executor, worker count and completion order.
A worker that dies (not an exception in a source) breaks the run; that cannot
be pinned on one source, so it always raises
:class:`~kuration.errors.ExecutorError`.

The strategy's BatchTransforms run inside the feature pass, per source, after
its metrics (:class:`~kuration.metrics.transform_exec.TransformRunner`; a
worker builds each transform once for all the sources it scores); a source
whose transform raises is skipped like any failing source, with none of its
rows kept.  Its SegmentScorers run afterwards on the sorted pool
(:func:`~kuration.pipeline.run.scorer_pass.run_scorers`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segment, Segmenter
from ...core.executors import (
    Executor,
    batch_size_for,
    enter_worker_environment,
    make_executor,
    worker_environment,
)
from ...core.ids import tag_entity_id
from ...core.progress import ProgressCallback, emit
from ...errors import EmptyPoolError, KurationError, PipelineError, SourceChangedError
from ...metrics.alloc import retain_freed_memory
from ...metrics.features import FeatureEngine
from ...metrics.scorers import ScorerUse
from ...metrics.transform_exec import TransformRunner, runner_for
from ...metrics.transforms import TransformUse, resolve_transform
from ...selection.presence import absent_runs, gap_tuples
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter, adapter_from_dict
from ...sources.identity import SourceDigest
from .scorer_pass import run_scorers
from .strategy import resolve_uses, strategy_engine

__all__ = ["ScoringResult", "SourceInfo", "TrackExtent", "score_sources"]


@dataclass(frozen=True)
class TrackExtent:
    """Where one entity lives within a source: ticks ``[first, last]`` inclusive, ``n_present`` of them present.

    ``gaps`` are the runs of ticks inside the extent where the entity is absent, as one
    flat tuple of plain ints ``(start0, stop0, start1, stop1, ...)``, each run
    ``[start, stop)`` on the source's tick grid, in time order
    (:func:`~kuration.selection.presence.absent_runs`).  Empty (the default) means present
    at every tick of the extent, which is what a track without gaps is and what a
    TrackExtent made without them is taken to be.
    """

    entity_id: Any
    first: int
    last: int
    n_present: int
    gaps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.gaps, tuple):  # read back from JSON as a list
            object.__setattr__(self, "gaps", tuple(int(x) for x in self.gaps))

    @property
    def n_steps(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)  # one per source, tens of thousands in a large run
class SourceInfo:
    """What scoring learned of one source, enough to plan output without rereading it.

    ``counts`` holds the adapter's input-policy counters (``TickTable.counts``,
    e.g. ``snap_collisions``).  ``fingerprint`` and ``digest`` are the
    :class:`~kuration.sources.identity.SourceDigest` of the bytes the score pass
    decoded (every later read of the run must find the same: :attr:`expected`).
    ``wall_s`` is where the source's time went (seconds per stage kind: ``read``
    -- hashing included --, ``segment``, ``features``); a measurement, so it takes
    no part in equality.
    """

    source_id: str
    uri: str
    n_steps: int
    k0: int
    fingerprint: str
    n_segments: int
    tracks: Sequence[TrackExtent]  # a tuple, or lazy CommittedTracks on the disk pool
    counts: Mapping[str, int] = field(default_factory=dict)
    digest: str = ""
    wall_s: Mapping[str, float] = field(default_factory=dict, compare=False)

    @property
    def expected(self) -> SourceDigest:
        """What a later read of this source must find (see :meth:`InputAdapter.read_checked
        <kuration.sources.base.InputAdapter.read_checked>`)."""
        return SourceDigest(self.fingerprint, self.digest)


@dataclass
class ScoringResult:
    """The scored pool.

    Attributes
    ----------
    segments : list of Segment, sorted by (source_id, start_idx)
    sources : dict of source id to SourceInfo
    errors : dict of source uri to message (sources that failed and were skipped)
    skipped : dict of source id to reason (sources that produced no window)
    timing : dict of str to float
        Wall seconds per executed pass: ``{"read+segment+features": s}`` when
        fused, ``{"read+segment": s, "features": s}`` when features ran as a barrier.
    execution : dict
        How the fused pass ran: ``executor`` (name), ``workers``, ``batch_size``
        (sources per task), ``max_in_flight`` and ``queue_depth`` (the largest
        number of tasks in flight).
    """

    segments: list[Segment]
    sources: dict[str, SourceInfo]
    errors: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        rows = {
            sid: {k: int(v) for k, v in sorted(info.counts.items()) if k != "snap_collisions" and v}
            for sid, info in sorted(self.sources.items())
        }
        rows = {sid: c for sid, c in rows.items() if c}
        extra = {"row_policies": rows} if rows else {}  # re-timed, dropped duplicates/timeless
        return {
            **extra,
            "sources_total": len(self.sources) + len(self.errors),
            "sources_scored": sum(1 for s in self.sources.values() if s.n_segments),
            "sources_failed": len(self.errors),
            "sources_short": len(self.skipped),
            "segments": len(self.segments),
            "snap_collisions": {
                sid: n
                for sid, info in sorted(self.sources.items())
                if (n := int(info.counts.get("snap_collisions", 0)))
            },
            "errors": dict(sorted(self.errors.items())),
            "skipped": dict(sorted(self.skipped.items())),
        }

    @property
    def wall_s(self) -> dict[str, float]:
        """Seconds per stage kind summed over the scored sources (:attr:`SourceInfo.wall_s`,
        measured where each source ran: with workers they add up to more than the wall)."""
        out: dict[str, float] = {}
        for info in self.sources.values():
            for k, v in info.wall_s.items():
                out[k] = out.get(k, 0.0) + v
        return out


def _track_extents(present: np.ndarray, entity_ids: Sequence[Any]) -> tuple[TrackExtent, ...]:
    n_t, n_e = present.shape
    any_e = present.any(axis=0)
    first = np.argmax(present, axis=0)
    last = n_t - 1 - np.argmax(present[::-1], axis=0)
    count = present.sum(axis=0)
    gaps = gap_tuples(*absent_runs(present), n_e)
    return tuple(
        TrackExtent(entity_ids[e], int(first[e]), int(last[e]), int(count[e]), gaps[e])
        for e in np.flatnonzero(any_e).tolist()
    )


def _score_one(
    adapter: InputAdapter,
    uri: str,
    segmenter: Segmenter,
    engine: FeatureEngine | None,
    runner: TransformRunner | None = None,
) -> tuple[SourceInfo, list[Segment], str | None]:
    """Read, window and (with ``engine``) score one source in one pass."""
    return _finish(_read_segment(adapter, uri, segmenter), segmenter, engine, runner)


# uri, TickTable, its windows, the digest of the bytes read, seconds spent (read, segment)
_Read = tuple[str, Any, list[Segment], SourceDigest, dict[str, float]]


def _read_segment(adapter: InputAdapter, uri: str, segmenter: Segmenter) -> _Read:
    """The first half of a source's fused pass: read it (hashing the bytes it decodes, in
    the same pass) and cut its windows."""
    t0 = time.perf_counter()
    table, digest = adapter.read_checked(uri)
    table = segmenter.presence(table)  # present_where, when set
    t1 = time.perf_counter()
    segs = segmenter.segments(table.source_id, table.present, table.entity_ids)
    wall = {"read": t1 - t0, "segment": time.perf_counter() - t1}
    return str(uri), table, segs, digest, wall


def _finish(
    read: _Read,
    segmenter: Segmenter,
    engine: FeatureEngine | None,
    runner: TransformRunner | None,
) -> tuple[SourceInfo, list[Segment], str | None]:
    """The second half: score the windows (metrics, then transforms) and describe the source."""
    uri, table, segs, digest, wall = read
    t0 = time.perf_counter()
    if engine is not None:
        engine.score_segments(table, segs)
        _run_transforms(runner, table, segs)
    wall = {**wall, "features": time.perf_counter() - t0}
    reason = None
    if not segs:
        reason = (
            f"shorter than one window ({table.n_steps} ticks < {segmenter.window_steps})"
            if table.n_steps < segmenter.window_steps
            else "no window holds an entity"
        )
    return source_info(table, uri, digest, len(segs), wall), segs, reason


def source_info(
    table: Any,
    uri: str,
    digest: SourceDigest,
    n_segments: int,
    wall: Mapping[str, float] | None = None,
) -> SourceInfo:
    """What scoring learned of one source read into ``table`` (a TickTable) from the bytes
    ``digest`` names: its extents, gaps included, and the adapter's counts."""
    return SourceInfo(
        source_id=table.source_id,
        uri=uri,
        n_steps=table.n_steps,
        k0=table.k0,
        fingerprint=digest.fingerprint,
        n_segments=n_segments,
        tracks=_track_extents(table.present, table.entity_ids),
        counts=dict(sorted(table.counts.items())),
        digest=digest.sha256,
        wall_s=dict(wall or {}),
    )


def _features_pass(
    segmenter: Segmenter,
    adapter: InputAdapter,
    engine: FeatureEngine,
    runner: TransformRunner | None,
    results: dict[str, tuple[SourceInfo, list[Segment], str | None]],
    errors: dict[str, str],
    on_error: str,
) -> None:
    """The features barrier: score the windowed pool (metrics, then transforms), rereading
    one source at a time.

    A source whose features fail leaves ``results`` for ``errors`` (``on_error="skip"``).
    """
    for uri in sorted(results):
        segs = results[uri][1]
        if not segs:
            continue
        try:
            expect = results[uri][0].expected  # the bytes the first pass read
            table = segmenter.presence(adapter.read_checked(uri, expect=expect)[0])
            engine.score_segments(table, segs)
            _run_transforms(runner, table, segs)
        except Exception as exc:
            if on_error == "raise" or isinstance(exc, SourceChangedError):
                raise
            msg = f"{type(exc).__name__}: {exc}"
            print(f"kuration: skipped source {uri}: {msg}", file=sys.stderr)
            errors[uri] = msg
            del results[uri]


def _run_transforms(runner: TransformRunner | None, table: Any, segs: list[Segment]) -> None:
    """Run a source's transforms; after a failure the runner rebuilds them for the next one."""
    if runner is None or not runner.uses:
        return
    try:
        runner.run(table, segs)
    except BaseException:
        runner.reset()  # the next source starts from freshly built transforms
        raise


# one worker process's components, rebuilt once per job (keyed by the job's JSON form)
_WORKER_CACHE: dict[str, tuple[InputAdapter, Segmenter, FeatureEngine, TransformRunner]] = {}


def _worker_components(
    base: Mapping[str, Any],
) -> tuple[InputAdapter, Segmenter, FeatureEngine, TransformRunner]:
    key = json.dumps(base, sort_keys=True, default=str)
    if key not in _WORKER_CACHE:
        enter_worker_environment(base["env"])
        schema = SchemaSpec.from_dict(base["schema"])
        adapter = adapter_from_dict(base["adapter"], schema, base.get("source_ids"))
        engine = FeatureEngine(base["define"], schema, base["registered"])
        retain_freed_memory()
        seg = Segmenter(**base["segmenter"])
        features = [*base["define"], *base["registered"]]
        uses = []
        for t in base.get("transforms", ()):
            uses.append(resolve_transform(t, schema, features))
            features.extend(uses[-1].outputs.values())
        _WORKER_CACHE.clear()  # one job at a time per worker
        _WORKER_CACHE[key] = (adapter, seg, engine, runner_for(uses))
    return _WORKER_CACHE[key]


def _worker(payload: Mapping[str, Any]) -> list[Any]:
    """A batch of sources' fused passes in a ``process`` or ``ray`` worker: one outcome per
    source, in order (a source's exception is its outcome; the batch goes on)."""
    adapter, seg, engine, runner = _worker_components(payload["base"])
    out: list[Any] = []
    for uri in payload["uris"]:
        try:
            out.append(_score_one(adapter, uri, seg, engine, runner))
        except Exception as exc:
            out.append(exc)
    return out


def score_sources(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Strategy,
    *,
    workers: int = 1,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    plugins: Sequence[str] = (),
    include_entry_points: bool = True,
    fused: bool = True,
    executor: Executor | str | None = None,
    executor_options: Mapping[str, Any] | None = None,
    ray_address: str | None = None,
) -> ScoringResult:
    """Score every window of every source.

    Parameters
    ----------
    schema, adapter, sources, segmenter, strategy
        What to read, how to window it and which features to compute
        (``strategy.define`` and ``strategy.registered``).
    workers : int
        Workers of the executor (1 for ``local``).  Results are identical for
        any worker count and executor.
    on_error : {"skip", "raise"}
        ``skip`` logs a failing source to stderr and records it in ``errors``
        (and the summary); ``raise`` re-raises the first failure.
    progress : callable, optional
        ``scoring`` start/advance/complete events; an advance carries
        ``current`` (sources done), ``total``, ``source`` and ``status``
        (``ok`` or ``error``), in completion order.
    plugins : sequence of str
        Modules every worker imports first (registered metrics, transforms, adapters).
    fused : bool
        True reads, windows and scores each source in one pass (the plan's
        fused island).  False runs features as a barrier: every source is
        read and windowed first, then the whole pool is scored in a second
        pass that rereads each source (in this process).  The pool is
        identical either way.
    executor : Executor or {"local", "process", "ray"}, optional
        Runs the fused pass (see the module docs); an :class:`Executor`
        instance is used as is (and left open: its owner closes it), a name
        (None: the one ``workers`` implies) is made here and closed at the end.
    executor_options : mapping, optional
        The named executor's own settings (Ray's ``address``...).
    ray_address : str, optional
        The older spelling of ``executor_options={"address": ...}``.

    Raises
    ------
    EmptyPoolError
        If no source yields a single segment (lists every source's reason).
    ScorerError
        A scorer's whole-pool failure (one that names no source).
    TransformError, ScorerError
        A transform or scorer use that does not resolve (before any source is read).
    KurationError
        With ``on_error="raise"``, the first source error; also for duplicate
        source ids.
    ExecutorError
        A worker process or Ray task died.
    PipelineError
        For a bad ``workers`` or ``on_error``, or a source listed twice (a ``ValueError``).
    """
    uris = _checked_sources(sources, workers, on_error)
    adapter.assign_source_ids(uris)  # unique ids, before any source is read
    engine, transforms, scorers = _compile_strategy(strategy, schema)
    runner = TransformRunner(transforms)
    total = len(uris)
    emit(progress, "scoring", "start", total=total)
    tally = _Tally(total, on_error, progress)
    inline = not fused or total <= 1  # runs in this process, one source at a time
    t0 = time.perf_counter()
    size = 1
    with _executor_for(executor, workers, executor_options, ray_address) as ex:
        if inline:
            _score_inline(adapter, uris, segmenter, engine if fused else None, runner, tally.record)
        elif ex.parallel:
            base = _worker_base(
                schema, adapter, strategy, transforms, segmenter, plugins, include_entry_points
            )
            size = _score_on_workers(ex, base, uris, tally.record)
        else:
            _score_overlapped(ex, adapter, uris, segmenter, engine, runner, tally.record)
    timing = {"read+segment+features" if fused else "read+segment": time.perf_counter() - t0}
    if not fused:
        t1 = time.perf_counter()
        _features_pass(segmenter, adapter, engine, runner, tally.results, tally.errors, on_error)
        timing["features"] = time.perf_counter() - t1
    emit(progress, "scoring", "complete", total=total)
    result = _merge(tally.results, tally.errors, total, timing)
    result.execution = _execution_record(ex, inline, size)
    if scorers:
        _run_scorers_timed(result, scorers, schema, adapter, on_error, progress)
    return result


def _compile_strategy(
    strategy: Strategy, schema: SchemaSpec
) -> tuple[FeatureEngine, list[TransformUse], list[ScorerUse]]:
    """The strategy's feature engine, transforms and scorers, compiled in the lead first so
    that a bad metric, transform or scorer fails before any source is read or worker spawned."""
    engine = strategy_engine(strategy, schema)
    retain_freed_memory()  # whole sources: their temporaries stay mapped (metrics.alloc)
    transforms, scorers = resolve_uses(strategy, schema)
    return engine, transforms, scorers


@contextmanager
def _executor_for(
    executor: Executor | str | None,
    workers: int,
    options: Mapping[str, Any] | None,
    ray_address: str | None,
) -> Iterator[Executor]:
    """The executor to score on: an instance as given (its owner closes it), or one made
    from a name (None: the one ``workers`` implies) and closed on leaving."""
    if isinstance(executor, Executor):
        yield executor
        return
    ex = make_executor(executor, workers, options=options, address=ray_address)
    try:
        yield ex
    finally:
        ex.close()


def _worker_base(
    schema: SchemaSpec,
    adapter: InputAdapter,
    strategy: Strategy,
    transforms: Sequence[TransformUse],
    segmenter: Segmenter,
    plugins: Sequence[str],
    include_entry_points: bool,
) -> dict[str, Any]:
    """The JSON form from which a ``process`` or ``ray`` worker rebuilds the adapter, the
    segmenter, the feature engine and the transforms (:func:`_worker_components`)."""
    return {
        "schema": schema.to_dict(),
        "adapter": adapter.to_dict(),
        "source_ids": adapter.source_id_map(),
        "define": dict(strategy.define),
        "registered": list(strategy.registered),
        "transforms": [u.to_dict() for u in transforms],
        "segmenter": segmenter.to_dict(),
        "env": worker_environment(plugins, include_entry_points),
    }


def _execution_record(ex: Executor, inline: bool, size: int) -> dict[str, Any]:
    """How the fused pass ran (:attr:`ScoringResult.execution`); an ``inline`` pass ran in
    this process, one source at a time, whatever executor was named."""
    return {
        "executor": "local" if inline else ex.name,
        "workers": 1 if inline else ex.workers,
        "batch_size": size,
        "max_in_flight": 1 if inline else ex.max_in_flight,
        "queue_depth": 1 if inline else ex.peak_in_flight,
    }


def _run_scorers_timed(
    result: ScoringResult,
    scorers: Sequence[ScorerUse],
    schema: SchemaSpec,
    adapter: InputAdapter,
    on_error: str,
    progress: ProgressCallback | None,
) -> None:
    """Run the SegmentScorers on the sorted pool (a barrier, in the lead) and time them
    into ``result.timing["scorers"]``."""
    t1 = time.perf_counter()
    run_scorers(result, scorers, schema, adapter, on_error=on_error, progress=progress)
    result.timing["scorers"] = time.perf_counter() - t1


def _score_inline(
    adapter: InputAdapter,
    uris: Sequence[str],
    segmenter: Segmenter,
    engine: FeatureEngine | None,
    runner: TransformRunner,
    record: Callable[[str, Any], None],
) -> None:
    """One source after another in this process (``engine`` None: windows only)."""
    for uri in uris:
        try:
            out: Any = _score_one(adapter, uri, segmenter, engine, runner)
        except Exception as exc:
            out = exc
        record(uri, out)


def _score_on_workers(
    ex: Executor, base: Mapping[str, Any], uris: list[str], record: Callable[[str, Any], None]
) -> int:
    """Batches of sources scored by the executor's workers, recorded in source order;
    returns the batch size."""
    size = batch_size_for(len(uris), ex.workers)
    tasks = ({"base": base, "uris": uris[i : i + size]} for i in range(0, len(uris), size))
    for task, outs in ex.iter_batches(_worker, tasks, label=_batch_label):
        if isinstance(outs, BaseException):  # the worker could not start the batch
            outs = [outs] * len(task["uris"])
        for uri, out in zip(task["uris"], outs, strict=True):
            record(uri, out)
    return size


def _score_overlapped(
    ex: Executor,
    adapter: InputAdapter,
    uris: Sequence[str],
    segmenter: Segmenter,
    engine: FeatureEngine,
    runner: TransformRunner,
    record: Callable[[str, Any], None],
) -> None:
    """This process reads and windows the next source while the executor's thread scores
    the previous one."""
    reads = _read_ahead(adapter, uris, segmenter)

    def score(read: _Read | tuple[str, Exception]) -> Any:
        if isinstance(read[1], Exception):
            raise read[1]
        return _finish(read, segmenter, engine, runner)  # type: ignore[arg-type]

    for read, out in ex.iter_batches(score, reads):
        record(read[0], out)


def _checked_sources(sources: Sequence[str], workers: int, on_error: str) -> list[str]:
    """The source URIs as strings, once the scoring options are known to be valid.

    Raises
    ------
    PipelineError
        A bad ``on_error`` or ``workers``, or a source listed twice.
    """
    if on_error not in ("skip", "raise"):
        raise PipelineError(f"on_error must be 'skip' or 'raise', got {on_error!r}", step="score")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PipelineError(f"workers must be an integer >= 1, got {workers!r}", step="score")
    uris = [str(u) for u in sources]
    if len(set(uris)) != len(uris):
        dup = sorted({u for u in uris if uris.count(u) > 1})
        raise PipelineError(f"sources listed more than once: {dup}", step="score")
    return uris


class _Tally:
    """Per-source outcomes of the feature pass, in completion order, with progress events."""

    def __init__(self, total: int, on_error: str, progress: ProgressCallback | None) -> None:
        self.total, self.on_error, self.progress = total, on_error, progress
        self.results: dict[str, tuple[SourceInfo, list[Segment], str | None]] = {}
        self.errors: dict[str, str] = {}

    def record(self, uri: str, out: Any) -> None:
        """Keep a result, or log and keep a skipped source's error (``on_error="skip"``)."""
        if isinstance(out, BaseException):
            if self.on_error == "raise" or not isinstance(out, Exception):
                raise out
            msg = f"{type(out).__name__}: {out}"
            print(f"kuration: skipped source {uri}: {msg}", file=sys.stderr)
            self.errors[uri] = msg
            status = "error"
        else:
            self.results[uri] = out
            status = "ok"
        done = len(self.results) + len(self.errors)
        emit(
            self.progress,
            "scoring",
            "advance",
            current=done,
            total=self.total,
            source=uri,
            status=status,
        )


def _batch_label(task: Mapping[str, Any]) -> str:
    uris = task["uris"]
    return uris[0] if len(uris) == 1 else f"{uris[0]} (and {len(uris) - 1} more sources)"


def _read_ahead(
    adapter: InputAdapter, uris: Sequence[str], segmenter: Segmenter
) -> Iterator[_Read | tuple[str, Exception]]:
    """Read and window each source in turn (in the lead thread: the local executor draws the
    next one while its worker thread scores the previous); a failure travels as the item."""
    for uri in uris:
        try:
            yield _read_segment(adapter, uri, segmenter)
        except Exception as exc:
            yield uri, exc


def _merge(
    results: dict[str, tuple[SourceInfo, list[Segment], str | None]],
    errors: dict[str, str],
    total: int,
    timing: dict[str, float],
) -> ScoringResult:
    """The pool in sorted order (identical for any worker count and completion order).

    Raises
    ------
    KurationError
        Two sources share an id.
    EmptyPoolError
        No source yielded a segment.
    """
    infos: dict[str, SourceInfo] = {}
    segments: list[Segment] = []
    skipped: dict[str, str] = {}
    for uri in sorted(results):
        info, segs, reason = results[uri]
        if info.source_id in infos:
            raise KurationError(
                f"two sources share the id {info.source_id!r} ({infos[info.source_id].uri}, {uri})"
            )
        infos[info.source_id] = info
        segments.extend(segs)
        if reason:
            skipped[info.source_id] = reason
    segments.sort(key=lambda s: s.key)
    if not segments:
        raise EmptyPoolError(
            f"no segments: all {total} sources failed, were shorter than one window "
            "or had no entity in any window",
            errors={**errors, **skipped},
        )
    return ScoringResult(segments, infos, errors, skipped, timing)


def entity_key(entity_id: Any) -> str:
    return tag_entity_id(entity_id)
