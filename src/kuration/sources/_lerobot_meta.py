"""LeRobot v3 dataset metadata: load ``meta/``, check what LeRobot trusts, hash shared files.

Layout read (LeRobot ``codebase_version`` ``v3.x``)::

    meta/info.json                       fps, features, totals, path templates
    meta/stats.json                      dataset statistics per feature
    meta/tasks.parquet                   task_index -> task text
    meta/episodes/chunk-*/file-*.parquet one row per episode: length, index range,
                                         data file, video windows, per-episode stats
    data/chunk-*/file-*.parquet          frames of many episodes
    videos/<key>/chunk-*/file-*.mp4      frames of many episodes, one camera

The dataset-level checks (:func:`check_dataset`) compare the totals in
``info.json`` with the episodes table and the data files, and ``stats.json``
with the data; each mismatch is an error naming what disagrees, or, when the
user opted into that repair, a :class:`~kuration.errors.DataRepairWarning`
and a count.  kuration never uses the stored statistics: "repairing" them
means ignoring them (an output recomputes its own).
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.jsonio import sha256_file
from ..errors import DataRepairWarning, SourceError

__all__ = [
    "REPAIRS",
    "Episode",
    "LeRobotMeta",
    "check_dataset",
    "feature_matrix",
    "file_digest",
    "load_meta",
    "stats_mismatch",
]

#: what a user may opt into repairing (``repair`` adapter option)
REPAIRS = ("index_ranges", "timestamps", "totals", "stats", "video_windows")
#: share of the mean of squares within which a stored variance matches the data's
VAR_REL = 1e-4
#: LeRobot's own default ``tolerance_s`` for timestamps against ``1 / fps``, seconds
TOLERANCE_S = 1e-4


@dataclass(frozen=True)
class Episode:
    """One row of the episodes table.

    Attributes
    ----------
    index : int
        ``episode_index``.
    length : int
        Frames the metadata claims.
    from_index, to_index : int
        ``[dataset_from_index, dataset_to_index)`` of the global ``index`` column.
    data_file : str
        Path of its data file relative to the dataset root.
    tasks : tuple of str
    videos : mapping of str to (str, float, float)
        Camera key -> (video file relative path, from_timestamp, to_timestamp) seconds.
    stats : mapping of str to mapping of str to ndarray
        Per-episode statistics: feature -> stat (min/max/mean/std/count...) -> values.
    meta_file : str
        The episodes table file holding this row (relative path).
    """

    index: int
    length: int
    from_index: int
    to_index: int
    data_file: str
    tasks: tuple[str, ...]
    videos: Mapping[str, tuple[str, float, float]] = field(default_factory=dict)
    stats: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    meta_file: str = ""


@dataclass(frozen=True)
class LeRobotMeta:
    """A v3 dataset's metadata (see the module docstring).

    Attributes
    ----------
    root : str
    info : dict
        ``meta/info.json``.
    fps : int
    features : dict
        ``info["features"]``.
    episodes : mapping of int to Episode
    tasks : mapping of int to str
        ``task_index`` -> task text.
    stats : dict
        ``meta/stats.json`` (empty when absent).
    """

    root: str
    info: Mapping[str, Any]
    fps: int
    features: Mapping[str, Any]
    episodes: Mapping[int, Episode]
    tasks: Mapping[int, str]
    stats: Mapping[str, Any]

    def data_files(self) -> list[str]:
        """Every data file on disk, relative paths, sorted."""
        base = os.path.join(self.root, "data")
        out = []
        for here, _, files in os.walk(base):
            out += [os.path.relpath(os.path.join(here, f), self.root) for f in files]
        return sorted(p for p in out if p.endswith(".parquet"))

    def camera_keys(self) -> list[str]:
        return [k for k, f in self.features.items() if f.get("dtype") in ("video", "image")]

    def vector_keys(self) -> list[str]:
        """Numeric features other than LeRobot's bookkeeping columns."""
        skip = {"timestamp", "frame_index", "episode_index", "index", "task_index"}
        return [
            k
            for k, f in self.features.items()
            if k not in skip and f.get("dtype") not in ("video", "image", "string")
        ]


def is_dataset(path: str) -> bool:
    """Whether ``path`` is a folder holding ``meta/info.json``."""
    return os.path.isfile(os.path.join(str(path), "meta", "info.json"))


