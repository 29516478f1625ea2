"""Writing a LeRobot v3 dataset folder from episodes held in memory.

Shared by the ``lerobot`` output layout (:mod:`kuration.pipeline.run.stage_lerobot`,
``kur run``) and ``kur export-lerobot`` (:mod:`kuration.tools.lerobot_export`).  An
episode is a mapping with ``split`` (``"train"`` or ``"test"``), ``task`` (its task
text) and ``frames`` (modality -> ``(N, *shape)`` array, every frame present).
Episodes are written in the order given; ``info.json["splits"]`` records the train
and test episodes as LeRobot reads splits (``{"train": "0:N", "test": "N:M"}``,
episode index ranges), so the caller passes train episodes first.  Written under
``root``:

* ``data/chunk-000/file-NNN.parquet``: the frames with ``timestamp``
  (``frame_index / fps``), ``frame_index``, ``episode_index``, ``index`` and
  ``task_index``; a file is closed once its rows hold ``file_bytes`` (Arrow bytes);
* ``meta/info.json``, ``meta/stats.json`` (min, max, mean, std, count and the
  q01, q10, q50, q90, q99 quantiles of every feature),
  ``meta/episodes/chunk-000/file-000.parquet`` (length, index range, data file,
  tasks and the same statistics per episode), ``meta/tasks.parquet``;
* ``videos/<key>/chunk-000/file-000.mp4`` per camera (:mod:`.lerobot_video`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .lerobot_video import VIDEO_PATH, write_videos

__all__ = ["DATA_PATH", "KEYS", "QUANTILES", "feature_keys", "write_lerobot"]

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
#: modality -> LeRobot feature key, where LeRobot's convention names one
KEYS = {"state": "observation.state"}
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
_INDEX_COLUMNS = ("frame_index", "episode_index", "index", "task_index")


def feature_keys(
    modalities: Sequence[str], names: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Each modality's LeRobot feature key (``state`` -> ``observation.state``; ``names``
    overrides; other modalities keep their names)."""
    table = {**KEYS, **(names or {})}
    return {m: table.get(m, m) for m in modalities}


def _stats(x: np.ndarray) -> dict[str, Any]:
    """min/max/mean/std/count and the quantiles of (N, D) float64 values, as JSON lists."""
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


def _feature(m: Mapping[str, Any], float32: bool) -> dict[str, Any]:
    """A numeric modality's LeRobot feature: flat ``[width]`` (scalars ``[1]``); floats as
    float32 when ``float32`` (the export), else the modality's own dtype (the layout,
    which reads back exactly)."""
    shape = [int(np.prod(m["shape"], dtype=np.int64))] if m["shape"] else [1]
    dt = np.dtype(m["dtype"])
    dtype = "float32" if float32 and dt.kind == "f" else str(dt)
    return {"dtype": dtype, "shape": shape, "names": None}


