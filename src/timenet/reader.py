"""TimeFReader and Signal: lazy, verified access to a committed version.

Opening reads only ``manifest.json`` (and, with verification, stats every
listed file to compare sizes). The DuckDB catalog is attached on first use;
value files are hashed on first read, so a tampered file is refused before any
of its values are returned. :meth:`TimeFReader.load` reads everything into
memory and returns a :class:`LoadedDataset` with the same query API.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, overload

import numpy as np
import pyarrow as pa

from timenet._arrays import (
    ArrayHandle,
    MemorySource,
    ParquetSource,
    Source,
    ZarrSource,
    decode_steps,
    to_arrow,
    to_numpy,
)
from timenet._arrays import mask_invalid as _mask_invalid
from timenet.catalog import Catalog, SignalRow
from timenet.errors import (
    HasNullsError,
    NullValuesError,
    OptionError,
    RecordIndexError,
    RecordNotFoundError,
    SignalNotFoundError,
    StepRangeError,
)
from timenet.models import DatasetCard, DatasetSchema, Manifest
from timenet.records import Annotation, Record, Task
from timenet.registry import LocalRegistry, LocalVersionHandle, Registry, VersionHandle
from timenet.specs import SignalSpec
from timenet.units import convert
from timenet.versions import Ref

__all__ = ["LoadedDataset", "Signal", "TimeFReader"]


@dataclass(frozen=True, eq=False)
class Signal:
    """One signal of one record; values are read only when asked for.

    Attributes
    ----------
    record_id : str
        Owning record.
    name : str
        Signal name.
    spec : SignalSpec
        Dtype, per-step shape, unit and time base.
    length : int
        Number of steps ``T``.
    null_count : int
        Number of null steps stored (always 0 for Zarr-stored signals); steps
        that hold a sentinel or out-of-range value of ``spec`` (``missing_value``,
        ``valid_min``, ``valid_max``) are read as null too but not counted here.
    """

    record_id: str
    name: str
    spec: SignalSpec
    length: int
    null_count: int
    _values: ArrayHandle
    _times: ArrayHandle | None = None

    def __len__(self) -> int:
        return self.length

    def _check_range(self, start: int, stop: int) -> tuple[int, int]:
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.length:
            raise StepRangeError(self.name, start, stop, self.length)
        return start, stop

    def to_arrow(self) -> pa.Array:
        """All values as Arrow, nulls preserved.

        Returns
        -------
        pyarrow.Array, length T
            Scalar signals use ``spec.arrow_type``; multidimensional ones are
            nested fixed-size lists following ``spec.shape``.
        """
        return self.read_steps_arrow(0, self.length)

    def read_steps_arrow(self, start: int, stop: int) -> pa.Array:
        """Steps ``[start, stop)`` as Arrow, nulls preserved.

        Raises
        ------
        StepRangeError
            If the range is reversed or outside ``[0, T]``.
        """
        start, stop = self._check_range(start, stop)
        arr = to_arrow(self._values.read(start, stop), self.spec.arrow_type)
        return _mask_invalid(arr, self.spec) if self.spec.has_validity else arr

    def to_numpy(self, unit: str | None = None) -> np.ndarray:
        """All values as NumPy, optionally converted to ``unit``.

        Parameters
        ----------
        unit : str, optional
            Target pint unit; values become float64 in that unit.

        Returns
        -------
        ndarray, shape (T, *spec.shape), dtype spec.dtype (float64 if converted)

        Raises
        ------
        NullValuesError
            If the signal holds nulls (use :meth:`to_arrow`).
        UnitError
            If ``unit`` is unknown or has other dimensions than ``spec.unit``.
        """
        return self.read_steps(0, self.length, unit=unit)

    def read_steps(self, start: int, stop: int, *, unit: str | None = None) -> np.ndarray:
        """Steps ``[start, stop)`` as NumPy, reading only the row groups/chunks they span.

        Returns
        -------
        ndarray, shape (stop - start, *spec.shape)

        Raises
        ------
        StepRangeError
            If the range is reversed or outside ``[0, T]``.
        NullValuesError
            If the range contains nulls (stored, or values that ``spec`` declares
            missing or out of range).
        UnitError
            If the conversion to ``unit`` is impossible.
        """
        start, stop = self._check_range(start, stop)
        raw = self._values.read(start, stop)
        if self.spec.has_validity:  # sentinel steps are nulls: refused here as stored ones are
            nulls = _mask_invalid(to_arrow(raw, self.spec.arrow_type), self.spec).null_count
            if nulls:
                raise NullValuesError(self.name, self.record_id, nulls)
        try:
            values = to_numpy(raw)
        except HasNullsError as exc:
            raise NullValuesError(self.name, self.record_id, exc.count) from None
        if unit is not None:
            values = convert(values, self.spec.unit, unit, signal=self.name)
        return values

    def to_masked(self, unit: str | None = None) -> np.ma.MaskedArray:
        """All values as a NumPy masked array: null steps masked instead of refused."""
        return self.read_steps_masked(0, self.length, unit=unit)

    def read_steps_masked(
        self, start: int, stop: int, *, unit: str | None = None
    ) -> np.ma.MaskedArray:
        """Steps ``[start, stop)`` as a NumPy masked array.

        Null steps (stored nulls, and values ``spec`` declares missing or out of
        range) are masked; their data is 0 (``False`` for bool).

        Returns
        -------
        numpy.ma.MaskedArray, shape (stop - start, *spec.shape)
            dtype ``spec.dtype`` (float64 if converted to ``unit``); the mask
            has the same shape, every element of a null step masked.

        Raises
        ------
        StepRangeError
            If the range is reversed or outside ``[0, T]``.
        UnitError
            If the conversion to ``unit`` is impossible.
        """
        data, valid = self.read_steps_valid(start, stop, unit=unit)
        if valid is None:
            return np.ma.MaskedArray(data, mask=np.zeros(data.shape, dtype=bool))
        step = (~valid).reshape((-1,) + (1,) * (data.ndim - 1))
        return np.ma.MaskedArray(data, mask=np.broadcast_to(step, data.shape).copy())

    def read_steps_valid(
        self, start: int, stop: int, *, unit: str | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Steps ``[start, stop)`` and which of them hold a value, without a masked array.

        The data of :meth:`read_steps_masked` and its per-step mask inverted: the fast path
        of a training loop, which needs the two arrays and not ``numpy.ma``'s wrapper.

        Returns
        -------
        data : ndarray, shape (stop - start, *spec.shape)
            dtype ``spec.dtype`` (float64 if converted to ``unit``); a null step's data is 0
            (``False`` for bool).  May be a read-only view of the decoded file.
        valid : ndarray, shape (stop - start,), bool, or None
            False at a null step; None when every step holds a value.

        Raises
        ------
        StepRangeError
            If the range is reversed or outside ``[0, T]``.
        UnitError
            If the conversion to ``unit`` is impossible.
        """
        start, stop = self._check_range(start, stop)
        data, valid = decode_steps(self._values.read(start, stop), self.spec)
        if unit is not None:
            data = convert(data, self.spec.unit, unit, signal=self.name)
        return data, valid

    def to_pandas(self, unit: str | None = None) -> Any:
        """The signal as pandas, indexed by time (requires pandas).

        Returns
        -------
        pandas.Series or pandas.DataFrame
            A scalar signal is a Series named after the signal; a signal of
            shape ``(3,)`` a DataFrame with columns ``name[0]`` ... ``name[2]``
            (row-major for more dimensions). Null steps are NaN (integer and
            bool signals with nulls become float64 or object, as in
            :meth:`pyarrow.Array.to_pandas`). The index ``time`` is a
            ``DatetimeIndex`` (UTC, or ``spec.timezone``) when ``spec.time_origin``
            is set, else a ``TimedeltaIndex`` after the record start.

        Raises
        ------
        UnitError
            If the conversion to ``unit`` is impossible.
        """
        import pandas as pd

        index = _time_index(self.times(), self.spec)
        if self.spec.shape == ():
            arr = self.read_steps_arrow(0, self.length)
            if unit is not None:
                masked = self.to_masked(unit)
                values: Any = masked.filled(np.nan)
            else:
                values = arr.to_pandas()
            return pd.Series(np.asarray(values), index=index, name=self.name)
        masked = self.to_masked(unit)
        flat = masked.reshape(self.length, -1)
        data = np.ma.filled(flat.astype(np.float64), np.nan) if masked.mask.any() else flat.data
        cols = [f"{self.name}[{','.join(map(str, i))}]" for i in np.ndindex(*self.spec.shape)]
        return pd.DataFrame(data, index=index, columns=cols)

    def times(self) -> np.ndarray:
        """Time of every step.

        Returns
        -------
        ndarray, shape (T,), int64, nanoseconds after ``spec.time_origin``
        """
        return self.read_times(0, self.length)

    def read_times(self, start: int, stop: int) -> np.ndarray:
        """Times of steps ``[start, stop)`` (int64 ns).

        Raises
        ------
        StepRangeError
            If the range is reversed or outside ``[0, T]``.
        """
        start, stop = self._check_range(start, stop)
        if self._times is not None:
            return np.asarray(to_numpy(self._times.read(start, stop)), dtype=np.int64)
        rate = self.spec.rate_hz
        assert rate is not None
        steps = np.arange(start, stop, dtype=np.int64)
        period = 1e9 / rate
        if period == int(period):
            offsets = steps * np.int64(int(period))
        else:
            offsets = np.rint(steps * period).astype(np.int64)
        return offsets + np.int64(self.spec.start_ns)


