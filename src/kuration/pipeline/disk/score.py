"""The disk pool's score stage: each source into its own checkpointed partition, on the run's executor.

Used by both disk runtimes (the count selection of :mod:`kuration.pipeline.disk.pool`
and the hours run of :mod:`kuration.pipeline.disk.hours`).

* The **lead** walks the sources in canonical (sorted URI) order and does the
  cheap part: the source's fingerprint, its partition key and
  :meth:`~kuration.pipeline.disk.checkpoint.StageCheckpoint.lookup`.  A hit is
  reused as it is (no task; a :class:`~kuration.core.executors.Done` payload).
* Each **miss** is one task of the executor's ordered scheduler
  (:meth:`~kuration.core.executors.Executor.iter_batches`, at most
  ``max_in_flight`` in flight): read the source, cut its windows, score them
  (metrics, then transforms; the windows' SHA-256 when a ``dedup`` filter needs
  them) and write the partition -- an attempt file, then the partition commit --
  returning the commit, or with ``on_error="skip"`` the error message.  With
  ``local`` the lead reads and windows the next miss while the executor's thread
  scores and writes the previous one (as the in-memory scoring overlaps them: at
  most ``max_in_flight`` sources read and not yet folded).  ``process`` and
  ``ray`` run it in a worker that rebuilds the adapter, segmenter, strategy and
  transforms from their JSON form once per worker process, after importing the
  run's plugins (:func:`~kuration.core.executors.enter_worker_environment`, as the
  in-memory scoring's workers do); the :class:`StageCheckpoint` travels as its
  namespace, so the worker publishes into the lead's.
* The lead folds the outcomes in canonical order -- hits and misses interleaved as
  the sources sort -- calling ``keep`` and emitting each source's ``scoring``
  advance event, so the commits and everything built from them are the same for
  any executor, worker count and completion order, and a partition's bytes are the
  same (the same batches written by the same code).

A run killed while workers score leaves the partitions they published; a later
run with the same run key reuses them (attempt files without a commit are swept).
"""

from __future__ import annotations

import functools
import pickle
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...contracts.buffer import build_window
from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segment, Segmenter
from ...core.executors import (
    Done,
    Executor,
    LocalExecutor,
    enter_worker_environment,
    worker_environment,
)
from ...core.progress import ProgressCallback, emit
from ...errors import KurationError, PipelineError, SourceChangedError
from ...metrics.alloc import retain_freed_memory
from ...metrics.features import FeatureEngine
from ...metrics.transform_exec import TransformRunner, runner_for
from ...selection.dedup import window_digest
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter, adapter_from_dict
from ...sources.identity import SourceDigest
from ..run.strategy import load_strategy, resolve_uses, strategy_engine
from ..spec.plan import StageTelemetry
from .checkpoint import PartitionCommit, StageCheckpoint, key_digest
from .segment_batch import SegmentBatch

__all__ = ["Describe", "ScoredStage", "score_stage", "score_task"]

#: ``describe(uri, digest, table, segments)``: what a partition's meta records of its source
#: (``digest``: the SourceDigest of the bytes decoded); it runs where the source is scored
#: (a worker: a module-level function)
Describe = Callable[[str, SourceDigest, Any, list[Segment]], Mapping[str, Any]]
#: a miss's outcome: its commit or (``on_error="skip"``) its error, and seconds per part
Outcome = tuple[PartitionCommit | str, dict[str, float]]


