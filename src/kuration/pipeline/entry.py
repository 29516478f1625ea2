"""The established entry points over the :class:`~kuration.Pipeline`.

:func:`write_dataset` builds a Pipeline from its arguments and executes it;
:func:`run_job` is ``Pipeline.from_job(job).options(...).write(out, ...)``.
Both sit above :mod:`kuration.pipeline.pipeline` (imports point down).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segmenter
from ..core.config import check_workers
from ..core.progress import ProgressCallback
from ..errors import KurationError, OutputSpecError
from ..output.spec import OutputSpec
from ..selection.strategy import Strategy
from ..sources.base import InputAdapter
from .execute import execute
from .hours import DatasetWriteResult
from .logical import HoursSelection, PipelineOptions
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
    out : path
        Destination directory.  An existing dataset (anything but the lock
        file) is refused unless ``resume`` or ``force`` is given.
    schema, adapter, sources, strategy, segmenter :
        The input side and the selection.
    spec : OutputSpec
    encoder : OutputEncoder, optional
        Fills ``encoder:`` modalities (:class:`PassthroughEncoder` when omitted).
    train_hours, test_hours : float
        Budgets in hours of track time per split.
    sample_hz : float, optional
        Must equal ``schema.sample_hz`` (no resampling).
    seed : int
        Seeds the split assignment and the method's tie-breaks.
    group_of : mapping or callable, optional
        Source id to group label: stratifies the split and feeds the group cap.
    clip_aggregate : {"max", "mean", "min"}
        How a track's (or span's) overlapping segment priorities and features
        aggregate: max for inclusion strategies, mean/min for avoidance.
    min_track_seconds : float
        Tracks shorter than this never enter the pool (counted in the budget block).
    span_steps, span_seconds : optional
        Subdivide each track into independently budgeted spans of this length.
    max_group_overshoot : float, optional
        Group cap: a group's admitted time never exceeds this times
        ``budget / n_groups`` (per split).
    tag_coverage : bool
        Admit each segment tag's highest-priority track first ...
    min_tag_frac : float
        ... while that reserve stays within this fraction of the budget.
    allow_empty_split : bool
        Accept a split with a non-zero request that plans no shard (otherwise
        :class:`EmptySplitError`).  A non-empty under-filled split is never an
        error: its budget block names the binding constraint (``binding``,
        ``binding_detail``) and ``config["warnings"]`` repeats it.
    workers : int
        Processes for the feature pass (results do not depend on it).
    on_error : {"skip", "raise"}
    resume : bool
        Continue or repeat a run into an existing ``out``: a shard whose bytes
        match the size and SHA-256 recorded by the last committed manifest or
        by the staging journal of an interrupted run is reused, provided that
        run had the same fingerprint; everything else is rebuilt.
    force : bool
        Replace an existing dataset.  The old one stays readable and
        byte-identical until every new shard is staged and the new run
        starts publishing.
    durable : bool
        ``fsync`` staged shards before publication and the directories before
        the manifest is published.
    progress : callable, optional
    job : mapping, optional
        The job document, recorded in ``config.json``.

    Returns
    -------
    DatasetWriteResult

    Raises
    ------
    OutputSpecError
        Invalid options or an output spec that does not fit the schema and
        strategy (before any work), a missing container dependency, or a
        value missing for a present entity while writing.
    DatasetExistsError
        ``out`` holds a dataset and neither ``resume`` nor ``force`` is set,
        or another writer holds its lease.
    EmptyPoolError
        No source produced a segment.
    GroupCapError
        The group cap is shorter than every group's shortest candidate in a
        split with a non-zero request (planning, before any shard is written).
    EmptySplitError
        A split with a non-zero request would end empty and ``allow_empty_split``
        is false (planning, before any shard is written).
    DestinationError
        ``out`` cannot be created, locked or written.
    """
    selection = HoursSelection(
        train_hours,
        test_hours,
        clip_aggregate=clip_aggregate,
        min_track_seconds=min_track_seconds,
        span_steps=span_steps,
        span_seconds=span_seconds,
        group_of=group_of,  # type: ignore[arg-type]  # a callable is accepted here
        max_group_overshoot=max_group_overshoot,
        tag_coverage=tag_coverage,
        min_tag_frac=min_tag_frac,
        allow_empty_split=allow_empty_split,
        sample_hz=sample_hz,
    )
    try:
        opts = PipelineOptions(
            progress=progress, workers=workers, seed=seed, on_error=on_error, durable=durable
        )
    except KurationError as exc:  # write_dataset reports bad options as OutputSpecError
        raise OutputSpecError(str(exc)) from None
    p = Pipeline(
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
    run = execute(p, out, force=force, resume=resume, resolved_sources=[str(s) for s in sources])
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
) -> DatasetWriteResult:
    """Run a job end to end: ``Pipeline.from_job(job).options(...).write(out, ...)``.

    ``force`` replaces an existing dataset at ``out``; ``resume`` continues (or
    repeats) the same run there, reusing shards whose checksums still match.
    ``workers`` (>= 1) replaces the job's.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    KurationError
        From scoring and writing (e.g. EmptyPoolError, DatasetExistsError).
    """
    if workers is not None:
        check_workers(workers)
    opts: dict[str, Any] = {"progress": progress}
    if workers is not None:
        opts["workers"] = workers
    res = Pipeline.from_job(job).options(**opts).write(out, force=force, resume=resume)
    assert isinstance(res, DatasetWriteResult)
    return res
