"""The writer's values plane: one value file per signal name, one shared times file.

:class:`NameStore` holds the Parquet writer or Zarr array of one signal name
while a version is staged; :class:`TimesStore` is the version's single
``values/times.parquet`` of explicit timestamps, content-addressed: a time
axis identical to one already stored (the six ADS-B signals of one flight, the
same axis in every signal of a record) is stored once and every catalog row
using it points at the same rows. The helpers at the bottom turn user values
into the Arrow or NumPy form stored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from timenet._arrays import check_integral
from timenet.errors import SchemaError
from timenet.specs import SignalSpec

TIMES_FILE = "values/times.parquet"


def _slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")
    return s[:40] or "signal"


@dataclass
class NameStore:
    """Value file of one signal name while writing (internal)."""

    name: str
    stem: str
    dtype: str
    shape: tuple[int, ...]
    unit: str
    storage: str
    rows: int = 0
    count: int = 0
    rates: set[float] = field(default_factory=set)
    irregular: bool = False
    writer: Any = None
    array: Any = None
    linked: bool = False

    @property
    def file(self) -> str:
        ext = "parquet" if self.storage == "parquet" else "zarr"
        return f"values/{self.stem}.{ext}"

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def open_store(
    staging: Path, index: int, name: str, spec: SignalSpec, kind: str, compression: str
) -> NameStore:
    """A new value file for signal ``name`` (the ``index``-th name of the version).

    Both kinds carry the signal's name and unit: Parquet as metadata of the
    ``values`` field, Zarr as array attributes.
    """
    store = NameStore(name, f"{index:04d}-{_slug(name)}", spec.dtype, spec.shape, spec.unit, kind)
    path = staging / store.file
    attrs: dict[str, Any] = {"name": name, "unit": spec.unit}
    if kind == "parquet":
        store.writer = pq.ParquetWriter(
            path,
            pa.schema([pa.field("values", spec.arrow_type, nullable=True, metadata=attrs)]),
            compression=compression,
            use_dictionary=False,
        )
    else:
        import zarr

        step = int(np.prod(spec.shape, dtype=np.int64)) * spec.numpy_dtype.itemsize
        chunk = max(1, (1 << 20) // max(step, 1))
        store.array = zarr.create_array(
            store=str(path),
            shape=(0, *spec.shape),
            chunks=(chunk, *spec.shape),
            dtype=spec.numpy_dtype,
            fill_value=None,
            attributes=attrs,
        )
    return store


class TimesStore:
    """``values/times.parquet``: every distinct explicit time axis of a version, once.

    The file has one int64 column ``time_ns``; each distinct axis starts its
    own row group. :meth:`add` returns the row offset of an axis, reusing the
    rows of an identical axis written before (identity = SHA-256 of the int64
    bytes), so the file and the catalog stay deterministic.
    """

    def __init__(self, staging: Path, compression: str, row_group_rows: int) -> None:
        self._path = staging / TIMES_FILE
        self._compression = compression
        self._row_group_rows = row_group_rows
        self._writer: Any = None
        self._offsets: dict[bytes, int] = {}
        self.rows = 0

    def add(self, times: np.ndarray) -> int:
        """Row offset of ``times`` (shape (T,), int64 ns) in the shared file."""
        ts = np.ascontiguousarray(times, dtype=np.int64)
        key = hashlib.sha256(ts.tobytes()).digest() + len(ts).to_bytes(8, "little")
        offset = self._offsets.get(key)
        if offset is not None:
            return offset
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self._path,
                pa.schema([pa.field("time_ns", pa.int64(), metadata={"unit": "ns"})]),
                compression=self._compression,
            )
        offset = self._offsets[key] = self.rows
        if len(ts):
            self._writer.write_table(
                pa.table({"time_ns": pa.array(ts, type=pa.int64())}),
                row_group_size=self._row_group_rows,
            )
        self.rows += len(ts)
        return offset

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def to_arrow_values(values: Any, spec: SignalSpec, name: str, record: str) -> pa.Array:
    """``values`` as an Arrow array of ``spec.arrow_type`` (nulls from a mask kept).

    Raises
    ------
    SchemaError
        If the values have another type or cannot be converted.
    """
    want = spec.arrow_type
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if values.type != want:
            raise SchemaError(
                f"values have Arrow type {values.type}, spec declares {spec.dtype}",
                signal=name,
                record=record,
            )
        return values
    if isinstance(values, np.ma.MaskedArray):
        data = np.ma.getdata(values)
        mask = np.ma.getmaskarray(values)
        check_np(data, spec, name, record)
        return pa.array(data, type=want, mask=mask)
    if isinstance(values, np.ndarray):
        check_np(values, spec, name, record)
        return pa.array(values, type=want)
    if isinstance(values, Sequence) and not isinstance(values, str | bytes):
        try:
            if pa.types.is_integer(want):
                check_integral(list(values), spec.dtype, name, record)
            return pa.array(list(values), type=want)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise SchemaError(
                f"cannot convert values to {spec.dtype}: {exc}", signal=name, record=record
            ) from exc
    raise SchemaError(
        f"values must be a NumPy array, Arrow array or sequence, got {type(values).__name__}",
        signal=name,
        record=record,
    )


def check_np(values: np.ndarray, spec: SignalSpec, name: str, record: str) -> None:
    """Refuse an array whose dtype or shape differs from ``spec`` (SchemaError)."""
    if values.dtype != spec.numpy_dtype:
        raise SchemaError(
            f"values have dtype {values.dtype}, spec declares {spec.dtype}",
            signal=name,
            record=record,
        )
    if values.ndim != 1 + len(spec.shape) or tuple(values.shape[1:]) != spec.shape:
        raise SchemaError(
            f"values have shape {values.shape}, spec declares (T, {', '.join(map(str, spec.shape))})"
            if spec.shape
            else f"values have shape {values.shape}, spec declares a scalar signal (T,)",
            signal=name,
            record=record,
        )


def to_numpy_values(values: Any, spec: SignalSpec, name: str, record: str) -> np.ndarray:
    """``values`` as a contiguous NumPy array for Zarr (no nulls allowed; SchemaError)."""
    if isinstance(values, np.ma.MaskedArray) and np.ma.getmaskarray(values).any():
        raise SchemaError("Zarr-stored signals cannot hold nulls", signal=name, record=record)
    if isinstance(values, pa.Array | pa.ChunkedArray):
        raise SchemaError(
            "multidimensional values must be a NumPy array", signal=name, record=record
        )
    arr = np.ma.getdata(values) if isinstance(values, np.ma.MaskedArray) else values
    if not isinstance(arr, np.ndarray):
        raise SchemaError(
            f"values must be a NumPy array, got {type(values).__name__}", signal=name, record=record
        )
    check_np(arr, spec, name, record)
    return np.ascontiguousarray(arr)