@dataclass
class ScoredStage:
    """What the score stage produced.

    Attributes
    ----------
    commits : dict of source URI to PartitionCommit
        As ``keep`` returned them, for every source scored or reused.
    errors : dict of source URI to str
        Skipped sources and why (``on_error="skip"``).
    execution : dict
        How the misses ran: ``executor``, ``workers``, ``batch_size`` (sources per
        task), ``max_in_flight``, ``queue_depth`` (the most tasks in flight; 0 when
        every partition was reused) and ``tasks``.
    parts_s : dict of str to float
        Seconds per part summed over the scored sources, where they ran: ``read``,
        ``segment``, ``features`` (metrics, transforms, digests), ``write`` (the
        partition, commit included); ``fsync``: the stage commit's wait for durability
        (one sync for the stage, in the lead).
    unidentified : list of str
        Sources without a strong identity (their adapter fingerprint is ``""``: a
        remote object with neither version nor ETag, a logical id): scored afresh,
        never taken from a checkpoint.
    """

    commits: dict[str, PartitionCommit] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)
    parts_s: dict[str, float] = field(default_factory=dict)
    unidentified: list[str] = field(default_factory=list)

    @property
    def n_pool(self) -> int:
        """Segments written (or reused) over every partition."""
        return sum(int(c.rows) for c in self.commits.values())

    def telemetry(
        self, ck: StageCheckpoint, wall: float, n_sources: int, batch_rows: int, **kw: Any
    ) -> StageTelemetry:
        """The ``read+segment+features`` telemetry of this stage run over ``ck`` (``kw``:
        other :class:`StageTelemetry` fields, such as ``island``)."""
        ex = self.execution
        return StageTelemetry(
            "read+segment+features",
            wall,
            rows_in=n_sources,
            rows_out=self.n_pool,
            partitions=len(self.commits),
            bytes=ck.bytes_written + ck.bytes_read,
            checkpoint_hits=ck.hits,
            checkpoint_misses=ck.misses,
            executor=ex.get("executor"),
            batch_size=ex.get("batch_size"),
            queue_depth=ex.get("queue_depth"),
            parts_s=tuple(sorted(self.parts_s.items())) or None,
            batch_rows=batch_rows,
            **kw,
        )


@dataclass(frozen=True)
class _Scorer:
    """One process's components for scoring sources (built once per stage or worker)."""

    adapter: InputAdapter
    segmenter: Segmenter
    engine: FeatureEngine
    runner: TransformRunner
    features: tuple[str, ...]
    digests: bool

    @classmethod
    def build(
        cls,
        adapter: InputAdapter,
        segmenter: Segmenter,
        st: Strategy,
        schema: SchemaSpec,
        worker: bool = False,
    ) -> _Scorer:
        """The components of ``st`` over ``schema``; a ``worker`` keeps its transforms built
        for its life (:func:`~kuration.metrics.transform_exec.runner_for`), the lead builds
        them for one stage.

        Raises
        ------
        MetricCompileError, TransformError, StrategyError
            The strategy's metrics or transforms do not compile.
        """
        engine = strategy_engine(st, schema)
        transforms, _ = resolve_uses(st, schema)
        wants = any(f.get("filter") == "dedup" for f in st.filters)
        runner = runner_for(transforms) if worker else TransformRunner(transforms)
        return cls(adapter, segmenter, engine, runner, tuple(st.feature_names), wants)


@dataclass(frozen=True)
class _Stage:
    """What every task of one stage shares (it pickles: ``describe`` by reference)."""

    ck: StageCheckpoint
    batch_rows: int
    on_error: str
    describe: Describe | None = None


class _Read(NamedTuple):
    """One source read and windowed, ahead of its scoring: its table, the digest of the bytes
    decoded, its windows and seconds per part (``read``, ``segment``)."""

    table: Any
    digest: SourceDigest
    segs: list[Segment]
    parts: dict[str, float]


def _read_source(sc: _Scorer, uri: str, fp: str) -> _Read:
    """The first half of a source's pass: read it (it must be the bytes its fingerprint
    ``fp``, the partition key's, names) and cut its windows."""
    retain_freed_memory()  # whole sources: their temporaries stay mapped (metrics.alloc)
    t0 = time.perf_counter()
    table, digest = sc.adapter.read_checked(uri, expect=SourceDigest(fp))
    table = sc.segmenter.presence(table)  # present_where, when set
    t1 = time.perf_counter()
    segs = sc.segmenter.segments(table.source_id, table.present, table.entity_ids)
    parts = {"read": t1 - t0, "segment": time.perf_counter() - t1}
    return _Read(table, digest, segs, parts)


