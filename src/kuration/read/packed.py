"""Reading one shard of a packed dataset (``layout="packed"``, :mod:`kuration.output.packed`).

A shard entry names its file (``path``), ``row_group``, ``row_start`` (within
the file) and ``n_rows``.  With ``verify=True`` the file's bytes are first
checked against the size and SHA-256 the manifest's ``files`` list records
(once per process and file state: a rewritten file, whose inode, size or
times change, is hashed again), then the row group is decoded, the shard's
rows are cut out and their canonical bytes
(:func:`~kuration.output.packed.shard_digest`) must hash to the entry's
``size`` and ``sha256`` before any value is returned.  The last decoded row
group is kept, so reading the shards of a row group in order decodes it once.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetIntegrityError
from ..output.packed import file_digest, shard_digest, shard_view
from ..output.packed_build import STRING_COLUMNS

__all__ = ["FILE_KEY", "check_packed_manifest", "read_packed_shard"]

#: the key under which :meth:`kuration.Dataset.entries` hands a packed entry its file record
FILE_KEY = "_packed_file"

_LOCK = threading.Lock()
_VERIFIED: dict[tuple[str, str], tuple[int, ...]] = {}
_GROUPS: OrderedDict[tuple[Any, ...], tuple[int, dict[str, Any]]] = OrderedDict()
_KEEP_GROUPS = 2


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_packed_manifest(manifest: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The ``files`` records of a packed manifest by path, checked against its shard entries.

    Raises
    ------
    DatasetIntegrityError
        A malformed file record, a shard entry that names no listed file, or row
        addresses outside the file.
    """
    files = manifest.get("files")
    if not isinstance(files, list):
        raise DatasetIntegrityError("packed manifest has no 'files' list", path=where)
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        ok = isinstance(f, dict) and isinstance(f.get("path"), str)
        ok = ok and _is_int(f.get("size")) and isinstance(f.get("sha256"), str)
        ok = ok and _is_int(f.get("rows")) and isinstance(f.get("row_groups"), list)
        if not ok or f["path"] in out:
            raise DatasetIntegrityError(f"malformed packed file record {f!r:.120}", path=where)
        out[f["path"]] = f
    for e in manifest["shards"]:
        f = out.get(e["path"])
        keys = ("row_group", "row_start", "n_rows")
        if f is None or not all(_is_int(e.get(k)) and e[k] >= 0 for k in keys):
            raise DatasetIntegrityError(
                f"packed shard entry {e.get('shard', e['path'])!r} lacks a file or row range",
                path=where,
            )
        if e["row_start"] + e["n_rows"] > f["rows"] or e["row_group"] >= len(f["row_groups"]):
            raise DatasetIntegrityError(
                f"packed shard entry {e.get('shard')!r}: rows outside {e['path']!r}", path=where
            )
    return out


def _state(path: Path) -> tuple[int, ...]:
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise DatasetIntegrityError("not a regular file", path=str(path))
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _verify_file(path: Path, rec: Mapping[str, Any]) -> None:
    key = (str(path), str(rec.get("sha256")))
    try:
        state = _state(path)
    except FileNotFoundError:
        raise DatasetIntegrityError("missing packed file", path=str(path)) from None
    with _LOCK:
        if _VERIFIED.get(key) == state:
            return
    size, sha = file_digest(path)
    if size != rec.get("size"):
        raise DatasetIntegrityError(
            f"packed file is {size} bytes, manifest says {rec.get('size')}", path=str(path)
        )
    if sha != rec.get("sha256"):
        raise DatasetIntegrityError(
            "packed file SHA-256 does not match the manifest", path=str(path)
        )
    with _LOCK:
        _VERIFIED[key] = state


def _decode(path: Path, row_group: int) -> tuple[int, dict[str, Any]]:
    """First row (within the file) and columns of one row group: numpy arrays, strings as
    pyarrow arrays; cached per file state."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    key = (str(path), _state(path), row_group)
    with _LOCK:
        hit = _GROUPS.get(key)
        if hit is not None:
            _GROUPS.move_to_end(key)
            return hit
    pf = pq.ParquetFile(str(path))
    meta = pf.metadata
    if row_group >= meta.num_row_groups:
        raise DatasetIntegrityError(f"packed file has no row group {row_group}", path=str(path))
    first = sum(meta.row_group(i).num_rows for i in range(row_group))
    table = pf.read_row_group(row_group)
    cols: dict[str, Any] = {}
    for field in table.schema:
        col = table.column(field.name).combine_chunks()
        if field.name in STRING_COLUMNS:
            cols[field.name] = col
        elif pa.types.is_fixed_size_list(field.type):
            shape = json.loads((field.metadata or {}).get(b"kuration.shape", b"[-1]"))
            flat = col.flatten().to_numpy(zero_copy_only=False)
            cols[field.name] = flat.reshape((len(col), *shape))
        else:
            cols[field.name] = col.to_numpy(zero_copy_only=False)
    out = (first, cols)
    with _LOCK:
        _GROUPS[key] = out
        while len(_GROUPS) > _KEEP_GROUPS:
            _GROUPS.popitem(last=False)
    return out


def read_packed_shard(
    entry: Mapping[str, Any], path: Path, *, verify: bool = True
) -> dict[str, np.ndarray]:
    """One packed shard's arrays, untrimmed: what :func:`~kuration.read.read_shard_arrays`
    returns for a shard file of its own (tensors flat per step; the caller reshapes).

    Raises
    ------
    DatasetIntegrityError
        The file's size or SHA-256 differs from its record (``verify``), the file cannot
        be decoded, the rows lie outside the row group, or the rows' canonical bytes do
        not hash to the entry's ``size``/``sha256`` (``verify``).
    """
    rec = entry.get(FILE_KEY)
    if verify and isinstance(rec, Mapping):
        _verify_file(path, rec)
    try:
        first, cols = _decode(path, int(entry["row_group"]))
    except DatasetIntegrityError:
        raise
    except Exception as exc:
        raise DatasetIntegrityError(f"cannot decode packed file: {exc}", path=str(path)) from None
    start, n = int(entry["row_start"]) - first, int(entry["n_rows"])
    if start < 0 or start + n > len(cols["_time_s"]) or n < 1:
        raise DatasetIntegrityError(
            f"shard {entry.get('shard')!r}: rows {entry['row_start']}+{n} are not in row group "
            f"{entry['row_group']}",
            path=str(path),
        )
    entity = str(cols["_entity"][start].as_py())
    arrays = shard_view(cols, start, n, entity)
    if verify:
        size, sha = shard_digest(arrays)
        if size != entry.get("size") or sha != entry.get("sha256"):
            raise DatasetIntegrityError(
                f"shard {entry.get('shard')!r}: its rows do not hash to the manifest's SHA-256",
                path=str(path),
            )
    return arrays
