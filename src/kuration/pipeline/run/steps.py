"""The named steps of an hours run, in order (see :data:`STEPS`).

Each step reads and fills one :class:`HoursRun` and returns the measurements
of its own :class:`~kuration.pipeline.spec.plan.StageTelemetry` (rows in and out,
partitions, bytes, checkpoint hits/misses); :func:`run_steps` times it and
records the telemetry.  The orchestration is the list itself::

    score -> rank -> candidates -> split -> fill -> fingerprint -> shard plan
          -> resume lookup -> stage -> manifest -> config -> publish -> commit

Validation (``preflight``) and the writer lease happen before the first step
(:mod:`kuration.pipeline.dispatch.hours`).  Planning steps read sources only; ``stage``
encodes shards into the staging namespace; ``manifest`` and ``config`` compute and
encode every document the run publishes (:mod:`kuration.pipeline.run.hours_config`).
Only ``publish`` and ``commit`` touch the published dataset (see
:mod:`kuration.output.commit`), and they only move files and write bytes made
before them: whatever can fail with a computation fails while the previous
dataset still stands.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..._version import __version__
from ...contracts.segment import Segment
from ...core.plugins import code_unidentified, run_code, used_names
from ...core.progress import emit
from ...errors import DatasetIntegrityError
from ...output.commit import (
    FORMAT,
    SPLITS,
    STAGING_NAME,
    Journal,
    holds_staged,
    make_durable,
    read_commit,
    remove_stale,
    remove_tree,
    reusable_entries,
    run_fingerprint,
    shard_matches,
    staging_dir,
    write_bytes_atomic,
    write_commit,
)
from ...output.encoders import encoder_identity
from ...output.job_match import refuse_other_job_here
from ...output.writer import PLAN_KEYS, ShardWriter, ensure_dir, plan_entries
from ...selection.fill import (
    CandidateTable,
    FillResult,
    build_candidate_table,
    check_group_cap,
    fill_budgets,
    settle_splits,
)
from ...selection.select import apply_strategy, assign_splits
from ..spec.plan import REFERENCE_RUNTIME, PhysicalPlan, StageTelemetry
from ..spec.split_rules import rule_splits, split_report
from .hours_config import build_config, step_config
from .scoring import score_sources
from .span_rules import apply_span_rules, merge_adjacent, present_planned, unit_record
from .stage_lerobot import LEROBOT_DIRS, stage_lerobot
from .stage_local import stage_here
from .stage_packed import stage_packed
from .stage_parallel import parallel_stage_possible, stage_in_workers
from .state import HoursRun, Planned
from .windows import window_reader_scope

W = TypeVar("W")  # where an earlier copy of a shard is (a place name, or an object and one)

__all__ = ["PUBLISH_STEP", "STEPS", "HoursRun", "build_config", "run_steps"]


def _fused_features(plan: PhysicalPlan | None) -> bool:
    """Whether the plan fuses read, segment and features into one island."""
    if plan is None:
        return True
    isl = {plan.stage(k).island for k in ("read", "segment", "features")}
    return len(isl) == 1 and None not in isl


# ---- the steps ---------------------------------------------------------------------------


def step_score(r: HoursRun) -> list[StageTelemetry]:
    """Read, window and score every source: one fused pass, or -- when the plan makes the
    features stage a barrier -- read+segment over every source, then features over the pool."""
    fused = _fused_features(r.plan)
    r.started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    r.scoring = score_sources(
        r.schema,
        r.adapter,
        r.sources,
        r.segmenter,
        r.strategy,
        workers=r.opts.workers,
        on_error=r.opts.on_error,
        progress=r.progress,
        plugins=r.plugins,
        include_entry_points=r.include_entry_points,
        fused=fused,
        executor=r.executor if r.executor is not None else r.opts.resolved_executor,
        executor_options=dict(r.opts.executor_options or {}),
    )
    n_src, n_seg = len(r.sources), len(r.scoring.segments)
    ex = r.scoring.execution
    scored = r.scoring.summary()["sources_scored"]
    island = r.plan.stage("read").island if r.plan is not None else 0
    out = []
    parts = tuple(sorted(r.scoring.wall_s.items())) or None  # read, segment, features, ...
    for stage, wall in r.scoring.timing.items():
        lead = stage in ("features", "scorers")  # a features barrier and the scorers run here
        rows_in = n_seg if lead else n_src
        isl = r.plan.stage(stage).island if lead and r.plan else island
        split = parts if not lead else None
        run_by = {} if lead else _run_by(ex)
        out.append(
            StageTelemetry(stage, wall, rows_in, n_seg, scored, island=isl, parts_s=split, **run_by)
        )
    # transforms and scorers run inside scoring (the features stage)
    for seam in ("transforms", "scorers"):
        emit(r.progress, seam, "start", total=0)
        emit(r.progress, seam, "complete", total=0)
    return out


def _run_by(execution: Mapping[str, Any]) -> dict[str, Any]:
    """The executor fields of a StageTelemetry."""
    return {
        "executor": execution.get("executor"),
        "batch_size": execution.get("batch_size"),
        "queue_depth": execution.get("queue_depth"),
    }


def step_rank(r: HoursRun) -> dict[str, Any]:
    """Bin the pool and rank it by the strategy's method (``bin_edges`` for config.json)."""
    segs = r.pool().segments
    emit(r.progress, "selection", "start", total=len(SPLITS))
    with window_reader_scope(r.adapter, r.pool()):
        r.edges = apply_strategy(segs, r.strategy, r.opts.seed)
    return {"rows_in": len(segs), "rows_out": len(segs)}