def _score_source(
    sc: _Scorer,
    uri: str,
    fp: str,
    describe: Callable[[SourceDigest, Any, list[Segment]], Mapping[str, Any]] | None,
    ahead: _Read | Exception | None = None,
) -> tuple[list[Segment], list[bytes] | None, dict[str, Any], dict[str, float]]:
    """One source read (or its read ``ahead`` of time, by the lead), windowed and scored;
    the digests of its windows when dedup needs them; its partition's meta (``describe``
    adds to it); seconds per part."""
    if isinstance(ahead, Exception):
        raise ahead
    table, digest, segs, parts = ahead if ahead is not None else _read_source(sc, uri, fp)
    t2 = time.perf_counter()
    if segs:
        sc.engine.score_segments(table, segs)
        if sc.runner.uses:
            try:
                sc.runner.run(table, segs)
            except BaseException:
                sc.runner.reset()  # the next source starts from freshly built transforms
                raise
    digests = None
    if sc.digests:
        digests = [
            window_digest(build_window(table, s.start_idx, s.end_idx, entity=s.entity))
            for s in segs
        ]
    meta = {"source_id": table.source_id, "uri": uri, "n_steps": table.n_steps, "n": len(segs)}
    if describe is not None:
        meta.update(describe(digest, table, segs))
    parts = {**parts, "features": time.perf_counter() - t2}
    return segs, digests, meta, parts


def _score_miss(
    sc: _Scorer, stage: _Stage, source: tuple[str, str, str], ahead: _Read | Exception | None = None
) -> Outcome:
    """Score one source (``uri``, ``fingerprint``, partition ``key``; its read ``ahead``
    when the lead read it) and write its partition.

    Raises
    ------
    Exception
        The source's failure with ``on_error="raise"``; a partition that cannot be written
        or does not read back (``DatasetIntegrityError``), whatever ``on_error``.
    """
    uri, fp, key = source
    desc = None if stage.describe is None else functools.partial(stage.describe, uri)
    try:
        segs, dig, meta, parts = _score_source(sc, uri, fp, desc, ahead)
    except Exception as exc:
        if stage.on_error == "raise" or isinstance(exc, SourceChangedError):
            raise
        return f"{type(exc).__name__}: {exc}", {}
    meta["fingerprint"] = fp
    features = list(sc.features)
    t0 = time.perf_counter()
    batches = (b.batch for b in SegmentBatch.split(segs, features, stage.batch_rows, digests=dig))
    arrow = SegmentBatch.arrow_schema(features)
    commit = stage.ck.write(uri, key, arrow, batches, meta)
    parts["write"] = time.perf_counter() - t0
    return commit, parts


# ---- in a worker ----------------------------------------------------------------------------

_SCORERS: dict[str, _Scorer] = {}


def _worker_scorer(key: str, base: Mapping[str, Any]) -> _Scorer:
    """This worker's components for the stage ``key`` (built on its first task)."""
    if key not in _SCORERS:
        enter_worker_environment(base["env"])
        schema = SchemaSpec.from_dict(base["schema"])
        st = load_strategy(base["strategy"], schema)
        adapter = adapter_from_dict(base["adapter"], schema, base.get("source_ids"))
        scorer = _Scorer.build(adapter, Segmenter(**base["segmenter"]), st, schema, worker=True)
        _SCORERS.clear()  # one stage at a time per worker
        _SCORERS[key] = scorer
    return _SCORERS[key]


def score_task(task: Mapping[str, Any]) -> Outcome:
    """In a ``process`` or ``ray`` worker: score one source and write its partition into the
    lead's checkpoint namespace; returns its commit (or its error message with
    ``on_error="skip"``) and seconds per part.

    Raises
    ------
    PluginError
        A plugin module does not import in the worker.
    Exception
        As :func:`_score_miss`.
    """
    sc = _worker_scorer(task["key"], task["base"])
    return _score_miss(sc, task["stage"], task["source"])


# ---- in the lead ----------------------------------------------------------------------------


def _task_fn(
    ex: Executor,
    stage: _Stage,
    parts: tuple[InputAdapter, Segmenter, Strategy, SchemaSpec],
    env: Mapping[str, Any] | None,
) -> tuple[Callable[[Any], Outcome], dict[str, Any], _ReadAhead | None]:
    """The function the executor runs for each miss, what each miss's payload carries
    besides its ``source``, and (``local``: the lead reads the next source while the
    executor's thread scores and writes the previous one) the lead's read of a miss.

    Raises
    ------
    PipelineError
        ``describe`` does not pickle while the executor runs tasks in other processes.
    """
    adapter, segmenter, st, schema = parts
    if not ex.parallel:
        sc = _Scorer.build(adapter, segmenter, st, schema)

        def ahead(uri: str, fp: str) -> _Read | Exception:
            try:
                return _read_source(sc, uri, fp)
            except Exception as exc:  # raised where the source is scored (on_error applies)
                return exc

        return (lambda task: _score_miss(sc, stage, task["source"], task["ahead"])), {}, ahead
    try:
        pickle.dumps(stage.describe)
    except Exception as exc:
        raise PipelineError(
            f"the disk pool's describe hook must be a module-level function to run on "
            f"executor {ex.name!r}: {exc}",
            step="score",
        ) from exc
    _Scorer.build(adapter, segmenter, st, schema)  # a bad metric fails here, before a task
    base = {
        "schema": schema.to_dict(),
        "adapter": adapter.to_dict(),
        "source_ids": adapter.source_id_map(),
        "strategy": st.to_dict(),
        "segmenter": segmenter.to_dict(),
        "env": dict(env) if env is not None else worker_environment((), True),
    }
    return score_task, {"key": key_digest(base), "base": base, "stage": stage}, None


