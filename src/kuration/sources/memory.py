"""Sources held in memory: DataFrames, Arrow tables and record batches, lists of rows.

A pipeline reads its sources by URI, possibly in other processes, and
identifies each by a content fingerprint (resume, provenance).  An in-memory
source is therefore written once as an Arrow IPC stream into the kuration
cache, under a folder named by the SHA-256 of those bytes, and read from
there by the timeseries adapter (format ``arrows``).  Its fingerprint is the
SHA-256 of the IPC stream bytes; its source id is the name it was given
(``{"name": frame}``) or ``memory-<first 12 hex digits>``.

Accepted objects: a pandas or polars DataFrame, a ``pyarrow.Table``, a
``pyarrow.RecordBatch`` or a list of them (one source), a list of row dicts
(one source).  A list of several DataFrames or tables is several sources.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import SourceError

__all__ = ["ipc_bytes", "is_memory_source", "spill_sources", "to_arrow"]

# dots are allowed so a frame can carry a file's stem (``run.2024.01``); no '/', no
# leading dot and no ".." keep the name one plain file name under its cache folder
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _is_rows(obj: Any) -> bool:
    return isinstance(obj, list) and bool(obj) and all(isinstance(r, Mapping) for r in obj)


def _is_batches(obj: Any) -> bool:
    return isinstance(obj, list) and bool(obj) and all(isinstance(b, pa.RecordBatch) for b in obj)


def is_memory_source(obj: Any) -> bool:
    """Whether ``obj`` is one in-memory source (see the module docstring)."""
    if isinstance(obj, pa.Table | pa.RecordBatch) or _is_rows(obj) or _is_batches(obj):
        return True
    mod = type(obj).__module__
    return type(obj).__name__ == "DataFrame" and mod.split(".")[0] in ("pandas", "polars")


def to_arrow(obj: Any) -> pa.Table:
    """One in-memory source as an Arrow table (a pandas index is not a column).

    Raises
    ------
    SourceError
        An object that is not an in-memory source, or rows Arrow cannot type.
    """
    try:
        if isinstance(obj, pa.Table):
            return obj
        if isinstance(obj, pa.RecordBatch):
            return pa.Table.from_batches([obj])
        if _is_batches(obj):
            return pa.Table.from_batches(obj)
        if _is_rows(obj):
            return pa.Table.from_pylist(obj)
        if type(obj).__module__.split(".")[0] == "polars":
            return obj.to_arrow()
        if type(obj).__module__.split(".")[0] == "pandas":
            return pa.Table.from_pandas(obj, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise SourceError(
            f"cannot turn it into an Arrow table: {exc}", source="in-memory source"
        ) from exc
    raise SourceError(f"not an in-memory source: {type(obj).__name__}", source="sources")


def ipc_bytes(table: pa.Table) -> bytes:
    """The table as Arrow IPC stream bytes (what the fingerprint hashes)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _spill(obj: Any, name: str | None, root: Path) -> str:
    data = ipc_bytes(to_arrow(obj))
    digest = hashlib.sha256(data).hexdigest()
    name = name or f"memory-{digest[:12]}"
    if not _NAME.match(name) or ".." in name:
        raise SourceError(
            "an in-memory source name uses letters, digits, '_', '-' and '.', starts with a "
            "letter or digit and holds no '..' (it is the source id)",
            source=name,
        )
    path = root / digest / f"{name}.arrows"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return str(path)


def spill_sources(sources: Any, root: str | os.PathLike[str] | None = None) -> list[str] | None:
    """The paths of ``sources`` written as Arrow IPC streams, or None when ``sources``
    holds no in-memory source (paths, globs... are left to the job's resolution).

    Parameters
    ----------
    sources
        One in-memory source, a list of them, or a mapping of name to one.
    root : path, optional
        Where to write; default ``<kuration cache>/memory``.

    Raises
    ------
    SourceError
        A list mixing in-memory sources with paths, or a bad name.
    """
    if root is None:
        from .samples import cache_dir

        root = cache_dir() / "memory"
    base = Path(root)
    if is_memory_source(sources):
        return [_spill(sources, None, base)]
    if (
        isinstance(sources, Mapping)
        and sources
        and all(is_memory_source(v) for v in sources.values())
    ):
        return [_spill(v, str(k), base) for k, v in sources.items()]
    if isinstance(sources, Sequence) and not isinstance(sources, str) and sources:
        mem = [is_memory_source(s) for s in sources]
        if all(mem):
            return [_spill(s, None, base) for s in sources]
        if any(mem):
            raise SourceError(
                "in-memory objects and paths are mixed: give one kind", source="sources"
            )
    return None
