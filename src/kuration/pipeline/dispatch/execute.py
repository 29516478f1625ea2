"""Running a :class:`~kuration.pipeline.spec.runspec.RunSpec` (a :class:`~kuration.Pipeline`'s,
:meth:`~kuration.Pipeline.run_spec`) on the runtime its plan names.

:func:`execute` plans first (:func:`~kuration.pipeline.dispatch.planner.compile_plan`:
every check that needs no data), then resolves sources (the ``provenance``
progress phase) and runs the selection.

An hours budget runs :func:`~kuration.pipeline.dispatch.hours.run_hours`: the named
steps of :mod:`kuration.pipeline.run.steps`, following the plan's islands
(read/segment/features fused per source, or features as a barrier pass when
the plan says so), each step filling its own :class:`StageTelemetry`; the plan
and that telemetry are recorded in ``config.json`` under
``provenance.execution``.

A count selection drives ``score_sources`` and ``select_segments``
(:func:`kuration.curate` is a wrapper over this); :func:`compare` scores one pool and
selects from it with several strategies (``run_experiment``).  Count telemetry is still coarse: wall time per progress phase,
measured by timing the start/complete events, with row counts read from the
results.  Registered analyzers run on the finished selection.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.gcscope import fewer_full_collections
from ...core.interrupts import import_pandas_first, is_interrupt
from ...core.jsonio import canonical_json
from ...core.plugins import without_entry_point_plugins
from ...core.progress import ProgressCallback, emit
from ...errors import KurationWarning, PipelineError, StrategyError
from ...output.commit import write_bytes_atomic
from ...selection.strategy import Strategy
from ...tools.analyzers import AnalysisSubject, get_analyzer, overlapping_rows, selected_rows
from ...tools.review import hours_selection_review
from ..disk.pool import (
    DISK_RUNTIME,
    INDEX_MEMORY,
    DiskSelection,
    budget_pool,
    plan_identity,
    select_on_disk,
)
from ..memory.pool import (
    CurationResult,
    ExperimentResult,
    compare_strategies,
    select_segments,
    with_scoring,
)
from ..run.scoring import ScoringResult, score_sources
from ..run.windows import window_reader_scope
from ..spec.budget import check_plan_memory
from ..spec.job import resolve_sources
from ..spec.logical import HoursSelection
from ..spec.plan import REFERENCE_RUNTIME, PhysicalPlan, StageTelemetry
from ..stream.passes import check_streaming
from .hours import DatasetWriteResult, check_resume_force, run_hours
from .planner import compile_plan
from .workers_fit import pool_too_small, with_note

if TYPE_CHECKING:
    from ..spec.runspec import RunSpec

__all__ = ["PipelineRun", "execute", "review"]

# progress phase -> the plan stages one call runs under it
_PHASE_STAGES = {
    "provenance": "provenance",
    "scoring": "read+segment+features",
    "transforms": "transforms",
    "scorers": "scorers",
    "writing": "tracks+write",
}


@dataclass(frozen=True)
class PipelineRun:
    """One executed pipeline.

    Attributes
    ----------
    plan : PhysicalPlan
        The plan compiled before anything was read.
    result : DatasetWriteResult or CurationResult
    telemetry : tuple of StageTelemetry
        Coarse, per progress phase (see the module docs).
    analyses : dict
        Each ``.enrich`` analyzer's report, by name.
    """

    plan: PhysicalPlan
    result: DatasetWriteResult | CurationResult | DiskSelection
    telemetry: tuple[StageTelemetry, ...] = ()
    analyses: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plan, telemetry and analyses (the result has its own ``to_dict``/config)."""
        return {
            "plan": self.plan.to_dict(),
            "telemetry": [t.to_dict() for t in self.telemetry],
            "analyses": self.analyses,
        }


