"""compare_datasets: what changed between two curated datasets."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..read.loaders import Dataset
from .inspect import inspect_dataset

__all__ = ["compare_datasets", "structured_diff"]

# config sections compared; provenance (timestamps, platform) is reported apart
_SECTIONS = ("schema", "strategy", "output", "pipeline", "results", "warnings")
#: parts of those sections that describe the run, not the dataset (listed with provenance):
#: shards reused by a resume, and the worker count (the artifact is the same for any)
_RUN_ONLY = ("results.resume", "pipeline.workers")
#: provenance that differs between any two runs (clock times, seconds spent): not listed
_TIMING = re.compile(r"(started_at|finished_at|\.wall_s|\.parts_s(\..*)?)$")


def structured_diff(left: Any, right: Any, path: str = "") -> list[dict[str, Any]]:
    """Recursive difference of two JSON values: a list of ``{path, left, right}`` leaves
    (``left``/``right`` absent when a key exists on one side only)."""
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        out: list[dict[str, Any]] = []
        for k in sorted(set(left) | set(right), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in left:
                out.append({"path": p, "change": "added", "right": right[k]})
            elif k not in right:
                out.append({"path": p, "change": "removed", "left": left[k]})
            else:
                out.extend(structured_diff(left[k], right[k], p))
        return out
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        out = []
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            out.extend(structured_diff(a, b, f"{path}[{i}]"))
        return out
    if left == right and type(left) is type(right):
        return []
    return [{"path": path, "change": "changed", "left": left, "right": right}]


def _located(section: Any) -> Any:
    """A pipeline section without source locations (compared by content checksum instead)."""
    if not isinstance(section, Mapping) or not isinstance(section.get("sources"), list):
        return section
    out = dict(section)
    out["sources"] = [
        {k: v for k, v in src.items() if k != "uri"} if isinstance(src, Mapping) else src
        for src in section["sources"]
    ]
    return out


def _locations(config: Mapping[str, Any]) -> dict[str, Any]:
    pipe = config.get("pipeline") or {}
    return {
        str(s.get("source_id")): s.get("uri")
        for s in pipe.get("sources", [])
        if isinstance(s, Mapping)
    }


def _shard_key(e: Mapping[str, Any]) -> tuple[Any, ...]:
    return (e["split"], e["source_id"], e["entity_id"], e.get("span_index"), e["shard_index"])


def compare_datasets(
    left: str | os.PathLike[str], right: str | os.PathLike[str], verify: bool = False
) -> dict[str, Any]:
    """Compare two committed datasets.

    Returns
    -------
    dict
        ``identical`` (bool), ``shards`` (added/removed/changed, keyed by
        split/source/entity/span/shard index, ``changed`` meaning other bytes),
        ``splits`` and ``modalities`` differences, ``changes`` (a structured
        diff of schema, strategy, output, pipeline, results and warnings),
        ``provenance`` differences (with ``results.resume`` and
        ``pipeline.workers``: how many shards a run reused and how many workers it had
        say how it ran, not what it wrote; clock times and seconds spent are left out), and with ``verify=True`` each side's
        verification result (``identical`` is then false when a side's files
        do not match its manifest, even if the manifests agree).

    Raises
    ------
    DatasetIntegrityError
        If either side is not a committed, consistent dataset.
    """
    a, b = Dataset(left), Dataset(right)
    sa = {_shard_key(e): e for e in a.manifest["shards"]}
    sb = {_shard_key(e): e for e in b.manifest["shards"]}

    def show(k: tuple[Any, ...]) -> str:
        e = sa.get(k) or sb[k]
        return str(e.get("shard", e["path"]))  # packed shards share a file: show their name

    shards = {
        "added": sorted(show(k) for k in sb.keys() - sa.keys()),
        "removed": sorted(show(k) for k in sa.keys() - sb.keys()),
        "changed": sorted(
            show(k) for k in sa.keys() & sb.keys() if sa[k]["sha256"] != sb[k]["sha256"]
        ),
        "unchanged": sum(1 for k in sa.keys() & sb.keys() if sa[k]["sha256"] == sb[k]["sha256"]),
    }
    splits = structured_diff(a.manifest.get("splits", {}), b.manifest.get("splits", {}))
    modalities = structured_diff(a.manifest.get("modalities", {}), b.manifest.get("modalities", {}))
    changes: list[dict[str, Any]] = []
    for sec in _SECTIONS:
        left_sec, right_sec = _located(a.config.get(sec)), _located(b.config.get(sec))
        changes.extend(structured_diff(left_sec, right_sec, sec))
    # how the run went (shards reused by resume) is not what the dataset is: reported apart
    how = [c for c in changes if c["path"].startswith(_RUN_ONLY)]
    changes = [c for c in changes if not c["path"].startswith(_RUN_ONLY)]
    job_changes = structured_diff(a.config.get("job"), b.config.get("job"), "job")
    prov = [
        c
        for c in structured_diff(
            a.config.get("provenance"), b.config.get("provenance"), "provenance"
        )
        if not _TIMING.search(c["path"])
    ] + how
    out: dict[str, Any] = {
        "left": str(a.root),
        "right": str(b.root),
        "identical": not (
            shards["added"]
            or shards["removed"]
            or shards["changed"]
            or splits
            or modalities
            or changes
        ),
        "shards": shards,
        "splits": splits,
        "modalities": modalities,
        "changes": changes,
        "job_changes": job_changes,
        "provenance": prov,
    }
    if verify:
        out["verification"] = {
            "left": inspect_dataset(left, verify=True).verification,
            "right": inspect_dataset(right, verify=True).verification,
        }
        # the manifests may agree while a side's files were edited: not identical then
        out["identical"] = out["identical"] and all(
            v["valid"] for v in out["verification"].values()
        )
    return out