def step_candidates(r: HoursRun) -> dict[str, Any]:
    """Cut tracks (or spans) into candidates carrying aggregated priority and features."""
    pool = r.pool()
    by_source: dict[str, list[Segment]] = {}
    for s in pool.segments:
        by_source.setdefault(s.source_id, []).append(s)
    min_steps = max(1, int(np.ceil(r.sel.min_track_seconds * r.hz)))
    table, r.too_short = build_candidate_table(
        {sid: info.tracks for sid, info in pool.sources.items()},
        by_source,
        how=r.sel.clip_aggregate,
        features=r.strategy.feature_names,
        min_steps=min_steps,
        span_steps=r.span_steps,
        group_of=r.group_fn,
        veto=r.sel.filter_scope == "span",
    )
    table = apply_span_rules(r, table)
    r.candidates, r.empty_spans = table, table.empty_excluded
    return {"rows_in": len(pool.segments), "rows_out": len(r.candidates)}


def step_split(r: HoursRun) -> dict[str, Any]:
    """Assign each candidate source to train or test (stratified by group)."""
    table = r.candidates
    if not hasattr(table, "pooled_sources"):  # a table, or the disk runtime's file, is kept as is
        table = CandidateTable.of(table)
    cand_sources = table.pooled_sources()
    total_h = r.sel.train_hours + r.sel.test_hours
    for sid, group in table.source_groups().items():  # each source's first label
        r.groups.setdefault(sid, group)
    rule, infos = r.sel.split, r.pool().sources
    if rule is not None:  # pinned or by time (kuration.pipeline.spec.split_rules)
        r.split_of = rule_splits(rule, cand_sources, infos, r.hz)
        r.split_report = {"rule": dict(rule), **split_report(r.split_of, cand_sources, infos, r.hz)}
    else:
        r.split_of = assign_splits(
            cand_sources, r.sel.test_hours / total_h, r.opts.seed, r.groups or None
        )
    return {"rows_in": len(cand_sources), "rows_out": len(r.split_of)}


def fill_options(r: HoursRun) -> tuple[list[str] | None, bool, float | None]:
    """The fill's tag names, whether tag coverage applies and the group overshoot: the
    selection's options with the strategy's own tag coverage and group cap."""
    strat_cov = getattr(r.strategy, "tag_coverage", None) or {}
    strat_cap = getattr(r.strategy, "group_cap", None) or {}
    overshoot = r.sel.max_group_overshoot
    if overshoot is None and strat_cap.get("max_overshoot") is not None:
        overshoot = float(strat_cap["max_overshoot"])
    tag_names = sorted(strat_cov) if strat_cov else None
    return tag_names, bool(r.sel.tag_coverage or strat_cov), overshoot