class _Recorder:
    """A progress callback that times phases, forwards events, and emits the empty
    transforms/scorers phases right after scoring completes."""

    def __init__(self, user: ProgressCallback | None) -> None:
        self.user = user
        self.started: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.totals: dict[str, Any] = {}
        self.executor: str | None = None  # what ran the scoring phase

    def __call__(self, ev: dict[str, Any]) -> None:
        phase, event, now = ev["phase"], ev["event"], time.perf_counter()
        if event == "start":
            self.started[phase] = now
            self.totals[phase] = ev.get("total")
        elif event == "complete" and phase in self.started:
            self.wall[phase] = self.wall.get(phase, 0.0) + now - self.started.pop(phase)
        if self.user is not None:
            self.user(ev)
        if phase == "scoring" and event == "complete":
            for seam in ("transforms", "scorers"):  # transforms/scorers run inside scoring
                emit(self, seam, "start", total=0)
                emit(self, seam, "complete", total=0)


def _decided(notes: tuple[str, ...], decision: str) -> tuple[str, ...]:
    """The plan's notes once the run has chosen its pool: the decision first, in place of the
    planner's "chosen when the run starts" note; the other notes (workers, ...) kept."""
    return (decision, *(n for n in notes if not n.startswith("pool:")))


def _resolve(p: RunSpec, progress: ProgressCallback | None) -> list[str]:
    emit(progress, "provenance", "start", total=None)
    if isinstance(p.sources, Mapping) and "uris" in p.sources:  # resolved already (curate())
        sources = list(p.sources["uris"])
    else:
        sources = resolve_sources(p.sources, p.base, adapter=p.adapter)
    if p.adapter is not None:
        p.adapter.assign_source_ids(sources)  # unique ids, before any source is read
    check = getattr(p.adapter, "check_sources", None)
    if check is not None:  # headers and schemas only: a misnamed column fails once, first
        check(sources)
    for i, uri in enumerate(sources, 1):
        emit(progress, "provenance", "advance", current=i, total=len(sources), source=uri)
    emit(progress, "provenance", "complete", total=len(sources))
    return sources


def _fit_workers(p: RunSpec, plan: PhysicalPlan, n_sources: int) -> tuple[RunSpec, PhysicalPlan]:
    """One worker in the lead when the run's sources are too few for the pool its options
    derive (:mod:`~kuration.pipeline.dispatch.workers_fit`); the plan says so."""
    note = pool_too_small(p.opts, n_sources)
    if note is None:
        return p, plan
    p = p.with_options(workers=1)
    return p, with_note(compile_plan(p), note)


def execute(
    p: RunSpec,
    dest: str | os.PathLike[str] | None,
    *,
    force: bool,
    resume: bool,
    resolved_sources: list[str] | None = None,
) -> PipelineRun:
    """Plan ``p``, run it on the reference runtime and collect telemetry and analyses.

    ``resolved_sources`` skips source resolution (``write_dataset`` passes the
    sources it was given, already resolved).

    Raises
    ------
    PipelineError
        From planning; also for an hours budget without ``dest``.
    OutputSpecError
        From ``preflight`` (before any source is resolved).
    KurationError
        From scoring, selection and writing.
    KeyboardInterrupt
        Ctrl-C, also when DuckDB reported it as an error of its own.
    """
    try:
        with fewer_full_collections():  # the pool is long-lived: no repeated full scans
            return _execute(p, dest, force=force, resume=resume, resolved_sources=resolved_sources)
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt(f"interrupted ({exc})") from exc
        raise


def _execute(
    p: RunSpec,
    dest: str | os.PathLike[str] | None,
    *,
    force: bool,
    resume: bool,
    resolved_sources: list[str] | None,
) -> PipelineRun:
    """:func:`execute`, interrupts as the components raise them."""
    plan = compile_plan(p)
    if p.opts.streaming:
        check_streaming(p)  # before any source is resolved or read
    import_pandas_first()  # before any source is read: Ctrl-C stays an interrupt
    if p.opts.checkpoint_dir is not None and p.opts.pool == "disk":
        _make_checkpoint_dir(p.opts.checkpoint_dir)
    if isinstance(p.selection, HoursSelection):
        return _execute_hours(p, plan, dest, force, resume, resolved_sources)
    if plan.stage("select").runtime == DISK_RUNTIME:
        return _execute_disk(p, plan, dest)
    rec = _Recorder(p.opts.progress)
    scope = nullcontext() if p.include_entry_points else without_entry_point_plugins()
    with scope:
        sources = _resolve(p, rec)
        p, plan = _fit_workers(p, plan, len(sources))
        choice = budget_pool(p, sources)
        if choice is not None and choice.disk:  # the pool does not fit: the disk pool runs it
            auto = p.with_options(pool="disk")
            plan = dataclasses.replace(
                compile_plan(auto), notes=_decided(plan.notes, choice.note())
            )
            return _execute_disk(auto, plan, dest, sources, choice.index_bytes)
        if choice is not None:
            plan = dataclasses.replace(plan, notes=_decided(plan.notes, choice.note()))
        check_plan_memory(p, sources)
        _warn_unused_checkpoints(p)
        result, steps = _run_count(p, sources, rec)
        doc = None if dest is None else canonical_json(result.to_dict(segments=True))
    analyses, enrich_s = _enrich(p, result, steps)
    telemetry = _telemetry(rec, result, len(sources), enrich_s, plan)
    if dest is not None and doc is not None:  # last: nothing can fail after it is written
        write_bytes_atomic(Path(dest), doc)
    return PipelineRun(plan, result, telemetry, analyses)


