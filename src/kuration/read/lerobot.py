"""Reading one shard of a dataset written as a LeRobot v3 folder (``layout="lerobot"``,
:mod:`kuration.pipeline.run.stage_lerobot`).

A shard entry names its data file (``path``), its first row there
(``row_start``), its real rows (``n_steps``) and its rows with padding
(``n_rows``).  The manifest's ``files`` list records every ``data/``, ``meta/``
and ``videos/`` file's size and SHA-256, and for a data file its row count, rate
(``hz``) and the LeRobot column and dtype of each modality.  With ``verify=True``
the data file's bytes are first checked against their record (as a packed file's,
:mod:`kuration.read.packed`), and the arrays rebuilt from the rows (the modalities
zero-padded to ``n_rows``, ``_present``, ``_time_s``, ``_n_steps``, ``_entity``, as
the ``files`` layout stores a shard) must hash to the entry's ``size``/``sha256``
(:func:`~kuration.output.packed.shard_digest`).  :func:`verify_meta_files` checks
the other files when a dataset is opened.  A camera's frames are decoded from the
episode's video (the entry's ``videos``), with its frame mask ``_present_<m>``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetIntegrityError, KurationError
from ..output.packed import shard_digest
from .packed import FILE_KEY, _state, _verify_file

__all__ = ["check_lerobot_manifest", "read_lerobot_shard", "verify_meta_files"]

_LOCK = threading.Lock()
_TABLES: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_lerobot_manifest(manifest: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The ``files`` records of a LeRobot-layout manifest by path, checked against its
    shard entries.

    Raises
    ------
    DatasetIntegrityError
        A malformed file record, a shard entry that names no data file, or rows outside it.
    """
    files = manifest.get("files")
    if not isinstance(files, list):
        raise DatasetIntegrityError("lerobot manifest has no 'files' list", path=where)
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        ok = isinstance(f, dict) and isinstance(f.get("path"), str)
        ok = ok and _is_int(f.get("size")) and isinstance(f.get("sha256"), str)
        ok = ok and str(f.get("path")).split("/", 1)[0] in ("data", "meta", "videos")
        if ok and f["path"].startswith("data/"):
            ok = _is_int(f.get("rows")) and isinstance(f.get("columns"), dict)
            ok = ok and isinstance(f.get("hz"), float | int)
        if not ok or f["path"] in out:
            raise DatasetIntegrityError(f"malformed lerobot file record {f!r:.120}", path=where)
        out[f["path"]] = f
    for e in manifest["shards"]:
        f = out.get(e["path"])
        keys = ("row_start", "n_rows", "lerobot_episode")
        ok = f is not None and "rows" in f and _is_int(e.get("first_step"))
        if not ok or not all(_is_int(e.get(k)) and e[k] >= 0 for k in keys):
            raise DatasetIntegrityError(
                f"lerobot shard entry {e.get('shard', e['path'])!r} lacks a data file or rows",
                path=where,
            )
        assert f is not None  # ok above
        if e["row_start"] + e["n_steps"] > f["rows"] or e["n_steps"] > e["n_rows"]:
            raise DatasetIntegrityError(
                f"lerobot shard entry {e.get('shard')!r}: rows outside {e['path']!r}", path=where
            )
    return out


def verify_meta_files(root: Path, files: Mapping[str, Mapping[str, Any]]) -> None:
    """Check every listed file that is not a data file (``meta/``, ``videos/``) against its
    size and SHA-256.

    Raises
    ------
    DatasetIntegrityError
        A file is missing, not a regular file, or its bytes differ from the record.
    """
    for rel, rec in files.items():
        if not rel.startswith("data/"):
            _verify_file(root.joinpath(*rel.split("/")), rec)


def _table(path: Path, keys: list[str]) -> Any:
    """A data file's columns ``keys``; the last two files read are kept, so reading the
    shards of a file in order decodes it once."""
    import pyarrow.parquet as pq

    key = (str(path), _state(path), tuple(keys))
    with _LOCK:
        hit = _TABLES.get(key)
        if hit is not None:
            _TABLES.move_to_end(key)
            return hit
    table = pq.read_table(str(path), columns=keys)
    with _LOCK:
        _TABLES[key] = table
        while len(_TABLES) > 2:
            _TABLES.popitem(last=False)
    return table


