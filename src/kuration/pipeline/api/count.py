"""The count path's function-style entry points, each a thin wrapper over :class:`~kuration.Pipeline`.

* :func:`curate` -- ``Pipeline().source(...).segment(...).metrics(...).select(n).run()``.
* :func:`run_experiment` -- :meth:`Pipeline.compare <kuration.Pipeline.compare>`: score
  the pool once, select with every strategy, compare the selections.
* :func:`curate_job` / :func:`experiment_job` -- the same from a job file
  (``Pipeline.from_job(job).select(n)``; what ``kur curate`` and ``kur experiment`` run).

The selection itself (:func:`select_segments`, :func:`compare_strategies` and their
results) lives in :mod:`kuration.pipeline.memory.pool` and is re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segmenter
from ...core.config import check_seed, check_workers
from ...core.progress import ProgressCallback
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter
from ..disk.pool import DiskSelection
from ..memory.pool import CurationResult, ExperimentResult, compare_strategies, select_segments
from ..run.strategy import load_strategy
from .pipeline import Pipeline

__all__ = [
    "CurationResult",
    "ExperimentResult",
    "compare_strategies",
    "curate",
    "curate_job",
    "experiment_job",
    "run_experiment",
    "select_segments",
]


def curate(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Strategy,
    n: int,
    *,
    seed: int = 0,
    workers: int = 1,
    executor: str | None = None,
    executor_options: Mapping[str, Any] | None = None,
    pool: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    memory_budget: int | str | None = None,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    plugins: Sequence[str] = (),
) -> CurationResult | DiskSelection:
    """Score ``sources`` and select ``n`` segments with ``strategy`` (the count path).

    A wrapper over :class:`~kuration.Pipeline`::

        Pipeline().source(adapter, {"uris": sources}).segment(segmenter).metrics(strategy)
        .select(n).options(seed=..., workers=..., on_error=..., progress=...).run()

    ``sources`` are used as given (already resolved).  Parameters are those of
    :func:`~kuration.pipeline.run.scoring.score_sources` and :func:`select_segments`;
    ``executor``, ``executor_options``, ``pool``, ``checkpoint_dir`` and ``memory_budget``
    are the :class:`~kuration.pipeline.spec.logical.PipelineOptions` of the same names
    (``pool="disk"`` returns a :class:`~kuration.pipeline.disk.pool.DiskSelection`).

    Raises
    ------
    EmptyPoolError
        No source produced a segment.
    KurationError
        With ``on_error="raise"``, the first source error.
    """
    p = Pipeline().source(adapter, {"uris": [os.fspath(s) for s in sources]}, schema=schema)
    if plugins:
        p = p.plugins(plugins)
    return (
        p.segment(segmenter)
        .metrics(strategy)
        .select(n)
        .options(
            seed=int(seed),
            workers=workers,
            on_error=on_error,
            progress=progress,
            executor=executor,
            executor_options=executor_options,
            pool=pool,
            checkpoint_dir=None if checkpoint_dir is None else os.fspath(checkpoint_dir),
            memory_budget=memory_budget,
        )
        .run()
    )


def run_experiment(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategies: Sequence[Strategy],
    n: int,
    *,
    seed: int = 0,
    workers: int = 1,
    executor: str | None = None,
    executor_options: Mapping[str, Any] | None = None,
    on_error: str = "skip",
    progress: ProgressCallback | None = None,
    plugins: Sequence[str] = (),
    axes: Sequence[str] | None = None,
    n_bins: int = 4,
) -> ExperimentResult:
    """Score ``sources`` once with every strategy's features, then :func:`compare_strategies`.

    A wrapper over :meth:`kuration.Pipeline.compare` (``sources`` used as given).

    Raises
    ------
    StrategyError
        No strategy, two strategies defining one feature differently, or repeated names.
    EmptyPoolError
        No source produced a segment.
    """
    p = Pipeline().source(adapter, {"uris": [os.fspath(s) for s in sources]}, schema=schema)
    if plugins:
        p = p.plugins(plugins)
    p = p.segment(segmenter).options(
        seed=int(seed),
        workers=workers,
        on_error=on_error,
        progress=progress,
        executor=executor,
        executor_options=executor_options,
    )
    return p.compare(strategies, n, axes=axes, n_bins=n_bins)


def _job_pipeline(
    job: str | os.PathLike[str] | Mapping[str, Any],
    seed: int | None,
    workers: int | None,
    progress: ProgressCallback | None,
) -> Any:
    p = Pipeline.from_job(job)
    opts: dict[str, Any] = {"progress": progress}
    if seed is not None:
        opts["seed"] = check_seed(seed)
    if workers is not None:
        opts["workers"] = check_workers(workers)
    return p.options(**opts)


def _strategy(spec: Any, schema: SchemaSpec) -> Strategy:
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, Path):
        spec = str(spec)
    return load_strategy(spec, schema)


def curate_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    n: int,
    *,
    strategy: Strategy | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    seed: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    pool: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
) -> CurationResult | DiskSelection:
    """:func:`curate` with the job's schema, adapter, sources and segmenter:
    ``Pipeline.from_job(job).select(n)``.

    ``strategy`` replaces the job's (a path relative to the working directory);
    ``seed``, ``workers``, ``pool`` and ``checkpoint_dir`` (where the disk pool keeps
    its checkpoints; relative to the working directory) default to the job's.  A plan that runs on
    the disk-backed pool (``pool="disk"``) returns a
    :class:`~kuration.pipeline.disk.pool.DiskSelection`.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    """
    p = _job_pipeline(job, seed, workers, progress)
    if strategy is not None:
        p = p.metrics(_strategy(strategy, p.schema))
    if pool is not None:
        p = p.options(pool=pool)
    if checkpoint_dir is not None:
        p = p.options(checkpoint_dir=os.fspath(Path(checkpoint_dir).resolve()))
    res: CurationResult = p.select(n).run()
    return res


def experiment_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    strategies: Sequence[Strategy | Mapping[str, Any] | str | os.PathLike[str]],
    n: int,
    *,
    seed: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> ExperimentResult:
    """:func:`run_experiment` with the job's schema, adapter, sources and segmenter:
    ``Pipeline.from_job(job).compare(strategies, n)``.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    """
    p = _job_pipeline(job, seed, workers, progress)
    res: ExperimentResult = p.compare([_strategy(s, p.schema) for s in strategies], n)
    return res