def _warn_unused_checkpoints(p: RunSpec) -> None:
    """A ``checkpoint_dir`` given to a plan that holds its pool in memory is said to do
    nothing (only the disk pool checkpoints its partitions)."""
    if p.opts.checkpoint_dir is not None:
        warnings.warn(
            KurationWarning(
                f"checkpoint_dir {os.fspath(p.opts.checkpoint_dir)!r} is not used: this run "
                "holds its pool in memory and keeps no checkpoints (pool='disk', kur run "
                "--pool disk, puts it on the disk pool, which checkpoints every source)"
            ),
            stacklevel=3,
        )


def _make_checkpoint_dir(path: str | os.PathLike[str]) -> None:
    """Create ``checkpoint_dir`` before any source is read, so that a path that cannot hold
    checkpoints fails at once and names the option.

    Raises
    ------
    PipelineError
        The path is a file, or cannot be created (read-only, no permission, ...).
    """
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            why = "a file is in the way"
        raise PipelineError(f"checkpoint_dir {os.fspath(path)!r} cannot be used: {why}") from exc


def _execute_disk(
    p: RunSpec,
    plan: PhysicalPlan,
    dest: str | os.PathLike[str] | None,
    sources: list[str] | None = None,
    index_bytes: int = INDEX_MEMORY,
) -> PipelineRun:
    """A count plan on the disk-backed pool runtime (``pool="disk"``, or chosen because
    the in-memory pool would exceed ``memory_budget``)."""
    assert p.schema and p.adapter and p.segmenter and p.strategy_
    scope = nullcontext() if p.include_entry_points else without_entry_point_plugins()
    with scope:
        if sources is None:
            sources = _resolve(p, p.opts.progress)
        p, plan = _fit_workers(p, plan, len(sources))
        assert p.schema and p.adapter and p.segmenter and p.strategy_  # the fitted copy too
        result = select_on_disk(
            p.schema,
            p.adapter,
            sources,
            p.segmenter,
            p.strategy_,
            p.selection.n,  # type: ignore[union-attr]
            seed=p.opts.seed,
            on_error=p.opts.on_error,
            checkpoint_dir=p.opts.checkpoint_dir,
            durable=p.opts.durable,
            memory_limit=f"{max(index_bytes, 16 * 2**20) // 2**20}MiB",
            run_key={"plan": plan_identity(plan)},
            executor=p.opts.resolved_executor,
            workers=p.opts.workers,
            executor_options=p.opts.executor_options,
            plugins=list(p.plugin_modules),
            include_entry_points=p.include_entry_points,
        )
    if dest is not None:
        write_bytes_atomic(Path(dest), canonical_json(result.to_dict(segments=True)))
    return PipelineRun(plan, result, result.telemetry)