def step_fill(r: HoursRun, fill: Callable[..., FillResult] = fill_budgets) -> dict[str, Any]:
    """Fill the hour budgets; the strategy's own tag coverage and group cap apply too
    (``fill``: :func:`~kuration.selection.fill.fill_budgets`, or the disk runtime's fill
    over its candidate store)."""
    r.tag_names, r.use_tags, r.overshoot = fill_options(r)
    budgets = {"train": r.sel.train_hours * 3600.0, "test": r.sel.test_hours * 3600.0}
    r.fill = fill(
        r.candidates,
        r.split_of,
        budgets,
        r.hz,
        max_group_overshoot=r.overshoot,
        tag_coverage=r.use_tags,
        tag_names=r.tag_names,
        min_tag_frac=r.sel.min_tag_frac,
        count=r.sel.budget_time,
    )
    spec = r.spec
    check_group_cap(
        r.fill,
        overshoot=r.overshoot,
        shard_seconds=spec.shard_length / r.hz if spec.short_policy == "drop" else None,
    )
    for i, split in enumerate(SPLITS, 1):
        n = len(r.fill.admitted[split])
        emit(
            r.progress,
            "selection",
            "advance",
            current=i,
            total=len(SPLITS),
            split=split,
            admitted=n,
        )
    emit(r.progress, "selection", "complete", total=len(SPLITS))
    n_out = sum(len(v) for v in r.fill.admitted.values())
    return {"rows_in": len(r.candidates), "rows_out": n_out}


def job_description(r: HoursRun) -> dict[str, Any]:
    """The run description less what the sources tell (their fingerprints, errors and
    groups): the job's settings and the identity of the code that runs it, known before
    any source is read (see :mod:`kuration.output.job_match`)."""
    tag_names, use_tags, overshoot = fill_options(r)
    run = {
        "kuration_version": __version__,
        "schema": r.schema.to_dict(),
        "adapter": r.adapter.to_dict(),
        "strategy": r.strategy.to_dict(),
        "segmenter": r.segmenter.to_dict(),
        "output": r.spec.to_dict(),
        "encoder": encoder_identity(r.encoder),
        "budget": r.sel.budget(),
        "seed": r.opts.seed,
        "clip_aggregate": r.sel.clip_aggregate,
        "min_track_seconds": float(r.sel.min_track_seconds),
        "span_steps": r.span_steps,
        **unit_record(r),
        "max_group_overshoot": overshoot,
        "tag_coverage": use_tags,
        "tag_names": tag_names,
        "min_tag_frac": float(r.sel.min_tag_frac),
        "on_error": r.opts.on_error,
    }
    # code outside kuration that shapes the shards (plugins); absent when there is none
    code = run_code(used_names(run["strategy"], r.adapter.name, r.spec.container), r.plugins)
    if code:
        run["code"] = code
    return run


def step_fingerprint(r: HoursRun) -> dict[str, Any]:
    """The run document pinned by ``.kuration_output_spec.json`` and its fingerprint."""
    pool = r.pool()
    source_ids = [
        {"source_id": sid, "fingerprint": info.fingerprint}
        for sid, info in sorted(pool.sources.items())
    ]
    r.run = {
        **job_description(r),
        "groups": dict(sorted(r.groups.items())),
        "sources": source_ids,
        "source_errors": sorted(pool.errors),
    }
    r.unidentified = code_unidentified(r.run.get("code", {}))
    r.fingerprint = run_fingerprint(r.run)
    return {"rows_in": len(source_ids), "rows_out": 1}


def step_shard_plan(r: HoursRun) -> dict[str, Any]:
    """Every shard's manifest entry, minus size and checksum; settles each split's binding."""
    pool, fill = r.pool(), r.filled()
    for split in SPLITS:
        admitted = fill.admitted[split]
        if r.sel.merge_adjacent_spans:
            admitted = merge_adjacent(admitted)
        for c in admitted:
            planned = plan_entries(
                source_id=c.source_id,
                entity_id=c.entity_id,
                span_index=c.span_index,
                start_idx=c.first,
                n_steps=c.n_steps,
                k0=pool.sources[c.source_id].k0,
                sample_hz=r.hz,
                split=split,
                spec=r.spec,
            )
            r.admitted.append((split, c, planned))
    counted = present_planned(r) if r.sel.budget_time == "present" else r.admitted
    # no unit is shorter than a window (or min_track_seconds): advice never names less
    window_s = getattr(r.segmenter, "window_steps", 0) / r.hz
    floor_s = max(float(r.sel.min_track_seconds), window_s)
    r.binding = settle_splits(
        fill, counted, r.hz, r.too_short, r.sel.allow_empty_split, min_unit_s=floor_s
    )
    n_shards = sum(len(p) for _, _, p in r.admitted)
    return {"rows_in": len(r.admitted), "rows_out": n_shards}


