"""write_dataset: score, rank tracks, fill the hour budgets, write and commit a dataset.

:func:`~kuration.write_dataset` (:mod:`kuration.pipeline.api.entry`) is a thin
wrapper: it builds a :class:`~kuration.Pipeline` from its arguments and runs
it (:func:`kuration.pipeline.dispatch.execute.execute`), which calls :func:`run_hours` here: validation, the writer lease, then the
named steps of :mod:`kuration.pipeline.run.steps`.

A run has three phases (see :mod:`kuration.output.commit`):

* planning -- validation, scoring, selection, the fill, the shard plan and
  the run fingerprint -- reads sources only;
* staging -- every shard not already in place is encoded into the run's
  staging namespace, then manifest, config (histograms, reports, budget
  accounting) and commit records are built and encoded to bytes; the
  published dataset is still untouched, so a failure up to here (bad data
  included) leaves it byte-identical and readable;
* publication -- ``state="writing"``, staged shards moved into place, stale
  files removed, the prepared marker/manifest/config bytes written,
  ``state="committed"``: file operations only.  A failure here leaves the
  destination in state ``writing``; the message names it and ``--resume``.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contracts.schema import SchemaSpec
from ...core.executors import make_executor
from ...core.interrupts import is_interrupt
from ...core.registry import UnknownNameError
from ...core.remote import is_url, local_path
from ...errors import (
    DatasetExistsError,
    DestinationError,
    KurationError,
    OutputSpecError,
    StreamingError,
)
from ...output.commit import (
    LOCK_NAME,
    STAGING_NAME,
    WriterLease,
    destination_path,
    holds_staged,
    read_commit,
    remove_tree,
)
from ...output.containers import require_container
from ...output.encoders import PassthroughEncoder
from ...output.job_match import occupant_here, refuse_other_job_here
from ...output.spec import OutputSpec
from ...selection.fill import FillResult
from ...selection.strategy import Strategy
from ..destination.occupied import holds_run, refuse_occupied
from ..destination.remote import run_remote
from ..disk.hours import disk_session, disk_steps
from ..run.scoring import ScoringResult
from ..run.steps import STEPS, HoursRun, job_description, run_steps
from ..spec.logical import HoursSelection as HoursSelectionT
from ..spec.plan import PhysicalPlan, StageTelemetry
from ..stream.passes import STREAMING_STEPS

if TYPE_CHECKING:
    from ..spec.runspec import RunSpec

__all__ = ["DatasetWriteResult", "check_resume_force", "preflight", "run_hours"]


@dataclass(frozen=True, repr=False)
class DatasetWriteResult:
    """What :func:`write_dataset` wrote.

    Attributes
    ----------
    path : Path or str
        The dataset directory, or its URL for a remote destination.
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
        One per executed step (see :mod:`kuration.pipeline.run.steps`); also in
        ``config["provenance"]["execution"]["telemetry"]``.
    """

    path: Path | str
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

    def __repr__(self) -> str:
        """One line: the path, shards and emitted hours per split, the fingerprint's first
        12 characters (the manifest and config stay on their attributes)."""
        budget = self.config.get("results", {}).get("budget", {})
        splits = self.manifest.get("splits", {})
        parts = []
        for split in sorted(splits):
            secs = float(budget.get(split, {}).get("emitted_s", 0.0))
            parts.append(f"{split}={splits[split].get('shards', 0)} shards/{secs / 3600:.2f} h")
        fp = f"{self.fingerprint[:12]}..." if len(self.fingerprint) > 12 else self.fingerprint
        return (
            f"DatasetWriteResult(path={str(self.path)!r}, "
            f"shards={len(self.manifest.get('shards', ()))}, {', '.join(parts)}, "
            f"fingerprint={fp!r})"
        )


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


def _refuse_occupied(
    root: Path, *, resume: bool, force: bool, job: Callable[[], Mapping[str, Any]] | None = None
) -> None:
    """Raise :class:`DatasetExistsError` for a folder holding more than the lease unless
    ``force``, or ``resume`` and it holds a run (:func:`refuse_occupied`) that is not the
    committed dataset of another job than ``job()`` (a
    :func:`~kuration.pipeline.run.steps.job_description`, asked for only when a refusal
    needs it; see :func:`~kuration.output.job_match.refuse_other_job`).  A folder holding
    staged work (a ``force`` run that failed before it published, say) is judged by the
    resume lookup, which knows whose work it is."""
    try:
        names = [p.name for p in root.iterdir() if p.name != LOCK_NAME]
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise DatasetExistsError(f"{root} exists and is not a directory") from None
    if names:
        occ = occupant_here(root, job()) if job is not None and not (resume or force) else None
        has_run = holds_run(names)
        refuse_occupied(str(root), has_run=has_run, resume=resume, force=force, occupant=occ)
        if resume and job is not None and not holds_staged(root):
            refuse_other_job_here(root, job())  # staged work: the fingerprint decides, later


def _group_fn(
    group_of: Callable[[str], str | None] | Mapping[str, str] | None,
) -> Callable[[str], str | None] | None:
    if group_of is None:
        return None
    if isinstance(group_of, Mapping):
        mapping = dict(group_of)
        return mapping.get
    return group_of


def check_resume_force(resume: bool, force: bool) -> None:
    """The one write option the plan cannot check (it is not part of the pipeline).

    Raises
    ------
    OutputSpecError
        ``resume`` and ``force`` together.
    """
    if resume and force:
        raise OutputSpecError("resume=True and force=True are mutually exclusive")


def preflight(
    *,
    schema: SchemaSpec,
    strategy: Strategy,
    spec: OutputSpec,
    encoder: Any = None,
    sample_hz: float | None = None,
    clip_aggregate: str = "max",
    span_steps: int | None = None,
    span_seconds: float | None = None,
    max_group_overshoot: float | None = None,
    min_tag_frac: float = 0.1,
    resume: bool = False,
    force: bool = False,
) -> tuple[int | None, Any]:
    """Validate the write options of :func:`write_dataset` without touching any data (the
    hours are not among them: the selection's budget model checked them when it was built).

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
    check_resume_force(resume, force)
    if sample_hz is not None and float(sample_hz) != hz:
        raise OutputSpecError(
            f"sample_hz {sample_hz} differs from the schema's {hz}; resampling is not supported"
        )
    if clip_aggregate not in ("max", "mean", "min"):
        raise OutputSpecError(f"clip_aggregate must be max, mean or min, got {clip_aggregate!r}")
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


def run_hours(
    p: RunSpec,
    out: str | os.PathLike[str],
    sources: list[str],
    plan: PhysicalPlan,
    *,
    force: bool,
    resume: bool,
    telemetry: Sequence[StageTelemetry] = (),
    index_bytes: int | None = None,
) -> DatasetWriteResult:
    """Run an hours pipeline over resolved ``sources`` into ``out``, following ``plan``:
    validate, take the writer lease, run :data:`~kuration.pipeline.run.steps.STEPS`.

    ``telemetry`` (the stages that ran before, e.g. provenance) is recorded
    ahead of the steps' own; ``index_bytes`` is the disk pool's index memory (default
    :data:`~kuration.pipeline.disk.pool.INDEX_MEMORY`).  Raises what
    :func:`write_dataset` documents.
    """
    if is_url(out):  # an object store: see kuration.pipeline.destination.remote
        if p.opts.streaming:
            raise StreamingError(
                f"{out}: streaming=True writes a local destination (the remote writer reads "
                "whole sources); stream into a folder, then upload it",
                step="write",
            )
        if p.output_spec is not None and p.output_spec.shared_files:
            raise OutputSpecError(
                f"{out}: layout={p.output_spec.layout!r} writes a local destination (the "
                "remote writer uploads one object per shard); write the dataset to a folder"
            )
        with tempfile.TemporaryDirectory(prefix="kuration-remote-") as scratch:
            r = _prepare(
                p,
                Path(scratch) / "dataset",
                sources,
                plan,
                force=force,
                resume=resume,
                index_bytes=index_bytes,
            )
            r.telemetry.extend(telemetry)
            run_remote(r, str(out).rstrip("/"), resume=resume, force=force)
            return _result(r, str(out).rstrip("/"))
    root = Path(local_path(out))
    r = _prepare(p, root, sources, plan, force=force, resume=resume, index_bytes=index_bytes)
    r.telemetry.extend(telemetry)
    # whose dataset a refusal finds (resume: only the same job's); plugin code is digested
    # only when the folder holds something
    job = functools.cache(functools.partial(job_description, r))
    # before the lease: a refusal writes nothing
    _refuse_occupied(root, resume=resume, force=force, job=job)
    lease = WriterLease(root).acquire()
    try:
        _refuse_occupied(root, resume=resume, force=force, job=job)  # another writer since
        # one executor for the whole run: scoring and staging share its workers
        with (
            make_executor(
                p.opts.resolved_executor, p.opts.workers, options=p.opts.executor_options
            ) as r.executor,
            disk_session(r),
        ):
            run_steps(r, streaming_steps() if p.opts.streaming else disk_steps(r, STEPS))
    except BaseException as exc:
        _after_failure(r, root, lease, exc)
        if isinstance(exc, OSError) and not isinstance(exc, KurationError):
            where = destination_path(exc, root)
            if where is not None:
                raise DestinationError(
                    f"cannot write the dataset: {exc.strerror or exc}", path=where
                ) from exc
        raise
    lease.release()
    return _result(r, root)


def _after_failure(r: HoursRun, root: Path, lease: WriterLease, exc: BaseException) -> None:
    """Tidy up after the run failed with ``exc`` and say what it left behind.

    Before ``state="writing"`` a destination this run created is removed (staged work
    stays after an interrupt, for resume); after it, the destination is left as it is
    and the message names it and the command that completes it.  An error of the
    tidying itself (a folder turned read-only, say) becomes a note on ``exc``: the
    first error is the one the user sees."""
    try:
        if r.journal is not None:
            r.journal.close()
        interrupted = is_interrupt(exc)  # DuckDB reports a Ctrl-C as its own error
        if not r.published and lease.created and not interrupted:
            remove_tree(root, keep={LOCK_NAME})  # a destination this run created holds nothing else
        if r.published:
            print(
                f"kuration: the run stopped while publishing; {root} is left in state "
                "'writing' (readers refuse it): rerun the same job with resume=True "
                f"(kur run <job> --out {root} --resume) to complete it",
                file=sys.stderr,
            )
    except OSError as cleanup:
        exc.add_note(f"cleaning up {root} failed too: {cleanup}")
    finally:
        lease.release(cleanup=not r.published)
    if is_interrupt(exc) and not r.published:
        print(f"kuration: interrupted; {_left_behind(root)}", file=sys.stderr)


def _left_behind(root: Path) -> str:
    """What an interrupted, unpublished run left at ``root`` (read after the lease's
    cleanup, so the sentence describes the folder as the user finds it)."""
    if not root.exists():
        return f"nothing was written ({root} does not exist): rerun the same command"
    try:
        rec, _ = read_commit(root)
    except (OSError, KurationError):
        rec = None
    staged = (root / STAGING_NAME).is_dir() and any((root / STAGING_NAME).iterdir())
    if rec is not None and rec.get("state") == "committed":
        keep = f"{root} still holds its committed dataset, unchanged"
        if staged:
            return (
                f"{keep}; this run's staged work is kept beside it: rerun with resume "
                "(kur run --resume) to continue replacing it, or force to start over"
            )
        return f"{keep}; nothing of this run was staged: rerun the same command to replace it"
    if staged:
        # the staged shards (and disk partitions) stay for resume; without a commit
        # record no reader accepts the destination
        return (
            f"{root} holds the staged work only: rerun with resume (kur run --resume) to "
            "continue, or force to start over"
        )
    return f"nothing of this run was staged in {root}: rerun the same command"


def _result(r: HoursRun, where: Path | str) -> DatasetWriteResult:
    return DatasetWriteResult(
        where,
        r.manifest,
        r.config,
        r.pool(),
        r.fingerprint,
        r.resume_block,
        r.fill,
        r.too_short,
        tuple(r.telemetry),
    )


def streaming_steps() -> Any:
    """The hours steps with both source passes streamed (:mod:`kuration.pipeline.stream.passes`)."""
    return STREAMING_STEPS


def _prepare(
    p: RunSpec,
    root: Path,
    sources: list[str],
    plan: PhysicalPlan,
    *,
    force: bool,
    resume: bool,
    index_bytes: int | None = None,
) -> HoursRun:
    """The :class:`HoursRun` of ``p``: its options were checked once, when ``plan`` was
    compiled (``preflight``), which also resolved the span length (the fill stage's
    ``span_steps``); nothing is validated again here."""
    sel = p.selection
    assert isinstance(sel, HoursSelectionT)
    assert p.schema and p.adapter and p.segmenter and p.strategy_ and p.output_spec
    check_resume_force(resume, force)
    return HoursRun(
        root=root,
        runspec=p,
        sources=list(sources),
        plan=plan,
        encoder=p.encoder if p.encoder is not None else PassthroughEncoder(),
        group_fn=_group_fn(sel.group_of),
        span_steps=plan.stage("fill").detail.get("span_steps"),
        resume=resume,
        force=force,
        index_bytes=index_bytes,
    )