_ReadAhead = Callable[[str, str], "_Read | Exception"]


class _Unread(NamedTuple):
    """A source whose fingerprint failed (``on_error="skip"``): skipped before any task."""

    uri: str
    error: str


class _Fold:
    """The lead's side: lookups in canonical order, then each outcome folded in that order."""

    def __init__(
        self,
        ck: StageCheckpoint,
        adapter: InputAdapter,
        extra: Mapping[str, Any],
        *,
        keep: Callable[[str, PartitionCommit], PartitionCommit] | None,
        progress: ProgressCallback | None,
        total: int,
        remote: bool,
        on_error: str,
        ahead: _ReadAhead | None = None,
    ) -> None:
        self.ck, self.adapter, self.extra, self.on_error = ck, adapter, extra, on_error
        self.ahead = ahead
        self.keep, self.progress, self.total, self.remote = keep, progress, total, remote
        self.out = ScoredStage()
        self.keys: dict[str, str] = {}  # partition keys of the sources kept (stage commit)
        self.done = 0

    def payloads(self, todo: Sequence[str]) -> Iterator[Any]:
        """A :class:`Done` hit or a task for each source, drawn lazily by the scheduler.

        Where the lead reads ahead and no commit of the source exists (a fresh stage),
        nothing can be reused: the lead's read comes first and its digest is the
        fingerprint (the read hashes the bytes it decodes), so the file is not hashed once
        more for the key.
        """
        for uri in todo:
            read: _Read | Exception | None = None
            if self.ahead is not None and self.ck.committed(uri) is None:
                read = self.ahead(uri, "")
            try:
                fp = self._fingerprint(uri, read)
            except Exception as exc:
                if self.on_error == "raise":
                    raise
                yield Done(_Unread(uri, f"{type(exc).__name__}: {exc}"))  # skipped, not read
                continue
            sid = self.adapter.source_id(uri)  # an id assigned anew invalidates the partition
            key = self.ck.partition_key(uri, {"uri": uri, "fingerprint": fp, "source_id": sid})
            # a source without a strong identity never authorizes reuse (spec 000)
            hit = self.ck.lookup(uri, key) if fp else None
            if not fp:
                self.out.unidentified.append(uri)
            if hit is not None:
                yield Done(hit)
            elif self.ahead is None:
                yield {**self.extra, "source": (uri, fp, key)}
            else:
                ahead = read if read is not None else self.ahead(uri, fp)
                yield {**self.extra, "source": (uri, fp, key), "ahead": ahead}

    def _fingerprint(self, uri: str, read: _Read | Exception | None) -> str:
        """The source's fingerprint: what its read found (a read that any fingerprint taken
        before it would have had to match), else the adapter's."""
        if isinstance(read, _Read) and read.digest.fingerprint:
            return read.digest.fingerprint
        return self.adapter.fingerprint(uri)

    def fold(self, payload: Any, outcome: Any) -> None:
        """Keep one source's commit (or record its error), then emit its advance event.

        Raises
        ------
        Exception
            A task's exception (``on_error="raise"``, or a partition that cannot be written).
        """
        if isinstance(payload, Done):
            unread = isinstance(outcome, _Unread)
            uri, commit = (outcome.uri, outcome.error) if unread else (outcome.name, outcome)
        else:
            uri = payload["source"][0]
            if isinstance(outcome, BaseException):
                raise outcome
            commit, parts = outcome
            for k, v in parts.items():
                self.out.parts_s[k] = self.out.parts_s.get(k, 0.0) + v
        if isinstance(commit, str):
            self.out.errors[uri] = commit
            print(f"kuration: skipped source {uri}: {commit}", file=sys.stderr)
        else:
            if self.remote and not isinstance(payload, Done):
                self.ck.count_written(commit)
            self.keys[uri] = commit.key
            self.out.commits[uri] = commit if self.keep is None else self.keep(uri, commit)
        self.done += 1
        status = "error" if uri in self.out.errors else "ok"
        emit(
            self.progress,
            "scoring",
            "advance",
            current=self.done,
            total=self.total,
            source=uri,
            status=status,
        )