def _time_index(times: np.ndarray, spec: SignalSpec) -> Any:
    """pandas index named ``time`` for int64 ns ``times`` on ``spec``'s time axis."""
    import pandas as pd

    if spec.time_origin is None:
        return pd.TimedeltaIndex(times.astype("timedelta64[ns]"), name="time")
    origin = pd.Timestamp(spec.time_origin)
    origin = origin.tz_localize("UTC") if origin.tzinfo is None else origin.tz_convert("UTC")
    index = pd.DatetimeIndex(origin + pd.to_timedelta(times, unit="ns"), name="time")
    return index.tz_convert(spec.timezone) if spec.timezone else index


class _DatasetView:
    """Query API shared by the lazy reader and the in-memory dataset."""

    _handle: VersionHandle
    _catalog_cache: Catalog | None

    @property
    def _catalog(self) -> Catalog:
        # The DuckDB file is verified and attached on first use, not at open.
        if self._catalog_cache is None:
            self._catalog_cache = Catalog(self._handle.path("control.duckdb"))
        return self._catalog_cache

    @property
    def manifest(self) -> Manifest:
        """The version's manifest."""
        return self._handle.manifest

    @property
    def card(self) -> DatasetCard:
        """The dataset card."""
        return self.manifest.card

    @property
    def schema(self) -> DatasetSchema:
        """The derived schema."""
        return self.manifest.dataset_schema

    @property
    def ref(self) -> Ref:
        """Exact reference ``org/name@version``."""
        return self.manifest.ref

    def __len__(self) -> int:
        return self.manifest.counts.records

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def records(self) -> list[Record]:
        """All records in read order."""
        return list(self._catalog.records)

    @overload
    def __getitem__(self, key: int | str) -> Record: ...
    @overload
    def __getitem__(self, key: slice) -> list[Record]: ...
    def __getitem__(self, key: int | str | slice) -> Record | list[Record]:
        """A record by read-order position (negative counts from the end) or id; a slice
        gives a list of records.

        Raises
        ------
        RecordIndexError
            If an integer is outside ``[-len, len)``.
        RecordNotFoundError
            If no record has this id.
        """
        records = self._catalog.records
        if isinstance(key, slice):
            return records[key]
        if isinstance(key, str):
            return self.record(key)
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            raise RecordNotFoundError(f"{key!r} (index with an int, a record id or a slice)")
        i = int(key)
        if not -len(records) <= i < len(records):
            raise RecordIndexError(i, len(records), str(self.ref))
        return records[i]

    def to_pandas(
        self,
        record: Record | str | int,
        *,
        signals: Sequence[str] | None = None,
        units: dict[str, str] | None = None,
    ) -> Any:
        """One record as a pandas DataFrame: a column per signal, outer-joined on time.

        Parameters
        ----------
        record : Record, str or int
            The record, its id, or its read-order position.
        signals : sequence of str, optional
            Only these signals (default: all of the record).
        units : mapping of str to str, optional
            Convert a signal to a unit, e.g. ``{"altitude": "m"}``.

        Returns
        -------
        pandas.DataFrame
            Indexed by ``time`` (see :meth:`Signal.to_pandas`); signals on
            different time axes leave NaN where one has no step. A signal with a
            per-step shape contributes one column per component.

        Raises
        ------
        RecordIndexError, RecordNotFoundError, SignalNotFoundError
            If the record or a signal does not exist.
        """
        import pandas as pd

        rec = record if isinstance(record, Record) else self[record]
        sigs = self.signals(rec.id)
        names = list(sigs) if signals is None else list(signals)
        parts = []
        for name in names:
            if name not in sigs:
                raise SignalNotFoundError(rec.id, name)
            parts.append(sigs[name].to_pandas((units or {}).get(name)))
        if not parts:
            return pd.DataFrame(index=pd.TimedeltaIndex([], name="time"))
        frame = pd.concat(parts, axis=1, join="outer", sort=True)
        frame.index.name = "time"
        return frame

    def _index(self, record_id: str) -> int:
        idx = self._catalog.index_of(record_id)
        if idx is None:
            raise RecordNotFoundError(record_id)
        return idx

    def record(self, record_id: str) -> Record:
        """The record with this id.

        Raises
        ------
        RecordNotFoundError
            If there is none.
        """
        return self._catalog.records[self._index(record_id)]

    def _source(self, rel: str, storage: str) -> Source:
        raise NotImplementedError

    def _make_signal(self, record_id: str, row: SignalRow) -> Signal:
        values = ArrayHandle(self._source(row.file, row.storage), row.row_offset, row.length)
        times = None
        if row.times_file is not None:
            times = ArrayHandle(
                self._source(row.times_file, "parquet"), row.times_offset or 0, row.length
            )
        return Signal(record_id, row.name, row.spec, row.length, row.null_count, values, times)

    def signals(self, record_id: str) -> dict[str, Signal]:
        """Every signal of a record, by name, in write order.

        Raises
        ------
        RecordNotFoundError
            If the record does not exist.
        """
        rows = self._catalog.signal_rows(self._index(record_id))
        return {name: self._make_signal(record_id, row) for name, row in rows.items()}

    def signal(self, record_id: str, name: str) -> Signal:
        """One signal of a record.

        Raises
        ------
        RecordNotFoundError, SignalNotFoundError
            If the record or signal does not exist.
        """
        rows = self._catalog.signal_rows(self._index(record_id))
        if name not in rows:
            raise SignalNotFoundError(record_id, name)
        return self._make_signal(record_id, rows[name])

    def annotations(
        self, record_id: str | None = None, *, signal: str | None = None
    ) -> list[Annotation]:
        """Annotations, optionally only those of one record and/or signal."""
        idx = None if record_id is None else self._index(record_id)
        return self._catalog.annotations(idx, signal)

    def tasks(self, record_id: str | None = None, *, name: str | None = None) -> list[Task]:
        """Tasks, optionally only those of one record and/or task name."""
        idx = None if record_id is None else self._index(record_id)
        return self._catalog.tasks(idx, name)

    def query(self, sql: str) -> pa.Table:
        """Run one read-only SQL ``SELECT`` over this version's catalog.

        The tables are typed views of the catalog: ``records``, ``signals``,
        ``annotations`` and ``tasks`` (content as columns ``label``, ``text``,
        ``value``, ``unit``, ``question``, ``answer``) and ``lineage``; see
        :mod:`timenet.query`. Nothing outside the version can be read.

        Returns
        -------
        pyarrow.Table

        Raises
        ------
        QueryError
            If the SQL is not one ``SELECT``, reaches outside the version
            (files, URLs, ``ATTACH``, extensions, settings) or fails.
        IntegrityError
            If the catalog file fails verification.

        Examples
        --------
        >>> reader.query("SELECT label, count(*) AS n FROM tasks GROUP BY label")  # doctest: +SKIP
        """
        from timenet.query import run_query

        return run_query(self._catalog.path, sql, ref=str(self.ref))

    def get(
        self,
        kind: Literal["record", "annotation", "task"],
        id: str | int,
        *,
        parent: str | None = None,
    ) -> Record | Annotation | Task:
        """One record, annotation or task by id; with ``parent``, by the id it has there.

        Parameters
        ----------
        kind : {"record", "annotation", "task"}
        id : str or int
            Id in this version, or in release ``parent`` when given.
        parent : str, optional
            A parent release ``org/name@version`` of this (child) version; the
            object returned is the copy of that parent object.

        Raises
        ------
        OptionError
            ``kind`` is not record, annotation or task.
        RecordNotFoundError
            If there is no such object (or it was not imported from ``parent``).
        """
        if kind not in ("record", "annotation", "task"):
            raise OptionError("kind", kind, "record, annotation or task")
        key = str(id)
        if parent is not None:
            child = self._catalog.child_id(kind, parent, key)
            if child is None:
                raise RecordNotFoundError(f"{kind} {key!r} of {parent} (not imported here)")
            key = child
        if kind == "record":
            return self.record(key)
        items: list[Any] = self.annotations() if kind == "annotation" else self.tasks()
        for item in items:
            if str(item.id) == key:
                return item
        raise RecordNotFoundError(f"{kind} {key!r}")


