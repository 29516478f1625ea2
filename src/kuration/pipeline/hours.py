"""write_dataset: score, rank tracks, fill the hour budgets, write and commit a dataset.

:func:`write_dataset` is a thin wrapper: it builds a :class:`~kuration.Pipeline`
from its arguments and runs it (:func:`kuration.pipeline.execute.execute`),
which calls :func:`run_hours` here: validation, the writer lease, then the
named steps of :mod:`kuration.pipeline.hours_steps`.

A run has three phases (see :mod:`kuration.output.commit`):

* planning -- validation, scoring, selection, the fill, the shard plan and
  the run fingerprint -- reads sources only;
* staging -- every shard not already in place is encoded into the run's
  staging namespace; the published dataset is still untouched, so a
  failure up to here (bad data included) leaves it byte-identical and
  readable;
* publication -- ``state="writing"``, staged shards moved into place, stale
  files removed, marker/manifest/config replaced, ``state="committed"``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segmenter
from ..core.progress import ProgressCallback
from ..core.registry import UnknownNameError
from ..errors import DatasetExistsError, DestinationError, KurationError, OutputSpecError
from ..output.commit import LOCK_NAME, WriterLease, destination_path, remove_tree
from ..output.containers import require_container
from ..output.encoders import PassthroughEncoder
from ..output.spec import OutputSpec
from ..selection.fill import FillResult
from ..selection.strategy import Strategy
from ..sources.base import InputAdapter
from .hours_steps import HoursRun, run_steps
from .logical import HoursSelection as HoursSelectionT
from .plan import PhysicalPlan, StageTelemetry
from .scoring import ScoringResult

if TYPE_CHECKING:
    from .pipeline import Pipeline

__all__ = ["DatasetWriteResult", "preflight", "run_hours", "write_dataset"]


@dataclass(frozen=True)
class DatasetWriteResult:
    """What :func:`write_dataset` wrote.

    Attributes
    ----------
    path : Path
    manifest, config : dict
        The documents written; ``result["results"]["budget"]`` reads the config.
    scoring : ScoringResult
    fingerprint : str
        The run fingerprint pinned by ``.kuration_output_spec.json``.
    resume : dict
        ``requested``, ``reused_shards``, ``rebuilt_shards`` and ``notes`` (why
        earlier metadata was not trusted); also in ``config["results"]["resume"]``.
    fill : FillResult
    excluded_short : int
    telemetry : tuple of StageTelemetry
        One per executed step (see :mod:`kuration.pipeline.hours_steps`); also in
        ``config["provenance"]["execution"]["telemetry"]``.
    """

    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    scoring: ScoringResult
    fingerprint: str = ""
    resume: dict[str, Any] = field(default_factory=dict)
    fill: FillResult | None = None
    excluded_short: int = 0
    telemetry: tuple[StageTelemetry, ...] = ()

    def __getitem__(self, key: str) -> Any:
        return self.config[key]


def _check_hours(name: str, h: Any) -> None:
    if isinstance(h, bool) or not (isinstance(h, int | float) and np.isfinite(h) and h >= 0):
        raise OutputSpecError(f"{name} must be a finite number >= 0, got {h!r}")


def _resolve_span(
    span_steps: int | None, span_seconds: float | None, hz: float, spec: OutputSpec
) -> int | None:
    if span_steps is not None and span_seconds is not None:
        raise OutputSpecError("give span_steps or span_seconds, not both")
    steps = span_steps
    if span_seconds is not None:
        if not (isinstance(span_seconds, int | float) and math.isfinite(span_seconds)):
            raise OutputSpecError(f"span_seconds must be a positive number, got {span_seconds!r}")
        steps = round(float(span_seconds) * hz)
        if steps < 1:
            raise OutputSpecError(
                f"span_seconds={span_seconds} is shorter than one step at {hz} Hz"
            )
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise OutputSpecError(f"span_steps must be a positive integer, got {steps!r}")
    if spec.short_policy == "drop" and steps < spec.shard_length:
        raise OutputSpecError(
            f"span of {steps} steps < shard_length {spec.shard_length} with short_policy "
            "'drop': every span would chunk to zero shards while consuming the budget"
        )
    return int(steps)


def _check_container(spec: OutputSpec) -> None:
    try:
        require_container(spec.container)
    except UnknownNameError as exc:
        raise OutputSpecError(str(exc)) from None
    except ImportError as exc:
        raise OutputSpecError(str(exc)) from None


def _destination_in_use(root: Path) -> bool:
    try:
        return any(p.name != LOCK_NAME for p in root.iterdir())
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise DatasetExistsError(f"{root} exists and is not a directory") from None


def _group_fn(
    group_of: Callable[[str], str | None] | Mapping[str, str] | None,
) -> Callable[[str], str | None] | None:
    if group_of is None:
        return None
    if isinstance(group_of, Mapping):
        mapping = dict(group_of)
        return mapping.get
    return group_of


def preflight(
    *,
    schema: SchemaSpec,
    strategy: Strategy,
    spec: OutputSpec,
    encoder: Any = None,
    train_hours: float = 0.0,
    test_hours: float = 0.0,
    sample_hz: float | None = None,
    clip_aggregate: str = "max",
    span_steps: int | None = None,
    span_seconds: float | None = None,
    max_group_overshoot: float | None = None,
    min_tag_frac: float = 0.1,
    resume: bool = False,
    force: bool = False,
) -> tuple[int | None, Any]:
    """Validate the write options of :func:`write_dataset` without touching any data.

    Returns
    -------
    span_steps : int or None
        The resolved span length.
    encoder : OutputEncoder
        ``encoder``, or a :class:`PassthroughEncoder`.

    Raises
    ------
    OutputSpecError
        See :func:`write_dataset`.
    """
    hz = float(schema.sample_hz)
    if resume and force:
        raise OutputSpecError("resume=True and force=True are mutually exclusive")
    if sample_hz is not None and float(sample_hz) != hz:
        raise OutputSpecError(
            f"sample_hz {sample_hz} differs from the schema's {hz}; resampling is not supported"
        )
    if clip_aggregate not in ("max", "mean", "min"):
        raise OutputSpecError(f"clip_aggregate must be max, mean or min, got {clip_aggregate!r}")
    _check_hours("train_hours", train_hours)
    _check_hours("test_hours", test_hours)
    if train_hours + test_hours <= 0:
        raise OutputSpecError("train_hours + test_hours must be positive")
    if max_group_overshoot is not None and not (
        isinstance(max_group_overshoot, int | float)
        and math.isfinite(max_group_overshoot)
        and max_group_overshoot > 0
    ):
        raise OutputSpecError(f"max_group_overshoot must be > 0, got {max_group_overshoot!r}")
    if not (isinstance(min_tag_frac, int | float) and 0.0 <= min_tag_frac <= 1.0):
        raise OutputSpecError(f"min_tag_frac must be within [0, 1], got {min_tag_frac!r}")
    span = _resolve_span(span_steps, span_seconds, hz, spec)
    _check_container(spec)
    if encoder is None:
        encoder = PassthroughEncoder()
    has_encoder = not isinstance(encoder, PassthroughEncoder)
    spec.validate_against(schema, strategy.feature_names, has_encoder=has_encoder)
    return span, encoder


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
    from .logical import HoursSelection, PipelineOptions
    from .pipeline import Pipeline

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
    from .execute import execute

    run = execute(p, out, force=force, resume=resume, resolved_sources=[str(s) for s in sources])
    assert isinstance(run.result, DatasetWriteResult)
    return run.result


def run_hours(
    p: Pipeline,
    out: str | os.PathLike[str],
    sources: list[str],
    plan: PhysicalPlan,
    *,
    force: bool,
    resume: bool,
    telemetry: Sequence[StageTelemetry] = (),
) -> DatasetWriteResult:
    """Run an hours pipeline over resolved ``sources`` into ``out``, following ``plan``:
    validate, take the writer lease, run :data:`~kuration.pipeline.hours_steps.STEPS`.

    ``telemetry`` (the stages that ran before, e.g. provenance) is recorded
    ahead of the steps' own.  Raises what :func:`write_dataset` documents.
    """
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", str(out)):
        raise OutputSpecError(
            f"remote destinations ({out}) are not supported by this version; write locally"
        )
    root = Path(out)
    r = _prepare(p, root, sources, plan, force=force, resume=resume)
    r.telemetry.extend(telemetry)
    refusal = (
        f"{root} is not empty; resume it (resume=True, kur run --resume) to continue "
        "the same run or replace it (force=True, kur run --force)"
    )
    if _destination_in_use(root) and not (resume or force):
        raise DatasetExistsError(refusal)  # before the lease, so a refused run writes nothing
    lease = WriterLease(root).acquire()
    try:
        if _destination_in_use(root) and not (resume or force):
            raise DatasetExistsError(refusal)  # filled by another writer since the check above
        run_steps(r)
    except BaseException as exc:
        if r.journal is not None:
            r.journal.close()
        if not r.published and lease.created:
            remove_tree(root, keep={LOCK_NAME})  # a destination this run created holds nothing else
        lease.release(cleanup=not r.published)
        if isinstance(exc, OSError) and not isinstance(exc, KurationError):
            where = destination_path(exc, root)
            if where is not None:
                raise DestinationError(
                    f"cannot write the dataset: {exc.strerror or exc}", path=where
                ) from exc
        raise
    lease.release()
    return DatasetWriteResult(
        root,
        r.manifest,
        r.config,
        r.pool(),
        r.fingerprint,
        r.resume_block,
        r.fill,
        r.too_short,
        tuple(r.telemetry),
    )


def _prepare(
    p: Pipeline, root: Path, sources: list[str], plan: PhysicalPlan, *, force: bool, resume: bool
) -> HoursRun:
    """The validated :class:`HoursRun` of ``p`` (``preflight``: nothing is read)."""
    sel = p.selection
    assert isinstance(sel, HoursSelectionT)
    assert p.schema and p.adapter and p.segmenter and p.strategy_ and p.output_spec
    span, encoder = preflight(
        schema=p.schema,
        strategy=p.strategy_,
        spec=p.output_spec,
        encoder=p.encoder,
        resume=resume,
        force=force,
        **sel.write_options(),
    )
    o = p.opts
    options = {
        **sel.write_options(),
        "span_steps": span,
        "min_track_seconds": sel.min_track_seconds,
        "tag_coverage": sel.tag_coverage,
        "allow_empty_split": sel.allow_empty_split,
        "seed": o.seed,
        "workers": o.workers,
        "on_error": o.on_error,
        "durable": o.durable,
        "resume": resume,
        "force": force,
    }
    return HoursRun(
        root=root,
        schema=p.schema,
        adapter=p.adapter,
        sources=list(sources),
        strategy=p.strategy_,
        segmenter=p.segmenter,
        spec=p.output_spec,
        encoder=encoder,
        options=options,
        group_fn=_group_fn(sel.group_of),
        plan=plan,
        progress=o.progress,
        job=p.job,
        plugins=list(p.plugin_modules),
        include_entry_points=p.include_entry_points,
    )