def score_stage(
    ck: StageCheckpoint,
    adapter: InputAdapter,
    uris: Sequence[str],
    segmenter: Segmenter,
    st: Strategy,
    schema: SchemaSpec,
    *,
    batch_rows: int,
    on_error: str,
    durable: bool,
    describe: Describe | None = None,
    progress: ProgressCallback | None = None,
    keep: Callable[[str, PartitionCommit], PartitionCommit] | None = None,
    executor: Executor | None = None,
    env: Mapping[str, Any] | None = None,
) -> ScoredStage:
    """Every source into its own partition, reused when its key matches a valid commit
    (see the module docs), then the stage commit.

    Parameters
    ----------
    ck : StageCheckpoint
        The stage's checkpoints.
    adapter, uris, segmenter, st, schema
        What to read, how to window it and which features to compute.
    batch_rows : int
        Rows per :class:`SegmentBatch`.
    on_error : {"skip", "raise"}
        A failing source is logged and recorded in ``errors``, or its exception re-raised.
    durable : bool
        Make every partition durable (one sync for the stage) before the stage commit.
    describe : callable, optional
        ``describe(uri, digest, table, segments)`` adds to each new partition's meta;
        it runs where the source is scored (a module-level function for ``process``/``ray``).
    progress : callable, optional
        Gets a ``scoring`` advance event per source, in canonical order.
    keep : callable, optional
        ``keep(uri, commit)`` is what is kept of each partition's commit; it runs in the lead,
        in canonical order, as each outcome is collected (so what ``describe`` recorded
        need not be held for every source at once).
    executor : Executor, optional
        Runs the misses (left open: its owner closes it); None scores them inline here.
    env : mapping, optional
        The workers' :func:`~kuration.core.executors.worker_environment` (plugins).

    Raises
    ------
    KurationError
        Two sources share an id; with ``on_error="raise"``, the first source's error.
    DatasetIntegrityError
        A partition does not read back, or fails its checksum when the stage commit is
        published.
    ExecutorError
        A worker process or Ray task died.
    PipelineError
        ``describe`` does not pickle for a ``process`` or ``ray`` executor.
    """
    ex = executor if executor is not None else LocalExecutor()
    stage = _Stage(ck, batch_rows, on_error, describe)
    fn, extra, ahead = _task_fn(ex, stage, (adapter, segmenter, st, schema), env)
    todo = sorted(set(uris))  # a source listed twice is one partition
    fold = _Fold(
        ck,
        adapter,
        extra,
        keep=keep,
        progress=progress,
        total=len(todo),
        remote=ex.parallel,
        on_error=on_error,
        ahead=ahead,
    )
    ex.peak_in_flight, tasks0 = 0, ex.tasks  # this stage's own queue depth and tasks
    tasks = fold.payloads(todo)
    for payload, outcome in ex.iter_batches(fn, tasks, label=_label):
        fold.fold(payload, outcome)
    f0 = ck.fsync_s
    ck.commit_stage(fold.keys, durable=durable)
    fold.out.parts_s["fsync"] = ck.fsync_s - f0
    _unique_ids(fold.out.commits)
    fold.out.execution = {
        "executor": ex.name,
        "workers": ex.workers,
        "batch_size": 1,
        "max_in_flight": ex.max_in_flight,
        "queue_depth": ex.peak_in_flight,
        "tasks": ex.tasks - tasks0,
    }
    return fold.out


def _label(task: Mapping[str, Any]) -> str:
    return str(task["source"][0])


def _unique_ids(commits: Mapping[str, PartitionCommit]) -> None:
    """Raises KurationError when two sources share an id."""
    seen: dict[str, str] = {}
    for uri, c in sorted(commits.items()):
        sid = c.meta["source_id"]
        if sid in seen:
            raise KurationError(f"two sources share the id {sid!r} ({seen[sid]}, {uri})")
        seen[sid] = uri
