"""The private array-handle interface shared by Parquet, Zarr and in-memory values.

A *source* holds the values of every instance of one signal name, laid end to
end along the step axis; ``read(lo, hi)`` returns global rows ``[lo, hi)``
without touching the rest. An :class:`ArrayHandle` is one signal instance: a
source plus ``(offset, length)``. Scalar sources yield Arrow arrays (nulls
kept), multidimensional ones NumPy arrays of shape ``(n, *shape)``.
"""

from __future__ import annotations

import bisect
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from timenet.errors import HasNullsError

Values: TypeAlias = "pa.Array | np.ndarray"


class Source(ABC):
    """Values of one signal name, addressable by global row."""

    @abstractmethod
    def read(self, lo: int, hi: int) -> Values:
        """Rows ``[lo, hi)`` as a ``pa.Array`` (scalar) or ``ndarray`` (multidimensional)."""


_FORKS = [0]  # bumped in a forked child: readers opened before the fork are reopened


def _forked() -> None:
    _FORKS[0] += 1


os.register_at_fork(after_in_child=_forked)


class ParquetSource(Source):
    """A Parquet file with one ``values`` (or ``time_ns``) column.

    ``locate()`` returns the local path (verifying it first); it is called and
    the file opened on first read, and re-opened after a fork so worker
    processes never share a reader object with their parent.
    """

    def __init__(self, locate: Callable[[], Path]) -> None:
        self.locate = locate
        self._pid = -1
        self._reader: Any = None
        self._starts: list[int] = [0]  # first global row of each row group, then the total
        self._type: pa.DataType = pa.null()

    def __getstate__(self) -> dict[str, Any]:
        return {"locate": self.locate}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["locate"])  # type: ignore[misc]

    def _open(self) -> Any:
        # a fork counter instead of os.getpid(): a system call on every single-record read
        if self._pid != _FORKS[0]:
            # pre_buffer=False: a single-record read fetches one small row
            # group; Arrow's coalescing read-ahead only adds latency there.
            pf = pq.ParquetFile(self.locate(), memory_map=True, pre_buffer=False)
            md = pf.metadata
            rows = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
            self._starts = [0, *np.cumsum(rows, dtype=np.int64).tolist()]
            self._type = pf.schema_arrow.field(0).type
            # ParquetFile.reader reads row groups by column index without
            # re-resolving names: the fast path for single-record reads.
            self._reader = pf.reader
            self._pid = _FORKS[0]
        return self._reader

    def read(self, lo: int, hi: int) -> pa.Array:
        reader = self._open()
        if hi <= lo:
            return pa.array([], type=self._type)
        starts = self._starts
        # a Python list and bisect: one read is a few microseconds, numpy's call costs more
        first = bisect.bisect_right(starts, lo) - 1
        last = bisect.bisect_left(starts, hi)
        if last - first == 1:
            table = reader.read_row_group(first, column_indices=[0], use_threads=False)
        else:
            table = reader.read_row_groups(
                list(range(first, last)), column_indices=[0], use_threads=False
            )
        if last - first == 1 and lo == starts[first] and hi == starts[last]:
            return table.column(0).chunk(0)  # one whole row group: a record, usually
        col = table.column(0).slice(lo - starts[first], hi - lo)
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()

    def read_all(self) -> pa.ChunkedArray:
        """Every row of the file."""
        return pq.read_table(self.locate(), memory_map=True).column(0)


class ZarrSource(Source):
    """A Zarr v3 array of shape ``(N, *shape)``; reads slice along axis 0."""

    def __init__(self, locate: Callable[[], Path]) -> None:
        self.locate = locate
        self._array: Any = None
        self._pid = -1

    def __getstate__(self) -> dict[str, Any]:
        return {"locate": self.locate}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["locate"])  # type: ignore[misc]

    def _open(self) -> Any:
        if self._pid != os.getpid():
            import zarr

            self._array = zarr.open_array(str(self.locate()), mode="r")
            self._pid = os.getpid()
        return self._array

    def read(self, lo: int, hi: int) -> np.ndarray:
        return np.asarray(self._open()[lo:hi])

    def read_all(self) -> np.ndarray:
        """The whole array."""
        return np.asarray(self._open()[...])