def step_resume_lookup(r: HoursRun) -> dict[str, Any]:
    """Which earlier shards may be reused (``resume``), and the previous commit record.

    Raises
    ------
    DatasetExistsError
        ``resume`` into a destination whose committed dataset another job made, unless
        it holds work this very run staged (a ``force`` run of it that failed before
        publishing); see :mod:`kuration.output.job_match`.
    """
    if r.resume and not holds_staged(r.root, r.fingerprint):
        refuse_other_job_here(r.root, r.run)
    if r.resume:
        strong = all(
            isinstance(s["fingerprint"], str) and s["fingerprint"] for s in r.run["sources"]
        )
        if r.unidentified:
            r.resume_notes = [f"no source code found for {r.unidentified}: nothing is reused"]
        elif strong:
            r.trusted, r.staged, r.resume_notes = reusable_entries(r.root, r.fingerprint, r.run)
        else:
            r.resume_notes = ["a source has no strong fingerprint: nothing is reused"]
    for split in SPLITS:
        d = r.root / split
        if d.is_symlink() or (d.exists() and not d.is_dir()):
            raise DatasetIntegrityError(
                "refusing to write through a symlink or non-directory", path=str(d)
            )
    try:
        r.prev, _ = read_commit(r.root)
    except DatasetIntegrityError:
        r.prev = None  # unreadable: nothing to carry over (force/resume rebuild)
    return {"rows_out": len(r.trusted) + len(r.staged)}


def first_reusable(
    planned: Mapping[str, Any],
    copies: Sequence[tuple[Mapping[str, Any] | None, W]],
    bytes_match: Callable[[Mapping[str, Any], W], bool],
) -> tuple[dict[str, Any], W] | None:
    """The first earlier copy of a planned shard that may stand in for it: its record's plan
    fields agree and ``bytes_match`` confirms the stored bytes; with the completed entry and
    where the copy is (``copies`` pairs a record with that place).  None: rebuild it."""
    for rec, where in copies:
        if rec is None or any(rec.get(k) != planned[k] for k in PLAN_KEYS):
            continue
        if bytes_match(rec, where):
            return {**planned, "size": rec["size"], "sha256": rec["sha256"]}, where
    return None


def adopt_all(
    r: HoursRun,
    planned: list[dict[str, Any]],
    locate: Callable[[Mapping[str, Any]], tuple[dict[str, Any], W] | None],
    staged: Callable[[dict[str, Any], W], None],
) -> bool:
    """Take every shard of one admitted track from an earlier run if all are reusable
    (``staged`` is told of each adopted one, to move it into place if it is not yet)."""
    found = [locate(e) for e in planned]
    if not planned or any(f is None for f in found):
        return False
    for f in found:
        assert f is not None
        staged(*f)
        r.entries.append(f[0])
    r.reused += len(planned)
    return True


def _locate(
    r: HoursRun, stage: Path, planned: Mapping[str, Any]
) -> tuple[dict[str, Any], str] | None:
    """A reusable local copy of a planned shard, ``"in place"`` or still ``"staged"``."""
    path = planned["path"]
    base = {"in place": r.root, "staged": stage}
    copies = [
        (r.trusted.get(path), "in place"),
        (r.staged.get(path), "staged"),
        (r.staged.get(path), "in place"),  # moved before an interrupted publication ended
    ]
    return first_reusable(planned, copies, lambda rec, where: shard_matches(base[where], rec))


def _reuse(r: HoursRun, stage: Path, planned: list[dict[str, Any]]) -> bool:
    """Take every shard of one admitted track from an earlier local run, if all are reusable."""

    def staged(entry: dict[str, Any], where: str) -> None:
        if where == "staged":
            r.to_move.append(entry["path"])

    return adopt_all(r, planned, partial(_locate, r, stage), staged)