def _rows(path: Path, rec: Mapping[str, Any], start: int, n: int) -> dict[str, np.ndarray]:
    """Rows ``[start, start + n)`` of each modality's column, ``(n, *shape)`` in its dtype."""
    cols = rec["columns"]
    table = _table(path, [c["key"] for c in cols.values()]).slice(start, n)
    out = {}
    for m, c in cols.items():
        flat = table.column(c["key"]).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        out[m] = flat.reshape((len(table), *c["shape"])).astype(np.dtype(c["dtype"]), copy=False)
    return out


def _camera_arrays(
    entry: Mapping[str, Any], path: Path, n: int, rows: int
) -> dict[str, np.ndarray]:
    """Each camera's frames of the shard, decoded from its episode's video (``videos``:
    modality -> file, first frame, ``[H, W]``), zero-padded to ``rows``, and its frame mask."""
    from ..output.lerobot_cameras import read_frames
    from ..output.media import media_mask_name

    videos = entry.get("videos") or {}
    if not isinstance(videos, Mapping):
        raise DatasetIntegrityError("malformed 'videos' of a lerobot shard entry", path=str(path))
    root = path.parents[2]  # data/chunk-NNN/file-NNN.parquet
    out: dict[str, np.ndarray] = {}
    for m, v in videos.items():
        rel, first, size = v.get("path"), v.get("frame"), v.get("shape")
        ok = isinstance(rel, str) and rel.startswith("videos/") and ".." not in rel.split("/")
        if not (ok and _is_int(first) and isinstance(size, list) and len(size) == 2):
            raise DatasetIntegrityError(f"malformed video record of {m!r}", path=str(path))
        try:
            frames = read_frames(root.joinpath(*rel.split("/")), first, n, (size[0], size[1]))
        except KurationError as exc:
            raise DatasetIntegrityError(
                f"cannot decode the frames of {m!r}: {exc}", path=str(root / rel)
            ) from None
        a = np.zeros((rows, size[0], size[1], 3), dtype=np.uint8)
        a[:n] = frames
        out[m] = a
        out[media_mask_name(m)] = np.arange(rows) < n
    return out


def read_lerobot_shard(
    entry: Mapping[str, Any], path: Path, *, verify: bool = True
) -> dict[str, np.ndarray]:
    """One shard's arrays, untrimmed, rebuilt from its rows of a LeRobot data file (tensors
    flat per step; the caller reshapes).

    Raises
    ------
    DatasetIntegrityError
        The file's size or SHA-256 differs from its record (``verify``), it cannot be
        decoded, or the rebuilt arrays do not hash to the entry's ``size``/``sha256``
        (``verify``).
    """
    rec = entry.get(FILE_KEY)
    if not isinstance(rec, Mapping):
        raise DatasetIntegrityError("a lerobot shard entry without its file record", path=str(path))
    if verify:
        _verify_file(path, rec)
    start, n, rows = int(entry["row_start"]), int(entry["n_steps"]), int(entry["n_rows"])
    try:
        real = _rows(path, rec, start, n)
    except Exception as exc:
        raise DatasetIntegrityError(
            f"cannot decode lerobot data file: {exc}", path=str(path)
        ) from None
    arrays: dict[str, np.ndarray] = {}
    for m, a in real.items():
        if len(a) != n:
            raise DatasetIntegrityError(
                f"shard {entry.get('shard')!r}: rows {start}+{n} are not in the file",
                path=str(path),
            )
        out = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
        out[:n] = a
        arrays[m] = out
    arrays["_present"] = np.arange(rows) < n
    arrays.update(_camera_arrays(entry, path, n, rows))
    time_s = np.arange(entry["first_step"], entry["first_step"] + rows, dtype=np.int64) / float(
        rec["hz"]
    )
    time_s[n:] = np.nan
    arrays["_time_s"] = time_s
    arrays["_n_steps"] = np.array(n, dtype=np.int64)
    arrays["_entity"] = np.array(str(entry["entity_id"]))
    if verify:
        size, sha = shard_digest(arrays)
        if size != entry.get("size") or sha != entry.get("sha256"):
            raise DatasetIntegrityError(
                f"shard {entry.get('shard')!r}: its rows do not hash to the manifest's SHA-256",
                path=str(path),
            )
    return arrays
