"""write_dataset: score, rank tracks, fill the hour budgets, write and commit a dataset."""

from __future__ import annotations

import datetime as _dt
import platform
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..adapters.base import InputAdapter
from ..errors import DatasetExistsError, OutputSpecError
from ..jsonio import dump_json_atomic
from ..progress import ProgressCallback, emit
from ..schema import SchemaSpec
from ..scoring import ScoringResult, score_sources
from ..segment import Segment, Segmenter
from ..select import apply_strategy, assign_splits
from ..strategy import Strategy
from .commit import (
    CONFIG_NAME,
    FORMAT,
    LOCK_NAME,
    MANIFEST_NAME,
    WriterLease,
    write_commit,
)
from .fill import Candidate, aggregate_segments, fill_budgets
from .spec import OutputSpec
from .track import track_from_table
from .writer import ShardWriter

__all__ = ["DatasetWriteResult", "write_dataset"]

SPLITS = ("train", "test")


@dataclass(frozen=True)
class DatasetWriteResult:
    """What :func:`write_dataset` wrote: ``path``, the ``manifest`` and ``config`` dicts and the
    scoring result.  ``result["results"]["budget"]`` reads the config."""

    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    scoring: ScoringResult

    def __getitem__(self, key: str) -> Any:
        return self.config[key]


def _candidates(
    scoring: ScoringResult,
    strategy: Strategy,
    how: str,
    min_steps: int,
    group_of: Callable[[str], str | None] | None,
) -> tuple[list[Candidate], int]:
    by_source: dict[str, list[Segment]] = {}
    for s in scoring.segments:
        by_source.setdefault(s.source_id, []).append(s)
    out: list[Candidate] = []
    too_short = 0
    for sid in sorted(scoring.sources):
        info = scoring.sources[sid]
        segs = by_source.get(sid, [])
        for e_idx, ext in enumerate(info.tracks):
            if ext.n_steps < min_steps:
                too_short += 1
                continue
            prio, feats = aggregate_segments(segs, ext.first, ext.last, how, strategy.feature_names)
            out.append(
                Candidate(
                    sid,
                    ext.entity_id,
                    e_idx,
                    ext.first,
                    ext.last,
                    prio,
                    feats,
                    group=group_of(sid) if group_of else None,
                )
            )
    return out, too_short


