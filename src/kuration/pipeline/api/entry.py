"""The established entry points over the :class:`~kuration.Pipeline`.

:func:`write_dataset` builds a Pipeline from its arguments and executes it;
:func:`run_job` is ``Pipeline.from_job(job).options(...).write(out, ...)``.
Both sit above :mod:`kuration.pipeline.api.pipeline` (imports point down).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segmenter
from ...core.config import check_workers
from ...core.progress import ProgressCallback
from ...errors import KurationError, OutputSpecError
from ...output.spec import OutputSpec
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter
from ..dispatch.execute import execute
from ..dispatch.hours import DatasetWriteResult
from ..spec.logical import HoursSelection, PipelineOptions
from .pipeline import Pipeline

__all__ = ["run_job", "write_dataset"]


def write_dataset(
    out: str | os.PathLike[str],
    *,
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    strategy: Strategy,
    segmenter: Segmenter,
    spec: OutputSpec,
    encoder: Any = None,
    train_hours: float,
    test_hours: float,
    sample_hz: float | None = None,
    seed: int = 0,
    group_of: Callable[[str], str | None] | Mapping[str, str] | None = None,
    clip_aggregate: str = "max",
    min_track_seconds: float = 0.0,
    span_steps: int | None = None,
    span_seconds: float | None = None,
    max_group_overshoot: float | None = None,
    tag_coverage: bool = False,
    min_tag_frac: float = 0.1,
    allow_empty_split: bool = False,
    workers: int = 1,
    executor: str | None = None,
    executor_options: Mapping[str, Any] | None = None,
    streaming: bool = False,
    pool: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    memory_budget: int | str | None = None,
    on_error: str = "skip",
    resume: bool = False,
    force: bool = False,
    durable: bool = True,
    progress: ProgressCallback | None = None,
    job: Mapping[str, Any] | None = None,
    plugins: Sequence[str] = (),
    include_entry_points: bool = True,
) -> DatasetWriteResult:
    """Score ``sources``, rank tracks by priority, fill the train/test hour budgets and write shards.

    Parameters
    ----------
    out : path or str
        Destination directory, or an object-store URL (``s3://bucket/prefix``,
        ``gs://...``, ``az://...``: see :mod:`kuration.pipeline.destination.remote`); a non-empty
        one needs ``resume`` or ``force``.
    schema, adapter, sources, strategy, segmenter, spec :
        The input side, the selection and the output spec.
    encoder : OutputEncoder, optional
        Fills ``encoder:`` modalities (:class:`PassthroughEncoder` when omitted).
    train_hours, test_hours : float
        Budgets in hours of track time per split.
    sample_hz, clip_aggregate, min_track_seconds, span_steps, span_seconds, group_of, \
    max_group_overshoot, tag_coverage, min_tag_frac, allow_empty_split :
        Hours options: see :class:`~kuration.pipeline.spec.logical.HoursSelection`.
    seed : int
        Seeds the split assignment and the method's tie-breaks.
    workers : int
        Workers for the feature pass and the shard writing (results do not depend on it).
    executor, executor_options : optional
        Where the workers run (``local``, ``process``, ``ray`` or a registered executor;
        None: the one ``workers`` implies) and its own settings (Ray's ``address``).
    streaming : bool
        Read each source lazily in two passes (bounded memory; the same artifact).
    pool : {"memory", "disk"}, optional
        Where the scored pool lives: in memory, or in checkpointed partitions and a DuckDB
        index (the ``[scale]`` extra; the same artifact); None lets the memory budget
        choose.
    checkpoint_dir : path, optional
        Where the disk pool keeps its checkpoints.
    memory_budget : int or str, optional
        Fail before reading when the plan's estimated peak exceeds it (bytes or ``"2GB"``).
    on_error : {"skip", "raise"}
    resume : bool
        Continue a run into ``out``, reusing a shard only when its size and SHA-256 match
        the last committed manifest (or an interrupted run's journal) of the same fingerprint.
    force : bool
        Replace an existing dataset (the old one stays readable until publication starts).
    durable : bool
        ``fsync`` staged shards and the directories before the manifest is published.
    progress : callable, optional
    job : mapping, optional
        The job document, recorded in ``config.json``.

    Returns
    -------
    DatasetWriteResult

    Raises
    ------
    OutputSpecError
        Invalid options or an output spec that does not fit the schema and strategy
        (before any work), a missing container dependency, or a value missing while writing.
    DatasetExistsError
        ``out`` holds a dataset without ``resume``/``force``, or another writer holds it.
    EmptyPoolError
        No source produced a segment.
    GroupCapError, EmptySplitError
        The group cap starves every group of a split, or a requested split would end
        empty without ``allow_empty_split`` (both at planning, before any shard is written).
    DestinationError
        ``out`` cannot be created, locked or written.
    UnsupportedURLError
        ``out`` is a URL kuration does not write (FTP, SFTP, HTTP, ...).
    MissingExtraError
        ``out``'s object-store backend is not installed (names the extra).
    """
    with _bad_options_as_spec_error():
        selection = HoursSelection.checked(
            train_hours,
            test_hours,
            what="write_dataset",
            clip_aggregate=clip_aggregate,
            min_track_seconds=min_track_seconds,
            span_steps=span_steps,
            span_seconds=span_seconds,
            group_of=group_of,  # a callable is accepted here
            max_group_overshoot=max_group_overshoot,
            tag_coverage=tag_coverage,
            min_tag_frac=min_tag_frac,
            allow_empty_split=allow_empty_split,
            sample_hz=sample_hz,
        )
        opts = PipelineOptions(
            progress=progress,
            workers=workers,
            seed=seed,
            on_error=on_error,
            durable=durable,
            executor=executor,
            executor_options=executor_options,
            streaming=streaming,
            pool=pool,
            checkpoint_dir=None if checkpoint_dir is None else os.fspath(checkpoint_dir),
            memory_budget=memory_budget,
        )
    pipeline = Pipeline(
        schema=schema,
        adapter=adapter,
        sources=list(sources),
        segmenter=segmenter,
        strategy_=strategy,
        selection=selection,
        output_spec=spec,
        encoder=encoder,
        opts=opts,
        plugin_modules=tuple(plugins),
        include_entry_points=include_entry_points,
        job=job,
    )
    return _write(pipeline, out, sources, force=force, resume=resume)


@contextmanager
def _bad_options_as_spec_error() -> Iterator[None]:
    """Report a bad hours or run option as :class:`OutputSpecError`, the error
    :func:`write_dataset` documents for invalid options."""
    try:
        yield
    except KurationError as exc:
        raise OutputSpecError(str(exc)) from None


def _write(
    pipeline: Pipeline,
    out: str | os.PathLike[str],
    sources: Sequence[str],
    *,
    force: bool,
    resume: bool,
) -> DatasetWriteResult:
    """Plan and run ``pipeline`` into ``out``; its result, a written dataset (an hours run)."""
    run = execute(
        pipeline.run_spec(),
        out,
        force=force,
        resume=resume,
        resolved_sources=[str(s) for s in sources],
    )
    assert isinstance(run.result, DatasetWriteResult)
    return run.result


def run_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    resume: bool = False,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    streaming: bool | None = None,
    executor_options: Mapping[str, Any] | None = None,
    memory_budget: int | str | None = None,
    pool: str | None = None,
    checkpoint_dir: str | None = None,
) -> DatasetWriteResult:
    """Run a job end to end: ``Pipeline.from_job(job).options(...).write(out, ...)``.

    ``force`` replaces an existing dataset at ``out``; ``resume`` continues (or
    repeats) the same run there, reusing shards whose checksums still match.
    ``workers`` (>= 1), ``executor`` (``local``, ``process``, ``ray`` or a registered
    one) and ``executor_options`` (``ray_address`` is Ray's ``address`` option) replace the
    job's (the artifact does not depend on them), and so do
    ``streaming``, ``memory_budget`` (bytes or ``"2GB"``), ``pool`` (``memory`` or
    ``disk``) and ``checkpoint_dir`` when given.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    PipelineError
        An unknown ``executor``, or ``executor`` and ``workers`` that do not go together.
    KurationError
        From scoring and writing (e.g. EmptyPoolError, DatasetExistsError).
    ExecutorError
        A worker process or Ray task died.
    """
    if workers is not None:
        check_workers(workers)
    opts: dict[str, Any] = {"progress": progress}
    if workers is not None:
        opts["workers"] = workers
    if executor is not None:
        opts["executor"] = executor
    if executor_options is not None:
        opts["executor_options"] = executor_options
    if ray_address is not None:
        opts["ray_address"] = ray_address  # folded into executor_options["address"]
    if streaming is not None:
        opts["streaming"] = bool(streaming)
    if memory_budget is not None:
        opts["memory_budget"] = memory_budget
    if pool is not None:
        opts["pool"] = pool
    if checkpoint_dir is not None:
        opts["checkpoint_dir"] = checkpoint_dir
    res = Pipeline.from_job(job).options(**opts).write(out, force=force, resume=resume)
    assert isinstance(res, DatasetWriteResult)
    return res