def _execute_hours(
    p: RunSpec,
    plan: PhysicalPlan,
    dest: str | os.PathLike[str] | None,
    force: bool,
    resume: bool,
    resolved: list[str] | None,
) -> PipelineRun:
    """The hours path: every write option checked before sources are fetched, then
    :func:`~kuration.pipeline.dispatch.hours.run_hours` (whose steps record their own telemetry)."""
    if dest is None:
        raise PipelineError("an hours budget writes a dataset: give a destination", step="write")
    check_resume_force(resume, force)  # the rest was checked when the plan was compiled
    progress = p.opts.progress
    scope = nullcontext() if p.include_entry_points else without_entry_point_plugins()
    with scope:
        t0 = time.perf_counter()
        sources = _resolve(p, progress) if resolved is None else resolved
        p, plan = _fit_workers(p, plan, len(sources))
        index_bytes = None
        if plan.stage("features").runtime != DISK_RUNTIME:
            choice = budget_pool(p, sources)
            if choice is not None and choice.disk:  # the pool does not fit: the disk pool runs it
                p = p.with_options(pool="disk")
                plan = dataclasses.replace(
                    compile_plan(p), notes=_decided(plan.notes, choice.note())
                )
                index_bytes = choice.index_bytes
            else:
                if choice is not None:
                    plan = dataclasses.replace(plan, notes=_decided(plan.notes, choice.note()))
                check_plan_memory(p, sources)  # from metadata, before any row is read
                _warn_unused_checkpoints(p)
        n = len(sources)
        prov = StageTelemetry("provenance", time.perf_counter() - t0, None, n, n)
        result = run_hours(
            p,
            dest,
            sources,
            plan,
            force=force,
            resume=resume,
            telemetry=[prov],
            index_bytes=index_bytes,
        )
    analyses, enrich_s = _enrich(p, result, {})
    telemetry = result.telemetry
    if enrich_s:
        n_seg = len(result.scoring.segments)
        telemetry = (*telemetry, StageTelemetry("enrich", enrich_s, rows_in=n_seg))
    return PipelineRun(plan, result, telemetry, analyses)


def _score(p: RunSpec, sources: list[str], rec: _Recorder) -> tuple[ScoringResult, float]:
    assert p.schema and p.adapter and p.segmenter and p.strategy_
    t0 = time.perf_counter()
    scoring = score_sources(
        p.schema,
        p.adapter,
        sources,
        p.segmenter,
        p.strategy_,
        workers=p.opts.workers,
        executor=p.opts.resolved_executor,
        executor_options=p.opts.executor_options,
        on_error=p.opts.on_error,
        progress=rec,
        plugins=list(p.plugin_modules),
        include_entry_points=p.include_entry_points,
    )
    return scoring, time.perf_counter() - t0


def _run_count(
    p: RunSpec, sources: list[str], rec: _Recorder
) -> tuple[CurationResult, dict[str, int]]:
    """The count path (what ``curate`` runs): score, then select, keeping the source
    lengths the audit needs."""
    assert p.strategy_ is not None
    scoring, scoring_s = _score(p, sources, rec)
    rec.executor = scoring.execution.get("executor")
    steps = {sid: info.n_steps for sid, info in scoring.sources.items()}
    with window_reader_scope(p.adapter, scoring):  # type: ignore[arg-type]
        res = select_segments(
            scoring.segments,
            p.strategy_,
            p.selection.n,  # type: ignore[union-attr]
            seed=p.opts.seed,
            source_steps=steps,
            progress=rec,
            tie_break=p.selection.tie_break,  # type: ignore[union-attr]
        )
    return with_scoring(res, scoring, scoring_s), steps


def compare(
    pool: RunSpec,
    strategies: Sequence[Strategy],
    n: int,
    *,
    axes: Sequence[str] | None,
    n_bins: int,
) -> ExperimentResult:
    """See :meth:`kuration.Pipeline.compare`: score the pool of ``pool`` once (its strategy
    is every strategy's features merged, :func:`merged_pool_strategy`), then select with
    each."""
    if not strategies:
        raise StrategyError("comparing needs at least one strategy")
    compile_plan(pool)  # every check that needs no data
    rec = _Recorder(pool.opts.progress)
    scope = nullcontext() if pool.include_entry_points else without_entry_point_plugins()
    with scope:
        sources = _resolve(pool, rec)
        t0 = time.perf_counter()
        scoring, scoring_s = _score(pool, sources, rec)
    with window_reader_scope(pool.adapter, scoring):  # type: ignore[arg-type]
        res = compare_strategies(
            scoring.segments,
            strategies,
            n,
            seed=pool.opts.seed,
            source_steps={sid: info.n_steps for sid, info in scoring.sources.items()},
            axes=axes,
            n_bins=n_bins,
            progress=rec,
        )
    return dataclasses.replace(
        res,
        results={k: with_scoring(v, scoring, scoring_s) for k, v in res.results.items()},
        scoring=scoring.summary(),
        timing={"scoring_s": scoring_s, "total_s": time.perf_counter() - t0},
    )