def step_stage(r: HoursRun) -> dict[str, Any]:
    """Encode every shard not already in place into the staging namespace, source by source
    (the published dataset is untouched)."""
    stage = staging_dir(r.root, r.fingerprint)
    if not r.resume and stage.exists():
        remove_tree(stage)
    r.journal = Journal(stage, r.fingerprint, keep=r.resume)
    if r.spec.shared_files:  # packed Parquet files or a LeRobot folder (stage_packed/_lerobot)
        writer = ShardWriter(stage, r.spec, r.schema, r.encoder, on_shard=r.journal.record)
        stage_shared = stage_lerobot if r.spec.lerobot else stage_packed
        measured = stage_shared(r, stage, writer)
        r.journal.close()
        return measured
    work: dict[str, list[Planned]] = {}
    for item in r.admitted:
        work.setdefault(item[1].source_id, []).append(item)
    r.partitions = len(work)
    read_s = None  # seconds reading sources again, when they are read in this process
    emit(r.progress, "writing", "start", total=len(work))
    if parallel_stage_possible(r.executor, r.encoder):
        assert r.executor is not None
        depth, size = stage_in_workers(r, stage, work, lambda p: _reuse(r, stage, p))
        run_by = {"executor": r.executor.name, "batch_size": size, "queue_depth": depth}
    else:
        read_s = stage_here(r, stage, work, lambda p: _reuse(r, stage, p))
        run_by = {"executor": "local", "batch_size": 1, "queue_depth": 1}
    r.journal.close()
    fsync_s = 0.0
    if r.opts.durable:
        t0 = time.perf_counter()
        make_durable([stage / p for p in r.to_move], stage)
        fsync_s = time.perf_counter() - t0
    parts = (("fsync", fsync_s),) + ((("read", read_s),) if read_s is not None else ())
    return {
        "parts_s": parts,
        "rows_in": len(r.admitted),
        "rows_out": len(r.entries),
        "partitions": len(work),
        "bytes": sum(int(e.get("size", 0)) for e in r.entries),
        "checkpoint_hits": r.reused,
        "checkpoint_misses": r.rebuilt,
        **run_by,
    }


def _sort_entries(entries: list[dict[str, Any]]) -> None:
    """The manifest's shard order: split, source, entity, span, shard."""
    entries.sort(
        key=lambda e: (
            e["split"],
            e["source_id"],
            e["entity_id"],
            -1 if e["span_index"] is None else e["span_index"],
            e["shard_index"],
        )
    )


def step_publish(r: HoursRun) -> dict[str, Any]:
    """``state="writing"``, staged shards moved into place, stale files removed, fsync.

    From here on the run only writes bytes prepared by ``config``
    (:func:`~kuration.pipeline.run.hours_config.step_config`), moves and removes files."""
    stage = staging_dir(r.root, r.fingerprint)
    write_commit(r.root, r.records["writing"])
    r.published = True  # after the record: a failed write leaves the last commit standing
    for rel in r.to_move:
        if r.spec.lerobot:  # nested folders (data/chunk-000/...), made one level at a time
            for parent in reversed(Path(rel).parents[:-1]):
                ensure_dir(r.root / parent)
        else:
            ensure_dir(r.root / rel.split("/", 1)[0])
        os.replace(stage / rel, r.root / rel)
    if r.spec.lerobot:
        keep = {f["path"] for f in r.packed_files}
        remove_stale(r.root, keep, trees=LEROBOT_DIRS)
    else:
        remove_stale(r.root, {e["path"] for e in r.entries})
    if r.opts.durable:
        make_durable([r.root / s for s in SPLITS if (r.root / s).is_dir()] + [r.root], r.root)
    return {"rows_in": len(r.to_move), "rows_out": len(r.entries)}


def _counted_steps(r: HoursRun) -> dict[str, int]:
    """Per split, the steps of the shards written in the budget's own unit: every step, or
    under ``budget_time: "present"`` the steps where the entity is present, so that
    ``emitted_s`` and ``dropped_tail_s`` count what ``admitted_s`` counts."""
    out: dict[str, int] = {}
    if r.sel.budget_time == "present":
        for split, _, entries in present_planned(r):
            out[split] = out.get(split, 0) + sum(int(e["n_steps"]) for e in entries)
        return out
    for e in r.entries:
        out[e["split"]] = out.get(e["split"], 0) + int(e["n_steps"])
    return out