class TimeFReader(_DatasetView):
    """Lazy reader of one committed TimeF version.

    Use :meth:`open`; the reader pickles (its DuckDB connection and open files
    are dropped and re-opened on demand), so it can be shipped to DataLoader
    workers.
    """

    def __init__(self, handle: VersionHandle) -> None:
        self._handle = handle
        self._catalog_cache: Catalog | None = None
        self._sources: dict[str, Source] = {}

    @classmethod
    def open(
        cls,
        source: str | os.PathLike[str] | VersionHandle,
        *,
        verify: bool = True,
        registries: Sequence[Registry | str | os.PathLike[str]] | None = None,
    ) -> TimeFReader:
        """Open a version directory or an already resolved handle.

        Parameters
        ----------
        source : path or VersionHandle
            Version directory ``<root>/<org>/<name>/<version>`` or a handle from
            a registry (the client resolves payload sources itself).
        verify : bool
            Check sizes now and SHA-256 of each file before its first use.
            ``False`` trusts the files (only for data you control).
        registries : sequence, optional
            Where to find the payload sources (parent releases) of a child
            version opened from a directory; the directory's own registry is
            searched first, then these (default: :func:`default_registries`).

        Raises
        ------
        ManifestError
            If the manifest is missing, a symlink or invalid.
        IntegrityError
            If a file is missing or its size differs from the manifest.
        DatasetNotFoundError
            If a payload source of a child version cannot be found.
        """
        if isinstance(source, VersionHandle):
            return cls(source)
        handle: VersionHandle = LocalVersionHandle.open(source, verify=verify)
        if handle.manifest.payloads:
            from timenet.payloads import resolve_payloads
            from timenet.registry import as_registry, default_registries

            own = LocalRegistry(
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(source))))
            )
            extra = [as_registry(r) for r in (registries or default_registries())]
            handle = resolve_payloads(handle, [own, *extra])
        return cls(handle)

    @property
    def handle(self) -> VersionHandle:
        """The version handle (manifest plus verified file access)."""
        return self._handle

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sources"] = {}
        return state

    def _source(self, rel: str, storage: str) -> Source:
        src = self._sources.get(rel)
        if src is None:
            # Sources locate (and verify) their file on first read, not here.
            if storage == "zarr":
                src = ZarrSource(functools.partial(self._handle.dir_path, rel))
            else:
                src = ParquetSource(functools.partial(self._handle.path, rel))
            self._sources[rel] = src
        return src

    def close(self) -> None:
        """Release the DuckDB connection and cached file readers."""
        if self._catalog_cache is not None:
            self._catalog_cache.close()
        self._sources.clear()

    def __enter__(self) -> TimeFReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def load(self) -> LoadedDataset:
        """Read every value, annotation and task into memory.

        Returns
        -------
        LoadedDataset

        Raises
        ------
        IntegrityError
            If any file fails verification.
        """
        return LoadedDataset._from_reader(self)

    def __repr__(self) -> str:
        return f"TimeFReader({self.ref}, {self._handle.location!r})"


