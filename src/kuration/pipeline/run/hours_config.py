r"""The documents an hours run publishes, built and encoded before publication begins.

:func:`step_config` is the last step before ``state="writing"`` (see
:data:`~kuration.pipeline.run.steps.STEPS`): it builds ``config.json`` (results,
feature histograms, ranking examples, budget accounting, provenance), encodes it, the
manifest and the run-fingerprint marker to their canonical bytes, and encodes both
commit records that publication will write.  Whatever can fail in that work -- a
histogram, a report, a number that is not finite, an object JSON cannot hold -- fails
here, while the published dataset is still the previous one; from ``state="writing"``
on, a run only writes these bytes, moves files and ``fsync``\ s.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
import sys
from typing import Any

import numpy as np

from ..._version import __version__
from ...core.jsonio import canonical_json
from ...core.plugins import implementation_fingerprints
from ...core.progress import emit
from ...output.commit import (
    CONFIG_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    SPLITS,
    commit_bytes,
    marker_document,
)
from ...output.encoders import encoder_identity
from .presence_report import presence_budget
from .span_rules import unit_record
from .state import HoursRun
from .summary import feature_distributions, ranking_examples

__all__ = ["build_config", "step_config"]


def _warnings(r: HoursRun) -> list[str]:
    out: list[str] = []
    if not r.entries:
        out.append("no shard was emitted: every candidate was excluded or dropped")
    for split in SPLITS:
        if r.binding[split][0] is not None:
            out.append(f"{split} under-filled: {r.binding[split][0]}: {r.binding[split][1]}")
    unidentified = getattr(r.disk, "unidentified", None)
    if unidentified and r.opts.checkpoint_dir is not None:
        out.append(
            f"{IDENTITY_NOTE}: {len(unidentified)} source(s), e.g. {unidentified[0]}, were "
            "scored afresh and their checkpoints are never reused (a remote object needs a "
            "version or an ETag, a custom adapter a fingerprint)"
        )
    return out


#: The start of the warning a run records for sources that cannot authorize reuse.
IDENTITY_NOTE = "no strong source identity"


def _pipeline_block(r: HoursRun) -> dict[str, Any]:
    pool = r.pool()
    sources = [
        {
            "source_id": sid,
            "uri": info.uri,
            "sha256": info.fingerprint,
            "split": r.split_of.get(sid),
            "n_steps": info.n_steps,
            "segments": info.n_segments,
            **info.counts,
        }
        for sid, info in sorted(pool.sources.items())
    ]
    return {
        "adapter": r.adapter.to_dict(),
        "segmenter": r.segmenter.to_dict(),
        **r.sel.budget(),
        "seed": r.opts.seed,
        "clip_aggregate": r.sel.clip_aggregate,
        "min_track_seconds": r.sel.min_track_seconds,
        "span_steps": r.span_steps,
        **unit_record(r),
        "max_group_overshoot": r.overshoot,
        "tag_coverage": r.use_tags,
        "min_tag_frac": float(r.sel.min_tag_frac),
        "allow_empty_split": bool(r.sel.allow_empty_split),
        "workers": r.opts.workers,
        "on_error": r.opts.on_error,
        "sources": sources,
    }


def _provenance(r: HoursRun) -> dict[str, Any]:
    workers = r.opts.workers
    ex = r.executor
    return {
        "kuration_version": __version__,
        "run_fingerprint": r.fingerprint,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "encoder": encoder_identity(r.encoder),
        "implementations": implementation_fingerprints(),
        "sources": r.run["sources"],
        "execution": {
            "mode": ex.name if ex is not None else r.opts.resolved_executor,
            "workers": workers,
            "max_in_flight": ex.max_in_flight if ex is not None else None,
            **({"streaming": True} if r.opts.streaming else {}),
            # per Ray node: tasks run there and their CPU and wall seconds
            **({"nodes": ex.nodes} if ex is not None and ex.nodes else {}),
            # the PhysicalPlan that ran and each executed step's telemetry (this step's
            # own is not in yet: it ends with the commit)
            "plan": r.plan.to_dict() if r.plan is not None else None,
            "telemetry": [t.to_dict() for t in r.telemetry],
        },
        "started_at": r.started,
        "finished_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def _pool_parts(r: HoursRun) -> dict[str, Any]:
    """``distributions`` and ``examples`` of config.json: from the segments, or as the
    disk runtime computed them from its index."""
    if r.disk is not None:
        return {"distributions": r.disk.distributions, "examples": r.disk.examples}
    segs, names = r.pool().segments, r.strategy.feature_names
    return {
        "distributions": feature_distributions(segs, r.filled(), names),
        "examples": ranking_examples(segs, names),
    }


def build_config(r: HoursRun) -> dict[str, Any]:
    """The config.json document of the run (results, provenance, telemetry so far)."""
    pool = r.pool()
    return {
        "format": "kuration-config/1",
        "schema": r.schema.to_dict(),
        "strategy": r.strategy.to_dict(),
        "output": r.spec.to_dict(),
        "pipeline": _pipeline_block(r),
        "job": dict(r.job) if r.job is not None else None,
        "results": {
            "scoring": pool.summary(),
            "bin_edges": r.edges,
            "budget": presence_budget(
                r.manifest["budget"],
                r.admitted,
                {sid: info.tracks for sid, info in pool.sources.items()},
                r.hz,
                r.empty_spans,
            ),
            "splits": r.manifest["splits"],
            "split_of": dict(sorted(r.split_of.items())),
            **({} if r.split_report is None else {"split_report": r.split_report}),
            "resume": r.resume_block,
            **({} if r.lerobot_videos is None else {"lerobot_videos": r.lerobot_videos}),
            **_pool_parts(r),
        },
        "warnings": _warnings(r),
        "provenance": _provenance(r),
    }


def step_config(r: HoursRun) -> dict[str, Any]:
    """config.json built; marker, manifest, config and both commit records encoded.

    ``r.payload`` holds the three documents' bytes in the order publication writes
    them, ``r.records`` the ``writing`` and ``committed`` records (the latter pins the
    documents' SHA-256).  The progress callback's ``writing`` phase ends here, so user
    code runs before publication too.

    Raises
    ------
    StrictJSONError
        A document holds NaN or infinity (naming where).
    ValueError, TypeError
        A document cannot be encoded as JSON.
    """
    r.config = build_config(r)
    r.payload = {
        MARKER_NAME: canonical_json(marker_document(r.run)),
        MANIFEST_NAME: canonical_json(r.manifest),
        CONFIG_NAME: canonical_json(r.config),
    }
    sha = {name: hashlib.sha256(data).hexdigest() for name, data in r.payload.items()}
    last_committed = None
    if r.prev is not None:
        prev = r.prev
        last_committed = prev if prev.get("state") == "committed" else prev.get("previous")
    r.records = {
        "writing": commit_bytes("writing", run_fingerprint=r.fingerprint, previous=last_committed),
        "committed": commit_bytes(
            "committed",
            run_fingerprint=r.fingerprint,
            manifest_sha256=sha[MANIFEST_NAME],
            config_sha256=sha[CONFIG_NAME],
            output_spec_sha256=sha[MARKER_NAME],
            n_shards=len(r.entries),
        ),
    }
    emit(r.progress, "writing", "complete", total=r.partitions)
    return {"rows_in": len(r.entries), "rows_out": len(r.payload)}