def step_manifest(r: HoursRun) -> dict[str, Any]:
    """The manifest document: splits, budget blocks (with their binding) and every shard."""
    spec, fill = r.spec, r.filled()
    _sort_entries(r.entries)
    budget: dict[str, Any] = {
        "too_short_excluded": r.too_short,
        "min_track_seconds": float(r.sel.min_track_seconds),
        "span_steps": r.span_steps,
        "clip_aggregate": r.sel.clip_aggregate,
        **unit_record(r, with_counts=True),
    }
    splits: dict[str, Any] = {}
    counted = _counted_steps(r)
    for split in SPLITS:
        b = dict(fill.budget[split])
        es = [e for e in r.entries if e["split"] == split]
        b["emitted_s"] = counted.get(split, 0) / r.hz
        b["dropped_tail_s"] = b["admitted_s"] - b["emitted_s"]
        b["binding"], b["binding_detail"] = r.binding[split]
        budget[split] = b
        splits[split] = {
            "shards": len(es),
            "tracks": len({(e["source_id"], e["entity_id"], e["span_index"]) for e in es}),
            "sources": sorted({e["source_id"] for e in es}),
            "seconds": sum(e["n_steps"] for e in es) / r.hz,  # the shards' extent
        }
    r.manifest = {
        "format": FORMAT,
        "run_fingerprint": r.fingerprint,
        "container": spec.container,
        "shard_length": spec.shard_length,
        "short_policy": spec.short_policy,
        "presence_mask": spec.presence_mask,
        "sample_hz": r.hz,
        "modalities": {
            k: {"dtype": m.dtype, "shape": list(m.shape), "source": m.source, "unit": unit}
            for (k, m), unit in zip(
                spec.modalities.items(), spec.units(r.schema, r.encoder).values(), strict=True
            )
        },
        "splits": splits,
        "budget": budget,
        "shards": r.entries,
    }
    if spec.shared_files:  # the files the entries point into (kuration.output.packed, .lerobot)
        r.manifest["layout"] = spec.layout
        r.manifest["files"] = r.packed_files
    return {"rows_in": len(r.entries), "rows_out": 1}


def step_commit(r: HoursRun) -> dict[str, Any]:
    """The marker, manifest and config bytes replaced, then ``state="committed"``."""
    for name, data in r.payload.items():
        write_bytes_atomic(r.root / name, data)
    write_commit(r.root, r.records["committed"])
    remove_tree(r.root / STAGING_NAME)
    return {"rows_in": len(r.entries), "rows_out": 3}


Step = Callable[[HoursRun], "dict[str, Any] | list[StageTelemetry]"]

#: The hours run, step by step: (telemetry stage name, step).
STEPS: tuple[tuple[str, Step], ...] = (
    ("read+segment+features", step_score),
    ("bin", step_rank),
    ("candidates", step_candidates),
    ("split", step_split),
    ("fill", step_fill),
    ("fingerprint", step_fingerprint),
    ("shard-plan", step_shard_plan),
    ("resume-lookup", step_resume_lookup),
    ("stage", step_stage),
    ("manifest", step_manifest),
    ("config", step_config),
    ("publish", step_publish),
    ("commit", step_commit),
)

#: The first step that touches the published dataset (``state="writing"``).
PUBLISH_STEP = "publish"


#: The plan stage each step executes (its island is recorded in the telemetry).
_PLAN_STAGE = {
    "bin": "bin",
    "candidates": "fill",
    "split": "fill",
    "fill": "fill",
    "stage": "write",
    "publish": "write",
}


#: the runtime the steps defined here belong to (a runtime that swaps in its own steps
#: defines its own ``RUNTIME`` next to them)
RUNTIME = REFERENCE_RUNTIME


def _runtime_of(step: Step) -> str | None:
    return getattr(sys.modules.get(step.__module__), "RUNTIME", None)


def run_steps(r: HoursRun, steps: tuple[tuple[str, Step], ...] = STEPS) -> None:
    """Run ``steps`` (default :data:`STEPS`) in order, recording each one's
    :class:`StageTelemetry` in ``r.telemetry`` (a step that ran several plan stages
    reports them itself), each stamped with the runtime whose code ran it: the ``RUNTIME``
    of the step's module, and for a step shared by every runtime (defined here) the
    runtime of the run's first step, the one that scores the sources."""
    run_runtime = _runtime_of(steps[0][1]) if steps else None
    for name, step in steps:
        here = _runtime_of(step)
        runtime = run_runtime if here in (None, RUNTIME) else here
        t0 = time.perf_counter()
        n0 = len(r.telemetry)
        measured = step(r)
        if isinstance(measured, list):
            r.telemetry.extend(measured)
        else:
            kind = _PLAN_STAGE.get(name)
            island = r.plan.stage(kind).island if r.plan is not None and kind else None
            wall = time.perf_counter() - t0
            r.telemetry.append(StageTelemetry(name, wall, island=island, **measured))
        r.telemetry[n0:] = [
            t if t.runtime is not None else dataclasses.replace(t, runtime=runtime)
            for t in r.telemetry[n0:]
        ]