def file_digest(path: str) -> str:
    """SHA-256 of a file, computed once per process per (path, size, mtime).

    Raises
    ------
    SourceError
        The file cannot be read.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}", source=path) from exc
    return _digest(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def load_meta(root: str) -> LeRobotMeta:
    """The dataset's metadata, cached per process while ``meta/`` is unchanged.

    Raises
    ------
    SourceError
        No ``meta/info.json``, a codebase version other than v3, missing keys,
        an unreadable episodes table.
    """
    root = os.path.abspath(str(root))
    stamps = tuple(
        (p, os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in sorted(_meta_files(root))
    )
    return _load_meta(root, stamps)


def _meta_files(root: str) -> Iterable[str]:
    meta = os.path.join(root, "meta")
    if not os.path.isfile(os.path.join(meta, "info.json")):
        raise SourceError("not a LeRobot dataset: no meta/info.json", source=root)
    for here, _, files in os.walk(meta):
        yield from (os.path.join(here, f) for f in files)


@functools.lru_cache(maxsize=8)
def _load_meta(root: str, stamps: tuple[Any, ...]) -> LeRobotMeta:
    with open(os.path.join(root, "meta", "info.json"), encoding="utf-8") as fh:
        info = json.load(fh)
    version = str(info.get("codebase_version", ""))
    if not version.startswith("v3."):
        raise SourceError(
            f"codebase_version {version!r}: only LeRobot v3 datasets are read "
            "(convert v2.1 with lerobot's converter first)",
            source=root,
        )
    for key in ("fps", "features", "data_path"):
        if key not in info:
            raise SourceError(f"meta/info.json has no {key!r}", source=root)
    fps = info["fps"]
    if isinstance(fps, bool) or not isinstance(fps, int | float) or fps <= 0 or fps != int(fps):
        raise SourceError(
            f"meta/info.json fps must be a positive integer, got {fps!r}", source=root
        )
    stats_path = os.path.join(root, "meta", "stats.json")
    stats: dict[str, Any] = {}
    if os.path.isfile(stats_path):
        with open(stats_path, encoding="utf-8") as fh:
            stats = json.load(fh)
    tasks = _tasks(root)
    episodes = _episodes(root, info, tasks)
    return LeRobotMeta(root, info, int(fps), info["features"], episodes, tasks, stats)


def _tasks(root: str) -> dict[int, str]:
    path = os.path.join(root, "meta", "tasks.parquet")
    if not os.path.isfile(path):
        return {}
    t = pq.read_table(path)
    names = t.column_names
    if "task_index" not in names:
        raise SourceError("meta/tasks.parquet has no task_index column", source=root)
    # LeRobot stores the task text as the pandas index ("task" or "__index_level_0__")
    text = next((c for c in ("task", "__index_level_0__") if c in names), None)
    if text is None:
        raise SourceError("meta/tasks.parquet has no task column", source=root)
    idx = t.column("task_index").to_pylist()
    return {int(i): str(s) for i, s in zip(idx, t.column(text).to_pylist(), strict=True)}


def _episodes(root: str, info: Mapping[str, Any], tasks: Mapping[int, str]) -> dict[int, Episode]:
    base = os.path.join(root, "meta", "episodes")
    files = sorted(
        os.path.join(here, f) for here, _, fs in os.walk(base) for f in fs if f.endswith(".parquet")
    )
    if not files:
        raise SourceError("no meta/episodes/*/*.parquet episodes table", source=root)
    out: dict[int, Episode] = {}
    for path in files:
        rel = os.path.relpath(path, root)
        t = pq.read_table(path)
        need = {"episode_index", "length", "dataset_from_index", "dataset_to_index"}
        missing = sorted(need - set(t.column_names))
        if missing:
            raise SourceError(f"episodes table lacks columns {missing}", source=rel)
        rows = t.to_pylist()
        for r in rows:
            ep = int(r["episode_index"])
            if ep in out:
                raise SourceError(f"episode {ep} is listed twice in the episodes table", source=rel)
            out[ep] = _episode(root, info, r, rel)
    return dict(sorted(out.items()))


def _episode(root: str, info: Mapping[str, Any], r: Mapping[str, Any], rel: str) -> Episode:
    ep = int(r["episode_index"])
    data_file = str(info["data_path"]).format(
        chunk_index=int(r.get("data/chunk_index") or 0),
        file_index=int(r.get("data/file_index") or 0),
        episode_chunk=int(r.get("data/chunk_index") or 0),
        episode_index=ep,
    )
    videos: dict[str, tuple[str, float, float]] = {}
    vpath = info.get("video_path")
    for key, feat in info["features"].items():
        if feat.get("dtype") != "video" or vpath is None:
            continue
        pre = f"videos/{key}/"
        if pre + "from_timestamp" not in r:
            continue
        path = str(vpath).format(
            video_key=key,
            chunk_index=int(r.get(pre + "chunk_index") or 0),
            file_index=int(r.get(pre + "file_index") or 0),
        )
        videos[key] = (path, float(r[pre + "from_timestamp"]), float(r[pre + "to_timestamp"]))
    stats: dict[str, dict[str, np.ndarray]] = {}
    for col, val in r.items():
        if col.startswith("stats/") and val is not None:
            feat, stat = col[len("stats/") :].rsplit("/", 1)
            stats.setdefault(feat, {})[stat] = np.asarray(val, dtype=np.float64)
    return Episode(
        ep,
        int(r["length"]),
        int(r["dataset_from_index"]),
        int(r["dataset_to_index"]),
        data_file,
        tuple(str(s) for s in (r.get("tasks") or ())),
        videos,
        stats,
        rel,
    )


def feature_matrix(table: pa.Table, key: str, dims: int, src: str) -> np.ndarray:
    """A feature column as float64, shape (N, dims) (list, fixed-size list or scalar).

    Raises
    ------
    SourceError
        A row whose length is not ``dims``.
    """
    col = table.column(key).combine_chunks()
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        lens = np.asarray(pc.list_value_length(col).to_numpy(zero_copy_only=False))
        bad = np.flatnonzero(lens != dims)
        if bad.size:
            raise SourceError(
                f"feature {key!r} row has {lens[bad[0]]} values, info.json says {dims}",
                source=src,
                row=int(bad[0]),
            )
        flat = pc.list_flatten(col)
    elif pa.types.is_fixed_size_list(col.type):
        if col.type.list_size != dims:
            raise SourceError(
                f"feature {key!r} has {col.type.list_size} values, info.json says {dims}",
                source=src,
            )
        flat = col.flatten()
    else:
        flat = col
    vals = np.asarray(pc.fill_null(flat.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False))
    return vals.reshape(len(table), dims)


def stats_mismatch(
    stored: Mapping[str, Any], x: np.ndarray, *, rtol: float = 1e-3, atol: float = 1e-5
) -> str | None:
    """What disagrees between stored statistics and data ``x`` (N, D), or None.

    Compares ``min``, ``max``, ``mean`` (within ``rtol`` of the larger of the value
    and the spread), ``std`` (population, as LeRobot computes it; its square within
    ``VAR_REL`` of the mean of squares) and ``count`` when stored, and checks that stored quantiles
    ``q01 <= q10 <= ... <= q99`` lie within ``[min, max]``.
    """
    if x.size == 0:
        return None
    with np.errstate(all="ignore"):
        ours = {
            "min": np.nanmin(x, axis=0),
            "max": np.nanmax(x, axis=0),
            "mean": np.nanmean(x, axis=0),
            "std": np.nanstd(x, axis=0),
        }
    spread = np.maximum(ours["max"] - ours["min"], 1e-12)
    # LeRobot's writer takes std as sqrt(E[x^2] - E[x]^2) in float32 (lerobot 0.6.1
    # compute_stats), which loses up to ~1e-4 of E[x^2] on offset data (measured on its
    # own output): the variance is compared within that
    var_tol = VAR_REL * np.nanmean(x * x, axis=0)
    for stat, mine in ours.items():
        if stat not in stored:
            continue
        theirs = np.asarray(stored[stat], dtype=np.float64).reshape(-1)
        if theirs.size != mine.size:
            return f"{stat} has {theirs.size} values for {mine.size} dimensions"
        if stat == "std":
            off = np.abs(theirs**2 - mine**2) > atol + var_tol
        else:
            off = np.abs(theirs - mine) > atol + rtol * np.maximum(np.abs(mine), spread)
        if off.any():
            d = int(np.flatnonzero(off)[0])
            return f"{stat}[{d}] is {theirs[d]:.6g}, the data give {mine[d]:.6g}"
    if "count" in stored:
        c = int(np.asarray(stored["count"]).reshape(-1)[0])
        if c != x.shape[0]:
            return f"count is {c}, the data hold {x.shape[0]} frames"
    qs = sorted(k for k in stored if len(k) == 3 and k[0] == "q" and k[1:].isdigit())
    if qs:
        q = np.stack([np.asarray(stored[k], dtype=np.float64).reshape(-1) for k in qs])
        lo = np.asarray(stored.get("min", ours["min"]), dtype=np.float64).reshape(-1)
        hi = np.asarray(stored.get("max", ours["max"]), dtype=np.float64).reshape(-1)
        bad = (np.diff(q, axis=0) < 0).any(axis=0) | (q[0] < lo - atol) | (q[-1] > hi + atol)
        if bad.any():
            return f"quantiles {qs[0]}..{qs[-1]} of dimension {int(np.flatnonzero(bad)[0])} are not ordered within [min, max]"
    return None


def refuse_or_repair(
    problem: str, repair: str, repairs: Iterable[str], source: str, counts: dict[str, int]
) -> None:
    """Raise ``SourceError(problem)`` unless ``repair`` was opted into; then warn and count.

    Raises
    ------
    SourceError
        ``repair`` is not in ``repairs``; the message names the option that repairs it.
    """
    if repair not in set(repairs):
        raise SourceError(
            f"{problem} (adapter option repair: [{repair!r}] accepts it)", source=source
        )
    w = DataRepairWarning(f"{source}: {problem}; repaired ({repair})")
    # the class documents these; typing them there would push errors.py past 800 lines
    w.source, w.repair = source, repair  # type: ignore[attr-defined]
    warnings.warn(w, stacklevel=3)
    key = f"repaired_{repair}"
    counts[key] = counts.get(key, 0) + 1


def check_dataset(meta: LeRobotMeta, repairs: Iterable[str]) -> dict[str, int]:
    """Dataset-level checks: totals in info.json and the global stats.json against the data.

    Returns
    -------
    dict of str to int
        Repairs made (``repaired_totals``, ``repaired_stats``), each counted once per problem.

    Raises
    ------
    SourceError
        A mismatch the user did not opt into repairing, naming the total or the feature.
    """
    counts: dict[str, int] = {}
    root, info = meta.root, meta.info
    eps = meta.episodes
    rows = 0
    for rel in meta.data_files():
        rows += pq.ParquetFile(os.path.join(root, rel)).metadata.num_rows
    claims = {
        "total_episodes": len(eps),
        "total_frames": rows,
        "total_tasks": len(meta.tasks) if meta.tasks else None,
    }
    for key, actual in claims.items():
        if actual is None or key not in info:
            continue
        if int(info[key]) != actual:
            refuse_or_repair(
                f"info.json {key} is {info[key]}, the dataset holds {actual}",
                "totals",
                repairs,
                root,
                counts,
            )
    lengths = sum(e.length for e in eps.values())
    if lengths != rows:
        refuse_or_repair(
            f"the episodes table's lengths sum to {lengths}, the data files hold {rows} frames",
            "index_ranges",
            repairs,
            root,
            counts,
        )
    _check_global_stats(meta, repairs, counts)
    return counts


def _check_global_stats(meta: LeRobotMeta, repairs: Iterable[str], counts: dict[str, int]) -> None:
    keys = [k for k in meta.vector_keys() if k in meta.stats]
    if not keys:
        return
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    for rel in meta.data_files():
        t = pq.read_table(os.path.join(meta.root, rel), columns=keys)
        for k in keys:
            dims = int(np.prod(meta.features[k].get("shape", [1])))
            parts[k].append(feature_matrix(t, k, dims, rel))
    for k in keys:
        problem = stats_mismatch(meta.stats[k], np.concatenate(parts[k]))
        if problem is not None:
            refuse_or_repair(
                f"meta/stats.json {k!r}: {problem}", "stats", repairs, meta.root, counts
            )
