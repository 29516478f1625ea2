"""write_dataset: score, rank tracks, fill the hour budgets, write and commit a dataset.

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

import datetime as _dt
import math
import os
import platform
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segment, Segmenter
from ..contracts.track import track_from_table
from ..core.ids import tag_entity_id
from ..core.jsonio import dump_json_atomic
from ..core.plugins import code_unidentified, implementation_fingerprints, run_code, used_names
from ..core.progress import ProgressCallback, emit
from ..core.registry import UnknownNameError
from ..errors import (
    DatasetExistsError,
    DatasetIntegrityError,
    DestinationError,
    KurationError,
    OutputSpecError,
)
from ..output.commit import (
    CONFIG_NAME,
    FORMAT,
    LOCK_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    SPLITS,
    STAGING_NAME,
    Journal,
    WriterLease,
    destination_path,
    fsync_paths,
    marker_document,
    read_commit,
    remove_stale,
    remove_tree,
    reusable_entries,
    run_fingerprint,
    shard_matches,
    staging_dir,
    write_commit,
)
from ..output.containers import require_container
from ..output.encoders import PassthroughEncoder, encoder_identity
from ..output.spec import OutputSpec
from ..output.writer import ShardWriter, ensure_dir, plan_entries
from ..selection.fill import (
    Candidate,
    FillResult,
    build_candidates,
    check_group_cap,
    fill_budgets,
    settle_splits,
)
from ..selection.select import apply_strategy, assign_splits
from ..selection.strategy import Strategy
from ..sources.base import InputAdapter
from .scoring import ScoringResult, score_sources
from .summary import feature_distributions, ranking_examples

__all__ = ["DatasetWriteResult", "write_dataset"]

_PLAN_KEYS = (
    "split",
    "source_id",
    "entity_id",
    "span_index",
    "shard_index",
    "start_idx",
    "start_time_s",
    "n_steps",
    "padded",
)


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
    """

    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    scoring: ScoringResult
    fingerprint: str = ""
    resume: dict[str, Any] = field(default_factory=dict)
    fill: FillResult | None = None
    excluded_short: int = 0

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


