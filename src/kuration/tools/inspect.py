"""inspect_dataset: summarize a curated dataset from its metadata (and optionally verify every shard)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import DatasetIntegrityError
from ..read.loaders import Dataset, read_shard_arrays

__all__ = ["InspectReport", "inspect_dataset"]


@dataclass(frozen=True)
class InspectReport:
    """Summary of a dataset: ``splits`` (shards, tracks, sources, seconds), ``modalities``
    (dtype and shape), ``padding``, ``budget``, ``errors`` (skipped sources), ``provenance``,
    ``execution``, ``split_report`` (config.json's, empty without a ``split`` rule) and, with
    ``verify=True``, ``verification``."""

    path: str
    splits: dict[str, Any]
    modalities: dict[str, Any]
    padding: dict[str, Any]
    budget: dict[str, Any]
    errors: dict[str, Any]
    provenance: dict[str, Any]
    execution: dict[str, Any]
    container: str
    shard_length: int
    verification: dict[str, Any] = field(default_factory=dict)
    packed_files: int = 0  # files holding the shards in packed mode (0: one file per shard)
    split_report: dict[str, Any] = field(default_factory=dict)  # config's, when a rule split

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def inspect_dataset(path: str | os.PathLike[str], verify: bool = False) -> InspectReport:
    """Summarize the committed dataset at ``path``.

    Parameters
    ----------
    verify : bool
        Also read every shard, checking size, SHA-256, decodability and array shapes/dtypes.

    Raises
    ------
    DatasetIntegrityError
        If the dataset is not committed or its metadata fails its checksums.
    """
    ds = Dataset(path)
    man, cfg = ds.manifest, ds.config
    entries = ds.entries()
    padding = {
        "padded_shards": sum(1 for e in entries if e.get("padded")),
        "short_shards": sum(1 for e in entries if e["n_steps"] < man["shard_length"]),
        "short_policy": man.get("short_policy"),
    }
    verification: dict[str, Any] = {}
    if verify:
        bad: list[str] = []
        for e in entries:
            try:
                arrs = read_shard_arrays(
                    e, man["container"], root=ds.root, modalities=man["modalities"]
                )
                for name, m in man["modalities"].items():
                    a = arrs[name]
                    if tuple(a.shape[1:]) != tuple(m["shape"]) or str(a.dtype) != m["dtype"]:
                        raise DatasetIntegrityError(
                            f"modality {name!r} has shape {a.shape} dtype {a.dtype}", path=e["path"]
                        )
            except DatasetIntegrityError as exc:
                bad.append(str(exc))
        verification = {"valid": not bad, "checked": len(entries), "failures": bad}
    results = cfg.get("results", {})
    return InspectReport(
        path=str(ds.root),
        splits=man.get("splits", {}),
        modalities=man.get("modalities", {}),
        padding=padding,
        budget=man.get("budget", {}),
        errors=results.get("scoring", {}).get("errors", {}),
        provenance=cfg.get("provenance", {}),
        execution=cfg.get("provenance", {}).get("execution", {}),
        container=man.get("container", ""),
        shard_length=int(man.get("shard_length", 0)),
        verification=verification,
        packed_files=len(man.get("files", ())),
        split_report=results.get("split_report", {}),
    )
