"""Export a curated dataset as a LeRobot v3 dataset: numeric features and cameras.

Each admitted track (one source and entity, or one span of it) becomes one
LeRobot episode, train episodes first, then test; ``info.json["splits"]``
records them as LeRobot reads splits (``{"train": "0:N", "test": "N:M"}``,
episode index ranges).  Every numeric modality of the curated dataset becomes a
feature (``state`` -> ``observation.state`` by default); each RGB media modality
becomes a camera ``observation.images.<name>`` (:mod:`.lerobot_video`).  Written:

* ``data/chunk-000/file-NNN.parquet``: the frames with ``timestamp``
  (``frame_index / fps``), ``frame_index``, ``episode_index``, ``index`` and
  ``task_index``; a file is closed once it holds ``data_files_size_in_mb``;
* ``meta/info.json``, ``meta/stats.json`` (min, max, mean, std, count and the
  q01, q10, q50, q90, q99 quantiles of every feature),
  ``meta/episodes/chunk-000/file-000.parquet`` (length, index range, data file,
  tasks and the same statistics per episode), ``meta/tasks.parquet``;
* ``meta/kuration_config.json``: the curated dataset's ``config.json``
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
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DestinationError, OutputSpecError
from ..read.loaders import iter_shards, open_dataset
from ..sources._lerobot_meta import load_meta
from .lerobot_video import VIDEO_PATH, write_videos

__all__ = ["QUANTILES", "export_lerobot"]

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
KEYS = {"state": "observation.state"}
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
_EP_URI = re.compile(r"^(?P<root>.+)#episode=(?P<ep>\d+)$")


def _stats(x: np.ndarray) -> dict[str, Any]:
    """min/max/mean/std/count and the quantiles of (N, D) values, as JSON lists."""
    out: dict[str, Any] = {
        "min": x.min(axis=0).tolist(),
        "max": x.max(axis=0).tolist(),
        "mean": x.mean(axis=0).tolist(),
        "std": x.std(axis=0).tolist(),
        "count": [int(x.shape[0])],
    }
    for q in QUANTILES:
        out[f"q{round(q * 100):02d}"] = np.quantile(x, q, axis=0).tolist()
    return out


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
    keys = {m: {**KEYS, **(names or {})}.get(m, m) for m in mods}
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
        info = _write(
            tmp,
            episodes,
            man,
            keys,
            cams,
            config,
            task,
            robot_type,
            int(fps),
            data_files_size_in_mb,
        )
        (tmp / "meta" / "kuration_config.json").write_text(json.dumps(config, indent=2))
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


def _feature(m: Mapping[str, Any], key: str) -> dict[str, Any]:
    shape = [int(np.prod(m["shape"], dtype=np.int64))] if m["shape"] else [1]
    dtype = "float32" if np.dtype(m["dtype"]).kind == "f" else str(np.dtype(m["dtype"]))
    return {"dtype": dtype, "shape": shape, "names": None}


def _write(
    root: Path,
    episodes: list[dict[str, Any]],
    man: Mapping[str, Any],
    keys: Mapping[str, str],
    cams: Mapping[str, str],
    config: Mapping[str, Any],
    task: str,
    robot_type: str | None,
    fps: int,
    size_mb: int,
) -> dict[str, Any]:
    tasks: dict[str, int] = {}
    rows: list[pa.Table] = []
    ep_rows: list[dict[str, Any]] = []
    start = 0
    feats = {keys[m]: _feature(man["modalities"][m], keys[m]) for m in keys}
    for i, ep in enumerate(episodes):
        text = _task_text(config, ep["source_id"], task)
        t_idx = tasks.setdefault(text, len(tasks))
        n = len(next(iter(ep["frames"].values())))
        cols: dict[str, Any] = {}
        ep_stats: dict[str, Any] = {}
        for m, key in keys.items():
            x = ep["frames"][m].reshape(n, -1).astype(feats[key]["dtype"])
            cols[key] = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1])
            for stat, v in _stats(x.astype(np.float64)).items():
                ep_stats[f"stats/{key}/{stat}"] = v
        frame = np.arange(n, dtype=np.int64)
        cols["timestamp"] = pa.array((frame / fps).astype(np.float32))
        cols["frame_index"] = pa.array(frame)
        cols["episode_index"] = pa.array(np.full(n, i, dtype=np.int64))
        cols["index"] = pa.array(start + frame)
        cols["task_index"] = pa.array(np.full(n, t_idx, dtype=np.int64))
        rows.append(pa.table(cols))
        ep_rows.append(
            {
                "episode_index": i,
                "tasks": [text],
                "length": n,
                "dataset_from_index": start,
                "dataset_to_index": start + n,
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
                **ep_stats,
            }
        )
        start += n
    files = _write_data(root, rows, ep_rows, size_mb)
    videos = write_videos(root, episodes, cams, fps, ep_rows) if cams else {}
    pq.write_table(
        pa.Table.from_pylist(ep_rows), _mk(root / "meta/episodes/chunk-000/file-000.parquet")
    )
    pq.write_table(
        pa.table({"task_index": list(tasks.values()), "task": list(tasks)}),
        _mk(root / "meta" / "tasks.parquet"),
    )
    every = pa.concat_tables(rows)
    stats = {
        key: _stats(
            np.asarray(every.column(key).combine_chunks().flatten())
            .reshape(len(every), -1)
            .astype(np.float64)
        )
        for key in feats
    }
    for col in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        stats[col] = _stats(np.asarray(every.column(col)).astype(np.float64)[:, None])
    (root / "meta" / "stats.json").write_text(json.dumps(stats, indent=2))
    n_train = sum(1 for e in episodes if e["split"] == "train")
    splits = {"train": f"0:{n_train}"}
    if n_train < len(episodes):
        splits["test"] = f"{n_train}:{len(episodes)}"
    for col, dtype in (
        ("timestamp", "float32"),
        *((c, "int64") for c in ("frame_index", "episode_index", "index", "task_index")),
    ):
        feats[col] = {"dtype": dtype, "shape": [1], "names": None}
    info = {
        "codebase_version": "v3.0",
        "robot_type": robot_type,
        "total_episodes": len(episodes),
        "total_frames": start,
        "total_tasks": len(tasks),
        "chunks_size": 1000,
        "data_files_size_in_mb": size_mb,
        "video_files_size_in_mb": 200,
        "fps": fps,
        "splits": splits,
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if videos else None,
        "features": {**feats, **videos},
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return {**info, "data_files": files}


def _mk(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write_data(
    root: Path, rows: list[pa.Table], ep_rows: list[dict[str, Any]], size_mb: int
) -> int:
    """Episodes into data files, a new file once one holds ``size_mb``; each episode's row
    records its file.  Returns the number of files."""
    limit = size_mb * 1024 * 1024
    file_index, held = 0, 0
    batch: list[pa.Table] = []

    def flush() -> None:
        path = _mk(root / DATA_PATH.format(chunk_index=0, file_index=file_index))
        pq.write_table(pa.concat_tables(batch), path)

    for table, ep in zip(rows, ep_rows, strict=True):
        if batch and held + table.nbytes > limit:
            flush()
            file_index, held, batch = file_index + 1, 0, []
        batch.append(table)
        held += table.nbytes
        ep["data/chunk_index"], ep["data/file_index"] = 0, file_index
    if batch:
        flush()
    return file_index + 1