def _subject(p: RunSpec, result: Any, steps: dict[str, int]) -> AnalysisSubject:
    st = p.strategy_
    assert st is not None
    if isinstance(result, CurationResult):
        pool = tuple(result.pool)
        rows = selected_rows(pool, result.selected)
    else:
        pool = tuple(result.scoring.segments)
        fill = result.fill
        spans = [
            (c.source_id, c.first, c.last)
            for split in ("train", "test")
            for c in (fill.admitted.get(split, []) if fill is not None else [])
        ]
        rows = overlapping_rows(pool, spans)
        steps = {sid: info.n_steps for sid, info in result.scoring.sources.items()}
    return AnalysisSubject(pool, rows, tuple(st.feature_names), tuple(st.bin_axes), steps)


def _enrich(p: RunSpec, result: Any, steps: dict[str, int]) -> tuple[dict[str, Any], float]:
    if not p.analyzers:
        return {}, 0.0
    t0 = time.perf_counter()
    subject = _subject(p, result, steps)
    out = {a.name: get_analyzer(a.name).analyze(subject, a.params) for a in p.analyzers}
    return out, time.perf_counter() - t0


def _telemetry(
    rec: _Recorder, result: Any, n_sources: int, enrich_s: float, plan: PhysicalPlan
) -> tuple[StageTelemetry, ...]:
    """The count run's telemetry, one entry per progress phase that did work (the
    transforms and scorers phases only when the plan has some), on the in-memory runtime."""
    if isinstance(result, CurationResult):
        n_seg = len(result.pool)
        sel_out: int | None = result.n_selected
        scored = (result.scoring or {}).get("sources_scored")
    else:
        n_seg = len(result.scoring.segments)
        fill = result.fill
        sel_out = sum(len(v) for v in fill.admitted.values()) if fill is not None else None
        scored = result.scoring.summary().get("sources_scored")
    rows: dict[str, dict[str, Any]] = {
        "provenance": {"rows_out": n_sources, "partitions": n_sources},
        "scoring": {"rows_in": n_sources, "rows_out": n_seg, "partitions": scored},
        "transforms": {"rows_in": n_seg, "rows_out": n_seg},
        "scorers": {"rows_in": n_seg, "rows_out": n_seg},
        "selection": {"rows_in": n_seg, "rows_out": sel_out},
    }
    sel_name = "bin+select" if isinstance(result, CurationResult) else "bin+fill"
    if rec.executor is not None:
        rows["scoring"]["executor"] = rec.executor
    out = []
    for phase, measured in rows.items():
        if phase not in rec.wall or (
            phase in ("transforms", "scorers") and plan.stage(phase).empty
        ):
            continue
        name = sel_name if phase == "selection" else _PHASE_STAGES[phase]
        out.append(StageTelemetry(name, rec.wall[phase], runtime=REFERENCE_RUNTIME, **measured))
    if enrich_s:
        out.append(StageTelemetry("enrich", enrich_s, rows_in=n_seg, runtime=REFERENCE_RUNTIME))
    return tuple(out)


def review(
    p: RunSpec,
    path: str | os.PathLike[str] | None,
    *,
    max_examples: int,
    force: bool,
    resume: bool,
) -> dict[str, Any]:
    """See :meth:`kuration.Pipeline.review`."""
    if isinstance(p.selection, HoursSelection):
        if path is None:
            raise PipelineError("reviewing an hours budget writes it: give path=", step="review")
        res = execute(p, path, force=force, resume=resume).result
        assert isinstance(res, DatasetWriteResult)
        return hours_selection_review(res, max_examples=max_examples)
    run = execute(p, None, force=False, resume=False)
    assert isinstance(run.result, CurationResult)
    doc = run.result.to_dict(segments=True)
    if path is not None:
        write_bytes_atomic(Path(path), canonical_json(doc))
    return doc
