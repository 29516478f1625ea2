"""Small parsing helpers shared by the built-in connectors; each error names the file."""

from __future__ import annotations

import csv
import gzip
import io
import itertools
from typing import Any

import numpy as np

from timenet._jsonio import loads_strict
from timenet._timebase import NS_MAX
from timenet.build.errors import RawInputError
from timenet.errors import DocumentError

__all__ = ["csv_table", "gunzip_json", "runs", "times_ns"]

_NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def times_ns(column: Any, where: str, name: str, unit: str | None = None) -> np.ndarray:
    """A timestamp column (or integers in ``unit``) as int64 nanoseconds since the epoch.

    Parameters
    ----------
    column : pyarrow Array or ChunkedArray
        ``timestamp[s|ms|us|ns]`` (naive values are UTC), or integers in ``unit``.
    where : str
        The file, for the error.
    name : str
        The column name, for the error.

    Returns
    -------
    ndarray, shape (N,), int64, nanoseconds

    Raises
    ------
    RawInputError
        For a value that does not fit int64 nanoseconds (1677-09-21..2262-04-11
        UTC), naming the column and row.
    """
    import pyarrow as pa

    typ = column.type
    unit = typ.unit if pa.types.is_timestamp(typ) else unit
    if unit not in _NS_PER or not (pa.types.is_timestamp(typ) or pa.types.is_integer(typ)):
        raise RawInputError(where, f"column {name!r} of type {typ} is not a time column")
    raw = np.asarray(column.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    limit = NS_MAX // _NS_PER[unit]
    bad = np.flatnonzero((raw > limit) | (raw < -limit))
    if bad.size:
        r = int(bad[0])
        raise RawInputError(
            where,
            f"column {name!r}: time {raw[r]} {unit} is outside the int64-nanosecond range "
            "1677-09-21..2262-04-11 UTC",
            row=r,
        )
    return raw * _NS_PER[unit]


def gunzip_json(data: bytes, where: str) -> Any:
    """Decode gzip'd JSON.

    Raises
    ------
    RawInputError
        On a truncated or corrupt gzip stream or invalid JSON.
    """
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise RawInputError(where, f"not a complete gzip stream: {exc}") from None
    try:
        return loads_strict(raw, what=where, allow_nan=True)
    except DocumentError as exc:
        raise RawInputError(where, f"invalid JSON: {exc.reason}") from None


def csv_table(data: bytes, where: str, column_types: dict[str, Any] | None = None) -> Any:
    """Parse CSV bytes into an Arrow table after checking the header.

    Raises
    ------
    RawInputError
        On an empty file, duplicated or empty column names, or a parse error.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    first = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    header = next(csv.reader(io.StringIO(first)), [])
    if not header:
        raise RawInputError(where, "empty file (no header line)")
    seen: set[str] = set()
    for name in header:
        if not name.strip():
            raise RawInputError(where, f"empty column name in header {header}")
        if name in seen:
            raise RawInputError(where, f"duplicated column name {name!r} in header")
        seen.add(name)
    if column_types:
        missing = [c for c in column_types if c not in seen]
        if missing:
            raise RawInputError(where, f"missing columns {missing} (header has {header})")
    try:
        return pacsv.read_csv(
            pa.BufferReader(data),
            convert_options=pacsv.ConvertOptions(column_types=column_types or {}),
        )
    except (pa.ArrowInvalid, pa.ArrowException) as exc:
        raise RawInputError(where, f"cannot parse CSV: {exc}") from None


def runs(labels: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` index ranges of runs of equal consecutive values."""
    n = len(labels)
    if n == 0:
        return []
    cut = np.flatnonzero(labels[1:] != labels[:-1]) + 1
    bounds = [0, *cut.tolist(), n]
    return list(itertools.pairwise(bounds))