def write_dataset(
    out: str | Path,
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
    workers: int = 1,
    on_error: str = "skip",
    force: bool = False,
    progress: ProgressCallback | None = None,
    job: Mapping[str, Any] | None = None,
) -> DatasetWriteResult:
    """Score ``sources``, rank tracks by priority, fill the train/test hour budgets and write shards.

    Parameters
    ----------
    out : path
        Destination directory; refused if it already holds files unless ``force``.
    train_hours, test_hours : float
        Budgets in hours of track time per split.
    clip_aggregate : {"max", "mean", "min"}
        How a track's overlapping segment priorities and features aggregate.
    min_track_seconds : float
        Tracks shorter than this never enter the pool (counted in the budget block).
    seed : int
        Seeds the split assignment and the method's tie-breaks.

    Returns
    -------
    DatasetWriteResult

    Raises
    ------
    OutputSpecError
        The output spec does not fit the schema/strategy (before any work).
    DatasetExistsError
        ``out`` is not empty and ``force`` is false, or another writer holds it.
    EmptyPoolError
        No source produced a segment.
    """
    root = Path(out)
    hz = float(schema.sample_hz)
    if sample_hz is not None and float(sample_hz) != hz:
        raise OutputSpecError(
            f"sample_hz {sample_hz} differs from the schema's {hz}; resampling is not supported"
        )
    if clip_aggregate not in ("max", "mean", "min"):
        raise OutputSpecError(f"clip_aggregate must be max, mean or min, got {clip_aggregate!r}")
    for name, h in (("train_hours", train_hours), ("test_hours", test_hours)):
        if not (isinstance(h, int | float) and np.isfinite(h) and h >= 0):
            raise OutputSpecError(f"{name} must be a finite number >= 0, got {h!r}")
    if train_hours + test_hours <= 0:
        raise OutputSpecError("train_hours + test_hours must be positive")
    spec.validate_against(schema, strategy.feature_names, has_encoder=encoder is not None)
    if root.exists() and any(p.name != LOCK_NAME for p in root.iterdir()) and not force:
        raise DatasetExistsError(f"{root} is not empty; pass force=True to replace it")

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
    )
    emit(progress, "selection", "start", total=len(scoring.segments))
    edges = apply_strategy(scoring.segments, strategy, seed)
    gfn: Callable[[str], str | None] | None
    gfn = group_of.get if isinstance(group_of, Mapping) else group_of
    min_steps = max(1, int(np.ceil(min_track_seconds * hz)))
    cands, too_short = _candidates(scoring, strategy, clip_aggregate, min_steps, gfn)
    cand_sources = sorted({c.source_id for c in cands})
    total_h = train_hours + test_hours
    groups = {s: g for s in cand_sources if gfn and (g := gfn(s)) is not None}
    split_of = assign_splits(cand_sources, test_hours / total_h, seed, groups or None)
    budgets = {"train": train_hours * 3600.0, "test": test_hours * 3600.0}
    fill = fill_budgets(cands, split_of, budgets, hz)
    emit(progress, "selection", "complete", total=len(scoring.segments))

    uri_of = {sid: info.uri for sid, info in scoring.sources.items()}
    by_source: dict[str, list[tuple[str, Candidate]]] = {}
    for split in SPLITS:
        for c in fill.admitted[split]:
            by_source.setdefault(c.source_id, []).append((split, c))

    with WriterLease(root):
        write_commit(root, "writing")
        for old in (*SPLITS, MANIFEST_NAME, CONFIG_NAME):
            p = root / old
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
        writer = ShardWriter(root, spec, schema, encoder)
        entries: list[dict[str, Any]] = []
        emit(progress, "writing", "start", total=len(by_source))
        for i, sid in enumerate(sorted(by_source), 1):
            table = adapter.read_table(uri_of[sid])
            for split, c in by_source[sid]:
                meta = {**c.features, "priority": c.priority}
                track = track_from_table(
                    table, table.entity_ids.index(c.entity_id), c.first, c.last, c.span_index, meta
                )
                entries.extend(writer.write(track, split))
            emit(progress, "writing", "advance", current=i, total=len(by_source), source=sid)
        emit(progress, "writing", "complete", total=len(by_source))
        entries.sort(
            key=lambda e: (
                e["split"],
                e["source_id"],
                e["entity_id"],
                e["span_index"] or 0,
                e["shard_index"],
            )
        )

        budget = {"too_short_excluded": too_short, "min_track_seconds": float(min_track_seconds)}
        splits: dict[str, Any] = {}
        for split in SPLITS:
            b = dict(fill.budget[split])
            es = [e for e in entries if e["split"] == split]
            b["emitted_s"] = sum(e["n_steps"] for e in es) / hz
            b["dropped_tail_s"] = b["admitted_s"] - b["emitted_s"]
            budget[split] = b
            splits[split] = {
                "shards": len(es),
                "tracks": len({(e["source_id"], e["entity_id"], e["span_index"]) for e in es}),
                "sources": sorted({e["source_id"] for e in es}),
                "seconds": b["emitted_s"],
            }
        manifest = {
            "format": FORMAT,
            "container": spec.container,
            "shard_length": spec.shard_length,
            "short_policy": spec.short_policy,
            "presence_mask": spec.presence_mask,
            "sample_hz": hz,
            "modalities": {
                k: {"dtype": m.dtype, "shape": list(m.shape)} for k, m in spec.modalities.items()
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
            }
            for sid, info in sorted(scoring.sources.items())
        ]
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
            },
            "warnings": [],
            "provenance": {
                "kuration_version": __version__,
                "python": sys.version.split()[0],
                "numpy": np.__version__,
                "platform": platform.platform(),
                "execution": {
                    "mode": "local" if workers <= 1 else "process-pool",
                    "workers": workers,
                },
                "started_at": started,
                "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            },
        }
        man_sha = dump_json_atomic(root / MANIFEST_NAME, manifest)
        cfg_sha = dump_json_atomic(root / CONFIG_NAME, config)
        write_commit(
            root, "committed", manifest_sha256=man_sha, config_sha256=cfg_sha, n_shards=len(entries)
        )
    return DatasetWriteResult(root, manifest, config, scoring)