def _read_parquet_columns(handle: VersionHandle, rels: list[str]) -> dict[str, Any]:
    """Every Parquet value file's column, each file's SHA-256 checked before any is returned.

    Files awaiting verification are memory-mapped and all their hashes queued
    at once on a hashing thread (hashlib releases the GIL), so file ``i + 1`` is
    hashed while Arrow decodes file ``i`` from the same mapping; the digests are
    compared after the last decode, before the columns leave this function.

    Raises
    ------
    IntegrityError
        If any file's size or SHA-256 differs from the manifest.
    """
    import pyarrow.parquet as pq

    mapped: dict[str, Any] = {}
    for rel in rels:
        pending = handle.unverified_path(rel)
        if pending is not None:
            # the buffer keeps the mapping alive; decoded columns may reference it
            mapped[rel] = pa.memory_map(str(pending)).read_buffer()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="timenet-sha256") as hasher:
        digests = {
            rel: hasher.submit(hashlib.sha256, memoryview(buf)) for rel, buf in mapped.items()
        }
        columns: dict[str, Any] = {}
        try:
            for rel in rels:
                # ParquetFile.read, not read_table: the dataset layer costs more than the
                # decode on files of many small row groups (one per record)
                src = pa.BufferReader(mapped[rel]) if rel in mapped else handle.path(rel)
                with pq.ParquetFile(src, memory_map=True) as pf:
                    columns[rel] = pf.read().column(0)
        finally:
            # also when a decode failed: a changed file is an IntegrityError, not Arrow's
            for rel, digest in digests.items():
                handle.mark_verified(rel, digest.result().hexdigest(), mapped[rel].size)
    return columns


