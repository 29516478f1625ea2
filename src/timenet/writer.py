"""TimeFWriter: stage a version, then publish it with one atomic rename.

On-disk layout of ``<root>/<org>/<name>/<version>/``::

    manifest.json                 commit marker, written last
    control.duckdb                records, signals, annotations, tasks
    values/<k>-<slug>.parquet     scalar values of signal name k, every record
    values/times.parquet          explicit int64 ns timestamps, each distinct axis once
    values/<k>-<slug>.zarr/       multidimensional values of signal name k

Layout choice: one value file per *signal name* spanning all records, with
every signal instance starting its own Parquet row group (long instances are
split into row groups of ``row_group_rows``). A bulk load therefore reads a
handful of large files exactly as ``pyarrow.parquet.read_table`` would, while a
single-record read touches one row group per signal through cached file
metadata. One file per record would make bulk loads open thousands of files;
one file per version would force every single-record read to scan columns it
does not need. Zarr arrays follow the same idea: instances are appended along
axis 0 and located by row offset. Explicit timestamps are content-addressed
(:class:`timenet._values.TimesStore`): a time axis identical to one already
written in the version is stored once and shared by every signal using it.

Commit protocol: everything is written into ``<root>/<org>/<name>/.staging-*``
on the same filesystem -- values first, then ``control.duckdb``, then
``manifest.json`` (which lists every other file with size and SHA-256) -- all
fsynced, then the staging directory is renamed to ``<version>`` with a single
``os.rename``. A crash leaves only a dot-named staging directory, which
registries ignore and :meth:`timenet.LocalRegistry.clean_staging` removes.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import pyarrow as pa

from timenet._fs import make_dirs, raise_registry_error, remove_empty
from timenet._integrity import sha256_file
from timenet._timebase import NS_MAX, NS_MIN, check_signal_times
from timenet._values import (
    TIMES_FILE,
    NameStore,
    TimesStore,
    open_store,
    to_arrow_values,
    to_numpy_values,
)
from timenet.catalog import write_catalog
from timenet.errors import (
    RecordNotFoundError,
    SchemaError,
    TimeNetError,
    VersionExistsError,
)
from timenet.models import (
    Counts,
    DatasetCard,
    DatasetSchema,
    EffectiveAccess,
    FileEntry,
    Manifest,
    PayloadSource,
    RawInput,
    SignalSchema,
)
from timenet.specs import Content, SignalSpec, check_content
from timenet.units import validate_unit

__all__ = ["TimeFWriter", "check_writable"]

STAGING_PREFIX = ".staging-"
Storage = Literal["auto", "parquet", "zarr"]


@dataclass
class _RecordState:
    index: int
    signals: dict[str, SignalSpec] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)


def _json_text(obj: Any, *, record: str, signal: str | None = None) -> str:
    """JSON text stored in the catalog; NaN or infinity would not read back strictly.

    Raises
    ------
    SchemaError
        If ``obj`` holds a non-finite number or is not JSON-serialisable.
    """
    try:
        return json.dumps(obj, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"not JSON-serialisable: {exc}", record=record, signal=signal) from exc


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_writable(root: str | os.PathLike[str], card: DatasetCard) -> None:
    """Check that a :class:`TimeFWriter` could stage ``card``'s version under ``root``,
    leaving nothing behind: a staging folder is made where the writer makes its own and
    removed again, with every directory made for it.

    A build calls this before its first (possibly long) download and before any
    progress output, so a registry it cannot write fails at once with one message.

    Raises
    ------
    RegistryError
        If the registry refuses the folder (permissions, read-only file system, a file
        in the way), naming the path refused.
    """
    base = Path(root)
    probe = base / card.org / card.name / f"{STAGING_PREFIX}probe-{uuid.uuid4().hex[:12]}"
    remove_empty(make_dirs(probe, base))


class TimeFWriter:
    """Write one immutable TimeF version into a local registry.

    Parameters
    ----------
    root : path
        Registry root; the version lands in ``<root>/<org>/<name>/<version>/``.
    card : DatasetCard or mapping
        Dataset card; a mapping is validated as a :class:`DatasetCard`.
    compression : str
        Parquet codec (``"snappy"``, ``"zstd"``, ``"none"``, ...).
    row_group_rows : int
        Maximum rows per Parquet row group; each signal instance starts a new
        row group.
    created : str, optional
        ISO 8601 time written as the manifest's ``created`` (default: now).
        Reproducible builds pass a fixed value.
    raw_inputs : sequence of RawInput
        Pinned raw inputs the version was built from, listed in the manifest.
    access : EffectiveAccess, optional
        A child's effective access (its own and its parents'), recorded in the manifest.

    Raises
    ------
    VersionExistsError
        If the version is already committed.
    RegistryError
        If ``root`` cannot be written (the directories created are removed again).

    Examples
    --------
    >>> with TimeFWriter(root, card) as w:  # doctest: +SKIP
    ...     w.add_record("r0")
    ...     w.add_signal("r0", "hr", np.array([60, 61], "int16"), SignalSpec("int16", "1/min", rate_hz=1))
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        card: DatasetCard | Mapping[str, Any],
        *,
        compression: str = "snappy",
        row_group_rows: int = 1 << 17,
        created: str | None = None,
        raw_inputs: Sequence[RawInput] = (),
        access: EffectiveAccess | None = None,
    ) -> None:
        self.card = card if isinstance(card, DatasetCard) else DatasetCard.model_validate(card)
        self.root = Path(root)
        parent = self.root / self.card.org / self.card.name
        self.target = parent / self.card.version
        if os.path.lexists(self.target):
            raise VersionExistsError(str(self.target), str(self.card.ref))
        self.staging = parent / f"{STAGING_PREFIX}{self.card.version}-{uuid.uuid4().hex[:12]}"
        self._made = make_dirs(self.staging / "values", self.root)  # RegistryError if refused
        self._compression = compression
        self._row_group_rows = int(row_group_rows)
        self._created = created
        self._raw_inputs, self._access = tuple(raw_inputs), access
        self._payloads: dict[str, dict[str, FileEntry]] = {}
        self._records: dict[str, _RecordState] = {}
        tables = ("records", "signals", "annotations", "tasks", "lineage")
        self._rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in tables}
        self._names: dict[str, NameStore] = {}
        self._times = TimesStore(self.staging, compression, self._row_group_rows)
        self._samples = 0
        self._state: Literal["open", "committed", "aborted"] = "open"

    # -- context manager -------------------------------------------------
    def __enter__(self) -> TimeFWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state != "open":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def _check_open(self) -> None:
        if self._state != "open":
            raise TimeNetError(f"writer for {self.card.ref} is already {self._state}")

    # -- content ---------------------------------------------------------
    def add_record(self, record_id: str, metadata: Mapping[str, Any] | None = None) -> str:
        """Add a record; returns ``record_id``.

        Raises
        ------
        SchemaError
            If the id is empty, duplicated, or the metadata is not JSON-serialisable.
        """
        self._check_open()
        if not isinstance(record_id, str) or not record_id:
            raise SchemaError("record id must be a non-empty string", record=str(record_id))
        if record_id in self._records:
            raise SchemaError("duplicate record id", record=record_id)
        try:
            meta = json.dumps(dict(metadata or {}), allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise SchemaError(
                f"metadata is not JSON-serialisable: {exc}", record=record_id
            ) from exc
        index = len(self._records)
        self._records[record_id] = _RecordState(index)
        self._rows["records"].append((index, record_id, meta))
        return record_id

    def _record(self, record_id: str) -> _RecordState:
        try:
            return self._records[record_id]
        except KeyError:
            raise RecordNotFoundError(record_id) from None

    def add_signal(
        self,
        record_id: str,
        name: str,
        values: Any,
        spec: SignalSpec,
        *,
        times: Any = None,
        storage: Storage = "auto",
    ) -> None:
        """Add one signal to a record.

        Parameters
        ----------
        record_id : str
            An id returned by :meth:`add_record`.
        name : str
            Signal name, unique within the record. Every record's signal of this
            name must share dtype, shape, unit and storage.
        values : ndarray, shape (T, *spec.shape), or pyarrow Array, or masked array
            Values of exactly ``spec.dtype``. Nulls (Arrow nulls or a NumPy mask)
            are allowed for scalar Parquet signals only.
        spec : SignalSpec
            Dtype, per-step shape, unit and time base.
        times : ndarray, shape (T,), int64 ns or datetime64 (any unit), optional
            Strictly increasing explicit timestamps; required exactly when
            ``spec.rate_hz`` is None.
        storage : {"auto", "parquet", "zarr"}
            Values plane: ``auto`` picks Parquet for scalars and Zarr otherwise.

        Raises
        ------
        RecordNotFoundError
            If the record was not added.
        SchemaError
            On a duplicate name, dtype/shape mismatch, bad timestamps (a NaT,
            or a time that with ``time_origin`` leaves the int64-nanosecond
            range, naming the step) or a spec conflicting with earlier signals
            of the same name.
        UnitError
            If the unit is unknown to the shared pint registry.
        """
        self._check_open()
        rec = self._record(record_id)
        if not isinstance(spec, SignalSpec):
            raise SchemaError("spec must be a SignalSpec", signal=str(name), record=record_id)
        if not isinstance(name, str) or not name or len(name) > 200:
            raise SchemaError("signal name must be a 1-200 character string", record=record_id)
        if name in rec.signals:
            raise SchemaError("duplicate signal name in record", signal=name, record=record_id)
        validate_unit(spec.unit, signal=name)
        kind = storage
        if kind == "auto":
            kind = "parquet" if spec.shape == () else "zarr"
        if kind not in ("parquet", "zarr"):
            raise SchemaError(f"unknown storage {storage!r}", signal=name, record=record_id)
        if kind == "parquet" and spec.shape != ():
            raise SchemaError(
                f"Parquet stores scalar signals only; shape {spec.shape} needs zarr",
                signal=name,
                record=record_id,
            )
        if kind == "parquet":
            arr = to_arrow_values(values, spec, name, record_id)
            length, nulls = len(arr), arr.null_count
        else:
            np_values = to_numpy_values(values, spec, name, record_id)
            length, nulls = int(np_values.shape[0]), 0
        ts = check_signal_times(times, spec, length, name, record_id)
        store = self._store_for(name, spec, kind, record_id)

        offset = store.rows
        if kind == "parquet":
            if length:
                store.writer.write_table(
                    pa.table({"values": arr}), row_group_size=self._row_group_rows
                )
        elif length:
            store.array.append(np_values, axis=0)
        store.rows += length
        times_file, times_offset = None, None
        if ts is not None:
            times_file, times_offset = TIMES_FILE, self._times.add(ts)
            store.irregular = True
        else:
            assert spec.rate_hz is not None
            store.rates.add(spec.rate_hz)
        store.count += 1
        rec.signals[name] = spec
        rec.lengths[name] = length
        self._samples += length
        self._rows["signals"].append(
            (
                rec.index,
                len(rec.signals) - 1,
                name,
                _json_text(spec.to_dict(), record=record_id, signal=name),
                kind,
                store.file,
                offset,
                length,
                nulls,
                times_file,
                times_offset,
            )
        )

    def link_signal(
        self,
        record_id: str,
        name: str,
        spec: SignalSpec,
        *,
        payload: str,
        file: str,
        storage: Literal["parquet", "zarr"],
        row_offset: int,
        length: int,
        pins: Sequence[FileEntry],
        null_count: int = 0,
        times_file: str | None = None,
        times_offset: int | None = None,
    ) -> None:
        """Add a signal whose values stay in another release's files (a payload source).

        The catalog row points at rows ``[row_offset, row_offset + length)`` of
        ``file`` (a Parquet file or a Zarr directory) inside release
        ``payload``; the manifest pins every file that read touches (``pins``:
        the value file, every file of a Zarr array, the times file) by path,
        size and SHA-256. Nothing is copied.

        Raises
        ------
        RecordNotFoundError
            If the record was not added.
        SchemaError
            On a duplicate name, a spec conflicting with earlier signals of the
            same name (own or linked), or a file missing from ``pins``.
        """
        from timenet.payloads import payload_path

        self._check_open()
        rec = self._record(record_id)
        if name in rec.signals:
            raise SchemaError("duplicate signal name in record", signal=name, record=record_id)
        validate_unit(spec.unit, signal=name)
        if (spec.rate_hz is None) != (times_file is not None):
            raise SchemaError(
                "a linked signal has explicit times exactly when spec.rate_hz is None",
                signal=name,
                record=record_id,
            )
        paths = {e.path for e in pins}
        needed = [times_file] if times_file is not None else []
        if storage == "parquet":
            needed.append(file)
        elif not any(p.startswith(file + "/") for p in paths):
            needed.append(file + "/")
        missing = [f for f in needed if f not in paths]
        if missing:
            raise SchemaError(
                f"linked files {missing} of {payload} are not pinned", signal=name, record=record_id
            )
        store = self._names.get(name)
        if store is None:
            store = NameStore(name, "", spec.dtype, spec.shape, spec.unit, storage, linked=True)
            self._names[name] = store
        elif not store.linked or (store.dtype, store.shape, store.unit, store.storage) != (
            spec.dtype,
            spec.shape,
            spec.unit,
            storage,
        ):
            raise SchemaError(
                "a linked signal conflicts with earlier signals of this name (a name is "
                "either written here or linked, with one dtype, shape, unit and storage)",
                signal=name,
                record=record_id,
            )
        known = self._payloads.setdefault(payload, {})
        for e in pins:
            old = known.setdefault(e.path, e)
            if old != e:
                raise SchemaError(
                    f"payload file {payload}:{e.path} pinned twice with different checksums",
                    signal=name,
                    record=record_id,
                )
        if times_file is not None:
            store.irregular = True
        else:
            assert spec.rate_hz is not None
            store.rates.add(spec.rate_hz)
        store.count += 1
        rec.signals[name] = spec
        rec.lengths[name] = int(length)
        self._samples += int(length)
        self._rows["signals"].append(
            (
                rec.index,
                len(rec.signals) - 1,
                name,
                _json_text(spec.to_dict(), record=record_id, signal=name),
                storage,
                payload_path(payload, file),
                int(row_offset),
                int(length),
                int(null_count),
                None if times_file is None else payload_path(payload, times_file),
                None if times_offset is None else int(times_offset),
            )
        )

    def add_lineage(self, kind: str, parent: str, parent_id: str, child_id: str) -> None:
        """Record that ``child_id`` here is the copy of ``parent_id`` of release ``parent``.

        ``kind`` is ``"record"``, ``"annotation"`` or ``"task"``.

        Raises
        ------
        SchemaError
            If ``kind`` is unknown.
        """
        self._check_open()
        if kind not in ("record", "annotation", "task"):
            raise SchemaError(f"lineage kind must be record, annotation or task, got {kind!r}")
        self._rows["lineage"].append((kind, parent, str(parent_id), str(child_id)))

    def derived_schema(self) -> DatasetSchema:
        """The schema the manifest will carry, derived from what was added so far."""
        return self._derive_schema()

    def _store_for(self, name: str, spec: SignalSpec, kind: str, record_id: str) -> NameStore:
        store = self._names.get(name)
        if store is not None and store.linked:
            raise SchemaError(
                "this signal name is linked to a payload source in other records",
                signal=name,
                record=record_id,
            )
        if store is not None:
            want = (store.dtype, store.shape, store.unit, store.storage)
            got = (spec.dtype, spec.shape, spec.unit, kind)
            if want != got:
                raise SchemaError(
                    f"(dtype, shape, unit, storage) {got} conflicts with {want} used by "
                    "earlier records for this signal name",
                    signal=name,
                    record=record_id,
                )
            return store
        store = open_store(self.staging, len(self._names), name, spec, kind, self._compression)
        self._names[name] = store
        return store

    def add_annotation(
        self,
        record_id: str,
        content: Content,
        *,
        start_ns: int,
        stop_ns: int | None = None,
        signal: str | None = None,
    ) -> int:
        """Attach an interval (``stop_ns`` given) or point annotation; returns its id.

        Raises
        ------
        RecordNotFoundError, SignalNotFoundError
            If the record or the targeted signal does not exist (yet).
        SchemaError
            If the content is not a descriptor, ``stop_ns < start_ns`` or a
            time is outside int64 nanoseconds.
        """
        from timenet.errors import SignalNotFoundError

        self._check_open()
        rec = self._record(record_id)
        check_content(content)
        if signal is not None and signal not in rec.signals:
            raise SignalNotFoundError(record_id, signal)
        start = int(start_ns)
        stop = None if stop_ns is None else int(stop_ns)
        for label, v in (("start_ns", start), ("stop_ns", stop)):
            if v is not None and not NS_MIN <= v <= NS_MAX:
                raise SchemaError(
                    f"annotation {label} {v} is outside int64 nanoseconds",
                    record=record_id,
                    signal=signal,
                )
        if stop is not None and stop < start:
            raise SchemaError(
                f"annotation stop_ns {stop} precedes start_ns {start}",
                record=record_id,
                signal=signal,
            )
        aid = len(self._rows["annotations"])
        self._rows["annotations"].append(
            (
                aid,
                rec.index,
                signal,
                start,
                stop,
                content.kind,
                _json_text(content.to_dict(), record=record_id, signal=signal),
            )
        )
        return aid

    def add_task(self, record_id: str, name: str, content: Content) -> int:
        """Attach a task target (label, question/answer, ...) to a record; returns its id.

        Raises
        ------
        RecordNotFoundError
            If the record does not exist.
        SchemaError
            If the name is empty or the content is not a descriptor.
        """
        self._check_open()
        rec = self._record(record_id)
        check_content(content)
        if not isinstance(name, str) or not name:
            raise SchemaError("task name must be a non-empty string", record=record_id)
        tid = len(self._rows["tasks"])
        self._rows["tasks"].append(
            (tid, rec.index, name, content.kind, _json_text(content.to_dict(), record=record_id))
        )
        return tid

    # -- commit ------------------------------------------------------------
    def _close_values(self) -> None:
        for store in self._names.values():
            store.close()
        self._times.close()

    def _derive_schema(self) -> DatasetSchema:
        signals = tuple(
            SignalSchema(
                name=s.name,
                dtype=s.dtype,
                unit=s.unit,
                shape=s.shape,
                storage="parquet" if s.storage == "parquet" else "zarr",
                rates_hz=tuple(sorted(s.rates)),
                irregular=s.irregular,
                count=s.count,
            )
            for s in self._names.values()
        )
        kinds = sorted({row[5] for row in self._rows["annotations"]})
        tasks = sorted({row[2] for row in self._rows["tasks"]})
        return DatasetSchema(
            signals=signals, annotation_kinds=tuple(kinds), task_names=tuple(tasks)
        )

    def commit(self) -> Path:
        """Write the catalog and manifest, then publish the version atomically.

        Returns
        -------
        Path
            The committed version directory.

        Raises
        ------
        VersionExistsError
            If another writer committed the same version meanwhile (staging is
            removed).
        RegistryError
            If a file cannot be written (nothing is published).
        """
        self._check_open()
        try:
            self._close_values()
            write_catalog(self.staging / "control.duckdb", self._rows)
            entries = []
            for path in sorted(p for p in self.staging.rglob("*") if p.is_file()):
                _fsync(path)
                rel = path.relative_to(self.staging).as_posix()
                entries.append(
                    FileEntry(path=rel, size=path.stat().st_size, sha256=sha256_file(path))
                )
            manifest = Manifest(
                card=self.card,
                schema=self._derive_schema(),
                counts=Counts(
                    records=len(self._rows["records"]),
                    signals=len(self._rows["signals"]),
                    samples=self._samples,
                    annotations=len(self._rows["annotations"]),
                    tasks=len(self._rows["tasks"]),
                ),
                files=tuple(entries),
                created=self._created or datetime.now(UTC).isoformat(timespec="seconds"),
                raw_inputs=self._raw_inputs,
                payloads=tuple(
                    PayloadSource(ref=ref, files=tuple(pins[k] for k in sorted(pins)))
                    for ref, pins in sorted(self._payloads.items())
                ),
                access=self._access,
            )
            mpath = self.staging / "manifest.json"
            mpath.write_text(manifest.to_json(), encoding="utf-8")
            _fsync(mpath)
            for d in [self.staging, *(p for p in self.staging.rglob("*") if p.is_dir())]:
                _fsync(d)
            if os.path.lexists(self.target):
                raise VersionExistsError(str(self.target), str(self.card.ref))
            os.rename(self.staging, self.target)
            _fsync(self.target.parent)
        except BaseException as exc:
            self.abort()
            raise_registry_error(exc, self.root)
            raise
        self._state = "committed"
        return self.target

    def abort(self) -> None:
        """Discard the staged version (nothing becomes visible)."""
        if self._state != "open":
            return
        self._state = "aborted"
        try:
            self._close_values()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
            remove_empty(self._made)  # org/name directories this writer created