def write_lerobot(
    root: Path,
    episodes: Sequence[Mapping[str, Any]],
    modalities: Mapping[str, Mapping[str, Any]],
    keys: Mapping[str, str],
    cams: Mapping[str, str],
    *,
    fps: int,
    robot_type: str | None = None,
    file_bytes: int = 100 * 1024 * 1024,
    float32: bool = True,
    cameras: tuple[Sequence[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write ``episodes`` as a LeRobot v3 dataset under ``root`` (created as needed).

    Parameters
    ----------
    root : Path
    episodes : sequence of mapping
        ``split``, ``task`` and ``frames`` (see the module docstring), train first.
    modalities : mapping
        The curated manifest's modality blocks (``dtype``, ``shape``) by name.
    keys : mapping of str to str
        Numeric modality -> LeRobot feature key (:func:`feature_keys`).
    cams : mapping of str to str
        RGB media modality -> camera key (``observation.images.<name>``).
    fps : int
        Frames per second (the curated rate).
    file_bytes : int
        A data file is closed once its rows' Arrow bytes reach this.
    float32 : bool
        Write float features as float32 (else in the modality's dtype).
    cameras : (rows, features), optional
        Videos written by the caller (the layout, :mod:`.lerobot_cameras`): each
        episode's ``videos/<key>/...`` columns of the episodes table, and the camera
        features of ``info.json``; ``cams`` must then be empty.

    Returns
    -------
    info : dict
        ``info.json`` as written.
    rows : list of dict
        Each episode's row of the episodes table (``dataset_from_index``,
        ``data/file_index``, ...).

    Raises
    ------
    MissingExtraError
        Cameras without PyAV.
    """
    feats = {keys[m]: _feature(modalities[m], float32) for m in keys}
    rows, ep_rows, tasks = _episode_tables(episodes, keys, feats, fps)
    _write_data(root, rows, ep_rows, file_bytes)
    videos = write_videos(root, episodes, cams, fps, ep_rows) if cams else {}
    if cameras is not None:
        videos = _join_cameras(ep_rows, cameras)
    _write_meta_tables(root, ep_rows, tasks)
    _write_stats(root, rows, feats)
    info = {
        "codebase_version": "v3.0",
        "robot_type": robot_type,
        "total_episodes": len(episodes),
        "total_frames": sum(r["length"] for r in ep_rows),
        "total_tasks": len(tasks),
        "chunks_size": 1000,
        "data_files_size_in_mb": max(1, round(file_bytes / 2**20)),
        "video_files_size_in_mb": 200,
        "fps": fps,
        "splits": _splits(episodes),
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if videos else None,
        "features": {**feats, **_index_features(), **videos},
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return info, ep_rows


def _episode_tables(
    episodes: Sequence[Mapping[str, Any]],
    keys: Mapping[str, str],
    feats: Mapping[str, Mapping[str, Any]],
    fps: int,
) -> tuple[list[pa.Table], list[dict[str, Any]], dict[str, int]]:
    """Each episode's frame table and its row of the episodes table, in order, and the
    task index (task text -> index, numbered by first use)."""
    tasks: dict[str, int] = {}
    rows: list[pa.Table] = []
    ep_rows: list[dict[str, Any]] = []
    start = 0
    for i, ep in enumerate(episodes):
        t_idx = tasks.setdefault(str(ep["task"]), len(tasks))
        table, ep_stats = _episode_frames(ep["frames"], keys, feats, fps, i, start, t_idx)
        n = table.num_rows
        rows.append(table)
        ep_rows.append(
            {
                "episode_index": i,
                "tasks": [str(ep["task"])],
                "length": n,
                "dataset_from_index": start,
                "dataset_to_index": start + n,
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
                **ep_stats,
            }
        )
        start += n
    return rows, ep_rows, tasks


def _episode_frames(
    frames: Mapping[str, np.ndarray],
    keys: Mapping[str, str],
    feats: Mapping[str, Mapping[str, Any]],
    fps: int,
    episode: int,
    start: int,
    task: int,
) -> tuple[pa.Table, dict[str, Any]]:
    """One episode's frame table (each feature as a fixed-size list in its feature dtype,
    then the time and index columns; the episode's first frame is row ``start`` of the
    dataset) and its per-feature statistics, keyed ``stats/<key>/<stat>``."""
    n = len(next(iter(frames.values())))
    cols: dict[str, Any] = {}
    ep_stats: dict[str, Any] = {}
    for m, key in keys.items():
        x = frames[m].reshape(n, -1).astype(feats[key]["dtype"])
        cols[key] = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1])
        for stat, v in _stats(x.astype(np.float64)).items():
            ep_stats[f"stats/{key}/{stat}"] = v
    frame = np.arange(n, dtype=np.int64)
    cols["timestamp"] = pa.array((frame / fps).astype(np.float32))
    cols["frame_index"] = pa.array(frame)
    cols["episode_index"] = pa.array(np.full(n, episode, dtype=np.int64))
    cols["index"] = pa.array(start + frame)
    cols["task_index"] = pa.array(np.full(n, task, dtype=np.int64))
    return pa.table(cols), ep_stats


def _join_cameras(
    ep_rows: list[dict[str, Any]],
    cameras: tuple[Sequence[Mapping[str, Any]], Mapping[str, Any]],
) -> dict[str, Any]:
    """Add the caller's video columns to each episode's row; their camera features."""
    for row, extra in zip(ep_rows, cameras[0], strict=True):
        row.update(extra)
    return dict(cameras[1])


def _write_meta_tables(root: Path, ep_rows: list[dict[str, Any]], tasks: Mapping[str, int]) -> None:
    """``meta/episodes/chunk-000/file-000.parquet`` (one row an episode) and
    ``meta/tasks.parquet`` (``task_index``, ``task``)."""
    pq.write_table(
        pa.Table.from_pylist(ep_rows), _mk(root / "meta/episodes/chunk-000/file-000.parquet")
    )
    pq.write_table(
        pa.table({"task_index": list(tasks.values()), "task": list(tasks)}),
        _mk(root / "meta" / "tasks.parquet"),
    )


def _write_stats(root: Path, rows: list[pa.Table], feats: Mapping[str, Any]) -> None:
    """``meta/stats.json``: :func:`_stats` of every feature in ``feats`` and of the time and
    index columns, over all the frames of ``rows``."""
    every = pa.concat_tables(rows)
    stats = {
        key: _stats(
            np.asarray(every.column(key).combine_chunks().flatten())
            .reshape(len(every), -1)
            .astype(np.float64)
        )
        for key in feats
    }
    for col in ("timestamp", *_INDEX_COLUMNS):
        stats[col] = _stats(np.asarray(every.column(col)).astype(np.float64)[:, None])
    (root / "meta" / "stats.json").write_text(json.dumps(stats, indent=2))


def _splits(episodes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``info.json["splits"]``: episode index ranges, train first (``"0:N"``, ``"N:M"``);
    no ``test`` entry when every episode is a train one."""
    n_train = sum(1 for e in episodes if e["split"] == "train")
    splits = {"train": f"0:{n_train}"}
    if n_train < len(episodes):
        splits["test"] = f"{n_train}:{len(episodes)}"
    return splits


def _index_features() -> dict[str, dict[str, Any]]:
    """The features of the time and index columns every frame carries."""
    feats: dict[str, dict[str, Any]] = {
        "timestamp": {"dtype": "float32", "shape": [1], "names": None}
    }
    for col in _INDEX_COLUMNS:
        feats[col] = {"dtype": "int64", "shape": [1], "names": None}
    return feats


def _mk(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write_data(root: Path, rows: list[pa.Table], ep_rows: list[dict[str, Any]], limit: int) -> int:
    """Episodes into data files, a new file once one holds ``limit`` bytes; each episode's
    row records its file.  Returns the number of files."""
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
