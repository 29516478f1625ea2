"""Export a curated dataset as a LeRobot v3 dataset: numeric features and cameras.

Each admitted track (one source and entity, or one span of it) becomes one
LeRobot episode, train episodes first, then test; ``info.json["splits"]``
records them as LeRobot reads splits (``{"train": "0:N", "test": "N:M"}``,
episode index ranges).  Every numeric modality of the curated dataset becomes a
feature (``state`` -> ``observation.state`` by default); each RGB media modality
becomes a camera ``observation.images.<name>`` (:mod:`kuration.output.lerobot_video`).  Written:

the files of :mod:`kuration.output.lerobot` (which the ``lerobot`` output layout of
``kur run`` writes too; float features here as float32) and
``meta/kuration_config.json``: the curated dataset's ``config.json``
  (budget, selection, provenance).

The task of an episode read from a LeRobot dataset is that dataset's task text
(its source URI names the dataset); otherwise ``task`` (the argument).  The folder
is written beside ``out`` and renamed into place, so a failed export leaves nothing
a reader would take for a dataset.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DestinationError, OutputSpecError
from ..output.lerobot import QUANTILES, feature_keys, write_lerobot
from ..read.loaders import iter_shards, open_dataset
from ..sources._lerobot_meta import load_meta

__all__ = ["QUANTILES", "export_lerobot"]

_EP_URI = re.compile(r"^(?P<root>.+)#episode=(?P<ep>\d+)$")


def _episodes(ds: Any, modalities: Sequence[str]) -> list[dict[str, Any]]:
    """Admitted tracks in episode order: train first, then test; within a split by source,
    entity and span; each track's shards concatenated in order."""
    tracks: dict[tuple[Any, ...], dict[str, Any]] = {}
    for arrays, e in iter_shards(ds, modalities=list(modalities), with_meta=True):
        key = (e["split"] != "train", e["source_id"], e["entity_id"], e["span_index"] or -1)
        t = tracks.setdefault(key, {"split": e["split"], "source_id": e["source_id"], "parts": []})
        t["parts"].append((e["shard_index"], arrays))
    out = []
    for key in sorted(tracks):
        t = tracks[key]
        parts = [a for _, a in sorted(t["parts"], key=lambda p: p[0])]
        frames = {m: np.concatenate([p[m] for p in parts]) for m in modalities}
        if "_present" in parts[0]:
            present = np.concatenate([p["_present"] for p in parts]).astype(bool)
            if not present.all():
                raise OutputSpecError(
                    f"track {key[1]} {key[2]} has {int((~present).sum())} absent steps: a "
                    "LeRobot episode holds every frame, so it cannot be exported"
                )
        for m in modalities:
            mask = [p[f"_present_{m}"] for p in parts if f"_present_{m}" in p]
            if mask and not np.concatenate(mask).all():
                raise OutputSpecError(
                    f"track {key[1]} {key[2]} lacks frames of {m!r}: a LeRobot episode has a "
                    "frame at every step, so it cannot be exported"
                )
        out.append({"split": t["split"], "source_id": t["source_id"], "frames": frames})
    return out


def _task_text(config: Mapping[str, Any], source_id: str, default: str) -> str:
    for s in config.get("pipeline", {}).get("sources", []):
        m = _EP_URI.match(str(s.get("uri", "")))
        if s.get("source_id") == source_id and m:
            meta = load_meta(m.group("root"))
            tasks = meta.episodes[int(m.group("ep"))].tasks
            return tasks[0] if tasks else default
    return default


def export_lerobot(
    dataset: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    names: Mapping[str, str] | None = None,
    task: str = "curated by kuration",
    robot_type: str | None = None,
    data_files_size_in_mb: int = 100,
) -> dict[str, Any]:
    """Write the curated dataset at ``dataset`` as a LeRobot v3 dataset folder ``out``.

    Parameters
    ----------
    dataset : path
        A committed kuration dataset (any container).
    out : path
        The folder to create; it must not exist.
    names : mapping of str to str, optional
        Modality -> LeRobot feature key (default ``state`` -> ``observation.state``;
        other modalities keep their names).
    task : str
        Task text of episodes whose source is not a LeRobot episode.
    robot_type : str, optional
    data_files_size_in_mb : int
        A data file is closed once its rows reach this size.

    Returns
    -------
    dict
        ``info.json`` as written.

    Raises
    ------
    DestinationError
        ``out`` exists.
    OutputSpecError
        A non-integer rate, no numeric modality, a track with absent steps.
    DatasetIntegrityError
        The curated dataset fails verification while it is read.
    """
    out = Path(out)
    if out.exists():
        raise DestinationError("exists: the export writes a new folder", path=str(out))
    ds = open_dataset(dataset)
    man = ds.manifest
    fps = float(man["sample_hz"])
    if fps != int(fps):
        raise OutputSpecError(f"LeRobot needs an integer fps; the dataset is at {fps:g} Hz")
    mods = [
        k
        for k, m in man["modalities"].items()
        if not str(m["source"]).startswith("media:") and np.dtype(m["dtype"]).kind in "fiub"
    ]
    if not mods:
        raise OutputSpecError("the dataset has no numeric modality to export")
    keys = feature_keys(mods, names)
    cams = {
        k: f"observation.images.{k}"
        for k, m in man["modalities"].items()
        if str(m["source"]).startswith("media:") and m["dtype"] == "uint8" and len(m["shape"]) == 3
    }
    config = json.loads((Path(dataset) / "config.json").read_text(encoding="utf-8"))
    episodes = _episodes(ds, [*mods, *cams])
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for ep in episodes:
            ep["task"] = _task_text(config, ep["source_id"], task)
        info, ep_rows = write_lerobot(
            tmp,
            episodes,
            man["modalities"],
            keys,
            cams,
            fps=int(fps),
            robot_type=robot_type,
            file_bytes=data_files_size_in_mb * 1024 * 1024,
        )
        (tmp / "meta" / "kuration_config.json").write_text(json.dumps(config, indent=2))
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {**info, "data_files": 1 + max(r["data/file_index"] for r in ep_rows)}