class MemorySource(Source):
    """Values already in memory: a chunked Arrow column or a NumPy array."""

    def __init__(self, values: pa.ChunkedArray | np.ndarray) -> None:
        self.values = values
        if isinstance(values, pa.ChunkedArray):
            lengths = [len(c) for c in values.chunks]
            self._starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])

    def read(self, lo: int, hi: int) -> Values:
        vals = self.values
        if isinstance(vals, np.ndarray):
            return vals[lo:hi]
        i = int(np.searchsorted(self._starts, lo, side="right")) - 1
        if 0 <= i < vals.num_chunks and hi <= self._starts[i + 1]:
            return vals.chunk(i).slice(lo - int(self._starts[i]), hi - lo)
        col = vals.slice(lo, hi - lo)
        if col.num_chunks == 0:
            return pa.array([], type=vals.type)
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def check_integral(values: list[Any], dtype: str, signal: str, record: str) -> None:
    """Refuse a float in ``values`` that is not an integer, before an Arrow cast to the
    integer ``dtype`` would truncate it (``2.7`` to ``2``; Arrow refuses out-of-range values
    itself).  NaN and infinities are not integral.

    Raises
    ------
    SchemaError
        Naming the signal, record and step.
    """
    from timenet.errors import SchemaError

    for i, v in enumerate(values):
        if isinstance(v, float | np.floating) and not float(v).is_integer():
            raise SchemaError(
                f"step {i}: {v!r} is not an integer ({dtype})", signal=signal, record=record
            )


def to_numpy(values: Values) -> np.ndarray:
    """NumPy view/copy of ``values``; raises HasNullsError if Arrow nulls are present."""
    if isinstance(values, np.ndarray):
        return values
    if values.null_count:
        raise HasNullsError(values.null_count)
    return values.to_numpy(zero_copy_only=False)


def to_arrow(values: Values, arrow_type: pa.DataType) -> pa.Array:
    """Arrow form of ``values``; ``(n, *shape)`` arrays become nested fixed-size lists."""
    if isinstance(values, pa.Array):
        return values
    arr = np.ascontiguousarray(values)
    out: pa.Array = pa.array(arr.reshape(-1), type=arrow_type)
    for size in reversed(arr.shape[1:]):
        out = pa.FixedSizeListArray.from_arrays(out, size)
    return out


class ArrayHandle:
    """One signal instance: rows ``[offset, offset + length)`` of a source."""

    __slots__ = ("length", "offset", "source")

    def __init__(self, source: Source, offset: int, length: int) -> None:
        self.source = source
        self.offset = offset
        self.length = length

    def read(self, start: int, stop: int) -> Values:
        """Steps ``[start, stop)`` of this instance (caller validated the range)."""
        return self.source.read(self.offset + start, self.offset + stop)


def mask_invalid(arr: pa.Array, spec: Any) -> pa.Array:
    """``arr`` with the steps holding a declared sentinel or out-of-range value made null."""
    import pyarrow.compute as pc

    flat = arr
    while pa.types.is_fixed_size_list(flat.type):
        flat = flat.flatten()
    values = np.asarray(pc.fill_null(flat, 0).to_numpy(zero_copy_only=False))
    bad = spec.invalid_steps(values.reshape(len(arr), -1))
    bad &= np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if not bad.any():
        return arr
    out: pa.Array = pc.if_else(pa.array(bad), pa.scalar(None, arr.type), arr)
    return out


def decode_steps(raw: Values, spec: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """NumPy data of ``raw`` (rows read from a source) and which steps hold a value: a
    stored null or a value ``spec`` (a ``SignalSpec``) declares missing or out of range is
    invalid, its data 0 (``False`` for bool) for Arrow values; None when every step is valid."""
    valid = None
    if isinstance(raw, np.ndarray):
        if spec.has_validity:
            arr = mask_invalid(to_arrow(raw, spec.arrow_type), spec)
            if arr.null_count:
                valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return raw, valid
    arr = mask_invalid(raw, spec) if spec.has_validity else raw
    if arr.null_count:
        import pyarrow.compute as pc

        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        zero = pa.scalar(False) if pa.types.is_boolean(arr.type) else pa.scalar(0, arr.type)
        arr = pc.fill_null(arr, zero)
    return arr.to_numpy(zero_copy_only=False), valid