class LoadedDataset(_DatasetView):
    """A version with every value, annotation and task in memory.

    Offers the same queries as :class:`TimeFReader`; ``Signal`` objects are
    backed by in-memory arrays, so reads never touch the disk.
    """

    def __init__(
        self,
        handle: VersionHandle,
        catalog: Catalog,
        sources: dict[str, Source],
        annotations: list[Annotation],
        tasks: list[Task],
    ) -> None:
        self._handle = handle
        self._catalog_cache = catalog
        self._sources = sources
        self._annotations = annotations
        self._tasks = tasks

    @classmethod
    def _from_reader(cls, reader: TimeFReader) -> LoadedDataset:
        handle = reader.handle
        catalog = reader._catalog

        def read_catalog() -> tuple[list[Annotation], list[Task]]:
            _ = catalog.records
            out = catalog.annotations(), catalog.tasks()
            catalog.close()
            return out

        # Value files come from the manifest, so the catalog (Python-heavy)
        # is read in a thread while Arrow decodes values (GIL released).
        from timenet.payloads import split_payload_path, value_paths

        files: dict[str, str] = {}
        for path in value_paths(handle.manifest):
            split = split_payload_path(path)
            if not (split[1] if split else path).startswith("values/"):
                continue
            if path.endswith(".parquet"):
                files[path] = "parquet"
            elif ".zarr/" in path:
                files[path.split(".zarr/", 1)[0] + ".zarr"] = "zarr"
        sources: dict[str, Source] = {}
        with ThreadPoolExecutor(max_workers=1) as pool:
            meta = pool.submit(read_catalog)
            parquet = [rel for rel, storage in files.items() if storage == "parquet"]
            columns = _read_parquet_columns(handle, parquet)
            for rel, storage in files.items():
                if storage == "zarr":
                    zarr_source = ZarrSource(functools.partial(handle.dir_path, rel))
                    sources[rel] = MemorySource(zarr_source.read_all())
                else:
                    sources[rel] = MemorySource(columns[rel])
            annotations, tasks = meta.result()
        return cls(handle, catalog, sources, annotations, tasks)

    def _source(self, rel: str, storage: str) -> Source:
        return self._sources[rel]

    def annotations(
        self, record_id: str | None = None, *, signal: str | None = None
    ) -> list[Annotation]:
        if record_id is not None:
            self._index(record_id)
        return [
            a
            for a in self._annotations
            if (record_id is None or a.record_id == record_id)
            and (signal is None or a.signal == signal)
        ]

    def tasks(self, record_id: str | None = None, *, name: str | None = None) -> list[Task]:
        if record_id is not None:
            self._index(record_id)
        return [
            t
            for t in self._tasks
            if (record_id is None or t.record_id == record_id) and (name is None or t.name == name)
        ]

    def __repr__(self) -> str:
        return f"LoadedDataset({self.ref}, records={len(self)})"