def _locate(
    root: Path,
    stage: Path,
    committed: Mapping[str, Mapping[str, Any]],
    staged: Mapping[str, Mapping[str, Any]],
    planned: Mapping[str, Any],
) -> tuple[dict[str, Any], str] | None:
    """A reusable copy of a planned shard: its completed entry and whether it is already
    ``"in place"`` or still ``"staged"``; None when it must be rebuilt.

    A record is trusted only if its plan fields agree and the file's bytes match it.
    """
    path = planned["path"]
    for rec, where, base in (
        (committed.get(path), "in place", root),
        (staged.get(path), "staged", stage),
        (staged.get(path), "in place", root),  # moved before an interrupted publication ended
    ):
        if rec is None or any(rec.get(k) != planned[k] for k in _PLAN_KEYS):
            continue
        if shard_matches(base, rec):
            return {**planned, "size": rec["size"], "sha256": rec["sha256"]}, where
    return None


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
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", str(out)):
        raise OutputSpecError(
            f"remote destinations ({out}) are not supported by this version; write locally"
        )
    root = Path(out)
    hz = float(schema.sample_hz)
    span, encoder = preflight(
        schema=schema,
        strategy=strategy,
        spec=spec,
        encoder=encoder,
        train_hours=train_hours,
        test_hours=test_hours,
        sample_hz=sample_hz,
        clip_aggregate=clip_aggregate,
        span_steps=span_steps,
        span_seconds=span_seconds,
        max_group_overshoot=max_group_overshoot,
        min_tag_frac=min_tag_frac,
        resume=resume,
        force=force,
    )
    gfn = _group_fn(group_of)
    refusal = (
        f"{root} is not empty; resume it (resume=True, kur run --resume) to continue "
        "the same run or replace it (force=True, kur run --force)"
    )
    if _destination_in_use(root) and not (resume or force):
        raise DatasetExistsError(refusal)  # before the lease, so a refused run writes nothing

    lease = WriterLease(root).acquire()
    published = False
    opened: list[Journal] = []
    try:
        if _destination_in_use(root) and not (resume or force):
            raise DatasetExistsError(refusal)  # filled by another writer since the check above
        started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        scoring = score_sources(
            schema,
            adapter,
            sources,
            segmenter,
            strategy,
            workers=workers,
            on_error=on_error,
            progress=progress,
            plugins=plugins,
            include_entry_points=include_entry_points,
        )
        emit(progress, "selection", "start", total=len(scoring.segments))
        edges = apply_strategy(scoring.segments, strategy, seed)
        by_source: dict[str, list[Segment]] = {}
        for s in scoring.segments:
            by_source.setdefault(s.source_id, []).append(s)
        min_steps = max(1, int(np.ceil(min_track_seconds * hz)))
        cands, too_short = build_candidates(
            {sid: info.tracks for sid, info in scoring.sources.items()},
            by_source,
            how=clip_aggregate,
            features=strategy.feature_names,
            min_steps=min_steps,
            span_steps=span,
            group_of=gfn,
        )
        cand_sources = sorted({c.source_id for c in cands})
        total_h = train_hours + test_hours
        groups: dict[str, str] = {}
        for c in cands:
            if c.group is not None:
                groups.setdefault(c.source_id, c.group)
        split_of = assign_splits(cand_sources, test_hours / total_h, seed, groups or None)
        budgets = {"train": train_hours * 3600.0, "test": test_hours * 3600.0}
        # the strategy's own tag coverage and group cap apply to the hours fill too
        strat_cov = getattr(strategy, "tag_coverage", None) or {}
        tag_names = sorted(strat_cov) if strat_cov else None
        use_tags = bool(tag_coverage or strat_cov)
        strat_cap = getattr(strategy, "group_cap", None) or {}
        overshoot = max_group_overshoot
        if overshoot is None and strat_cap.get("max_overshoot") is not None:
            overshoot = float(strat_cap["max_overshoot"])
        fill = fill_budgets(
            cands,
            split_of,
            budgets,
            hz,
            max_group_overshoot=overshoot,
            tag_coverage=use_tags,
            tag_names=tag_names,
            min_tag_frac=min_tag_frac,
        )
        check_group_cap(
            fill,
            overshoot=overshoot,
            shard_seconds=spec.shard_length / hz if spec.short_policy == "drop" else None,
        )
        emit(progress, "selection", "complete", total=len(scoring.segments))

        source_ids = [
            {"source_id": sid, "fingerprint": info.fingerprint}
            for sid, info in sorted(scoring.sources.items())
        ]
        strong = all(isinstance(s["fingerprint"], str) and s["fingerprint"] for s in source_ids)
        run = {
            "kuration_version": __version__,
            "schema": schema.to_dict(),
            "adapter": adapter.to_dict(),
            "strategy": strategy.to_dict(),
            "segmenter": segmenter.to_dict(),
            "output": spec.to_dict(),
            "encoder": encoder_identity(encoder),
            "budget": {"train_hours": float(train_hours), "test_hours": float(test_hours)},
            "seed": seed,
            "clip_aggregate": clip_aggregate,
            "min_track_seconds": float(min_track_seconds),
            "span_steps": span,
            "groups": dict(sorted(groups.items())),
            "max_group_overshoot": overshoot,
            "tag_coverage": use_tags,
            "tag_names": tag_names,
            "min_tag_frac": float(min_tag_frac),
            "on_error": on_error,
            "sources": source_ids,
            "source_errors": sorted(scoring.errors),
        }
        # code outside kuration that shapes the shards (plugins); absent when there is none
        code = run_code(used_names(run["strategy"], adapter.name, spec.container), plugins)
        if code:
            run["code"] = code
        unidentified = code_unidentified(code)
        fingerprint = run_fingerprint(run)

        # the plan: every shard's manifest entry, minus size and checksum
        admitted: list[tuple[str, Candidate, list[dict[str, Any]]]] = []
        for split in SPLITS:
            for c in fill.admitted[split]:
                info = scoring.sources[c.source_id]
                planned = plan_entries(
                    source_id=c.source_id,
                    entity_id=c.entity_id,
                    span_index=c.span_index,
                    start_idx=c.first,
                    n_steps=c.n_steps,
                    k0=info.k0,
                    sample_hz=hz,
                    split=split,
                    spec=spec,
                )
                admitted.append((split, c, planned))
        binding = settle_splits(fill, admitted, hz, too_short, allow_empty_split)
        trusted: dict[str, dict[str, Any]] = {}
        staged: dict[str, dict[str, Any]] = {}
        resume_notes: list[str] = []
        if resume:
            if unidentified:
                resume_notes = [f"no source code found for {unidentified}: nothing is reused"]
            elif strong:
                trusted, staged, resume_notes = reusable_entries(root, fingerprint, run)
            else:
                resume_notes = ["a source has no strong fingerprint: nothing is reused"]
        for split in SPLITS:
            d = root / split
            if d.is_symlink() or (d.exists() and not d.is_dir()):
                raise DatasetIntegrityError(
                    "refusing to write through a symlink or non-directory", path=str(d)
                )
        try:
            prev, _ = read_commit(root)
        except DatasetIntegrityError:
            prev = None  # unreadable: nothing to carry over (force/resume rebuild)

        # ---- staging: encode every shard not already in place; the artifact is untouched
        stage = staging_dir(root, fingerprint)
        if not resume and stage.exists():
            remove_tree(stage)
        journal = Journal(stage, fingerprint, keep=resume)
        opened.append(journal)
        writer = ShardWriter(stage, spec, schema, encoder, on_shard=journal.record)
        entries: list[dict[str, Any]] = []
        to_move: list[str] = []
        reused = rebuilt = 0
        uri_of = {sid: info.uri for sid, info in scoring.sources.items()}
        work: dict[str, list[tuple[str, Candidate, list[dict[str, Any]]]]] = {}
        for item in admitted:
            work.setdefault(item[1].source_id, []).append(item)
        emit(progress, "writing", "start", total=len(work))
        for i, sid in enumerate(sorted(work), 1):
            table = None
            roster: dict[str, int] = {}
            for split, c, planned in work[sid]:
                found = [_locate(root, stage, trusted, staged, e) for e in planned]
                if planned and all(f is not None for f in found):
                    for f in found:
                        if f is not None:
                            entry, where = f
                            entries.append(entry)
                            if where == "staged":
                                to_move.append(entry["path"])
                    reused += len(planned)
                    continue
                if table is None:
                    table = adapter.read_table(uri_of[sid])
                    roster = {tag_entity_id(e): j for j, e in enumerate(table.entity_ids)}
                meta = {**c.features, "priority": c.priority}
                track = track_from_table(
                    table, roster[tag_entity_id(c.entity_id)], c.first, c.last, c.span_index, meta
                )
                written = writer.write(track, split)
                if [e["path"] for e in written] != [e["path"] for e in planned]:
                    raise OutputSpecError(f"internal: shard plan mismatch for {sid!r}")
                entries.extend(written)
                to_move.extend(e["path"] for e in written)
                rebuilt += len(written)
            emit(progress, "writing", "advance", current=i, total=len(work), source=sid)
        journal.close()
        if durable:
            fsync_paths([stage / p for p in to_move])

        # ---- publication: from here readers refuse the dataset until the final commit
        last_committed = None
        if prev is not None:
            last_committed = prev if prev.get("state") == "committed" else prev.get("previous")
        published = True
        write_commit(root, "writing", run_fingerprint=fingerprint, previous=last_committed)
        for rel in to_move:
            ensure_dir(root / rel.split("/", 1)[0])
            os.replace(stage / rel, root / rel)
        emit(progress, "writing", "complete", total=len(work))
        entries.sort(
            key=lambda e: (
                e["split"],
                e["source_id"],
                e["entity_id"],
                -1 if e["span_index"] is None else e["span_index"],
                e["shard_index"],
            )
        )
        remove_stale(root, {e["path"] for e in entries})
        if durable:
            fsync_paths([root / s for s in SPLITS if (root / s).is_dir()] + [root])

        budget: dict[str, Any] = {
            "too_short_excluded": too_short,
            "min_track_seconds": float(min_track_seconds),
            "span_steps": span,
            "clip_aggregate": clip_aggregate,
        }
        splits: dict[str, Any] = {}
        for split in SPLITS:
            b = dict(fill.budget[split])
            es = [e for e in entries if e["split"] == split]
            b["emitted_s"] = sum(e["n_steps"] for e in es) / hz
            b["dropped_tail_s"] = b["admitted_s"] - b["emitted_s"]
            b["binding"], b["binding_detail"] = binding[split]
            budget[split] = b
            splits[split] = {
                "shards": len(es),
                "tracks": len({(e["source_id"], e["entity_id"], e["span_index"]) for e in es}),
                "sources": sorted({e["source_id"] for e in es}),
                "seconds": b["emitted_s"],
            }
        manifest = {
            "format": FORMAT,
            "run_fingerprint": fingerprint,
            "container": spec.container,
            "shard_length": spec.shard_length,
            "short_policy": spec.short_policy,
            "presence_mask": spec.presence_mask,
            "sample_hz": hz,
            "modalities": {
                k: {"dtype": m.dtype, "shape": list(m.shape), "source": m.source}
                for k, m in spec.modalities.items()
            },
            "splits": splits,
            "budget": budget,
            "shards": entries,
        }
        source_rows = [
            {
                "source_id": sid,
                "uri": info.uri,
                "sha256": info.fingerprint,
                "split": split_of.get(sid),
                "n_steps": info.n_steps,
                "segments": info.n_segments,
                **info.counts,
            }
            for sid, info in sorted(scoring.sources.items())
        ]
        warnings: list[str] = []
        if not entries:
            warnings.append("no shard was emitted: every candidate was excluded or dropped")
        for split in SPLITS:
            if binding[split][0] is not None:
                warnings.append(f"{split} under-filled: {binding[split][0]}: {binding[split][1]}")
        resume_block = {
            "requested": bool(resume),
            "reused_shards": reused,
            "rebuilt_shards": rebuilt,
            "notes": resume_notes,
        }
        config = {
            "format": "kuration-config/1",
            "schema": schema.to_dict(),
            "strategy": strategy.to_dict(),
            "output": spec.to_dict(),
            "pipeline": {
                "adapter": adapter.to_dict(),
                "segmenter": segmenter.to_dict(),
                "train_hours": train_hours,
                "test_hours": test_hours,
                "seed": seed,
                "clip_aggregate": clip_aggregate,
                "min_track_seconds": min_track_seconds,
                "span_steps": span,
                "max_group_overshoot": overshoot,
                "tag_coverage": use_tags,
                "min_tag_frac": float(min_tag_frac),
                "allow_empty_split": bool(allow_empty_split),
                "workers": workers,
                "on_error": on_error,
                "sources": source_rows,
            },
            "job": dict(job) if job is not None else None,
            "results": {
                "scoring": scoring.summary(),
                "bin_edges": edges,
                "budget": budget,
                "splits": splits,
                "split_of": dict(sorted(split_of.items())),
                "resume": resume_block,
                "distributions": feature_distributions(
                    scoring.segments, fill, strategy.feature_names
                ),
                "examples": ranking_examples(scoring.segments, strategy.feature_names),
            },
            "warnings": warnings,
            "provenance": {
                "kuration_version": __version__,
                "run_fingerprint": fingerprint,
                "python": sys.version.split()[0],
                "numpy": np.__version__,
                "platform": platform.platform(),
                "encoder": encoder_identity(encoder),
                "implementations": implementation_fingerprints(),
                "sources": source_ids,
                "execution": {
                    "mode": "local" if workers <= 1 else "process-pool",
                    "workers": workers,
                },
                "started_at": started,
                "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            },
        }
        marker_sha = dump_json_atomic(root / MARKER_NAME, marker_document(run))
        man_sha = dump_json_atomic(root / MANIFEST_NAME, manifest)
        cfg_sha = dump_json_atomic(root / CONFIG_NAME, config)
        write_commit(
            root,
            "committed",
            run_fingerprint=fingerprint,
            manifest_sha256=man_sha,
            config_sha256=cfg_sha,
            output_spec_sha256=marker_sha,
            n_shards=len(entries),
        )
        remove_tree(root / STAGING_NAME)
    except BaseException as exc:
        for j in opened:
            j.close()
        if not published and lease.created:
            remove_tree(root, keep={LOCK_NAME})  # a destination this run created holds nothing else
        lease.release(cleanup=not published)
        if isinstance(exc, OSError) and not isinstance(exc, KurationError):
            where = destination_path(exc, root)
            if where is not None:
                raise DestinationError(
                    f"cannot write the dataset: {exc.strerror or exc}", path=where
                ) from exc
        raise
    lease.release()
    return DatasetWriteResult(
        root, manifest, config, scoring, fingerprint, resume_block, fill, too_short
    )
