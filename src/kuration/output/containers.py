"""Shard containers: how a dict of arrays becomes bytes on disk, and back.

Every container writes the modality arrays as shaped, ``(L, *shape)``, plus
the real (pre-pad) length ``_n_steps`` in band, restores each array's dtype
on read, and is byte-deterministic: the same arrays give the same bytes on
every run and machine (no timestamps, fixed member order, pinned format
versions).  Arrays are bool, integer or float, or (for shard-level labels
such as ``_entity``) zero-dimensional unicode strings.  ``dumps`` takes
optional per-array attributes (``name``, ``unit``): HDF5 stores them as
dataset attributes, Parquet as field metadata (``kuration.unit``), JSON in
each array's entry; npz has no place for them (the manifest has them all).
The layout of each container is specified in ``docs/format.md``.  Built in:

========  ==========================================  =================
name      format                                      needs
========  ==========================================  =================
npz       NumPy zip of ``.npy`` members (no pickles)  numpy
json      UTF-8 JSON, nested lists (human-readable)   nothing
hdf5      HDF5 file, one dataset per array            h5py (``[array]``)
parquet   one row per timestep; tensors flattened to  pyarrow
          fixed-size list columns                     (``[parquet]``)
========  ==========================================  =================

Register another with :func:`register_container`.
"""

from __future__ import annotations

import functools
import importlib
import io
import json
import math
import zipfile
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.registry import Registry
from ..errors import DatasetIntegrityError, MissingExtraError, OutputSpecError, RegistrationError

__all__ = [
    "Container",
    "Hdf5Container",
    "JsonContainer",
    "NpzContainer",
    "ParquetContainer",
    "container_can",
    "get_container",
    "register_container",
    "registered_containers",
]


@runtime_checkable
class Container(Protocol):
    """A shard format.

    ``suffix`` is the file extension (with the dot); ``dumps(arrays)`` turns a
    mapping of arrays into bytes and ``loads(data)`` turns them back, each
    array with its shape and dtype.  ``dumps`` must be deterministic.
    Containers may also define ``require()``, raising ``ImportError`` with an
    install hint when an optional dependency is missing.

    Built-in containers also take ``dumps(arrays, attrs=...)``, a mapping of
    array name to ``{"name": str, "unit": str | list[str]}``; the writer
    passes it to any container whose ``dumps`` has an ``attrs`` parameter.

    Capabilities a container may declare (read with :func:`container_can`), which the
    planner and the output checks consult instead of container names:

    * ``streams`` (default True): a shard is written without holding more than itself,
      so ``streaming=True`` may write it (npz assembles each archive whole: False);
    * ``packs`` (default False): the ``packed`` layout (many shards in shared files,
      :mod:`kuration.output.packed`) writes this format (parquet: True).
    """

    suffix: str

    def dumps(self, arrays: Mapping[str, np.ndarray]) -> bytes: ...

    def loads(self, data: bytes) -> dict[str, np.ndarray]: ...


def _import(module: str, extra: str, container: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"the {container} container needs {module}: pip install 'kuration-sdk[{extra}]'"
        ) from None


Attrs = Mapping[str, Mapping[str, Any]]


def _contiguous(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "biuf" and not (a.dtype.kind == "U" and a.ndim == 0):
        raise OutputSpecError(
            f"containers hold bool, integer or float arrays and 0-d strings, got {a.dtype}"
        )
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return a if a.flags.c_contiguous else a.copy(order="C")


#: capability -> its value for a container that does not declare it
CAPABILITIES = {"streams": True, "packs": False}


def container_can(name: str, capability: str) -> bool:
    """Whether the container registered as ``name`` declares ``capability`` (see
    :class:`Container`; an undeclared one takes its default from :data:`CAPABILITIES`).

    Raises
    ------
    UnknownNameError
        Unknown container.
    KeyError
        Unknown capability.
    """
    return bool(getattr(get_container(name), capability, CAPABILITIES[capability]))


class NpzContainer:
    """NumPy ``.npz``, written deterministically (fixed zip timestamps, sorted members,
    no pickles) and read with ``numpy.load(allow_pickle=False)``.

    Parameters
    ----------
    compresslevel : int or None
        Deflate level 1-9, or None (the default) to store members uncompressed
        like :func:`numpy.savez`.
    """

    suffix = ".npz"
    streams = False  # np.savez assembles the whole archive in memory
    _EPOCH = (1980, 1, 1, 0, 0, 0)

    def __init__(self, compresslevel: int | None = None) -> None:
        self.compresslevel = compresslevel

    def dumps(self, arrays: Mapping[str, np.ndarray], attrs: Attrs | None = None) -> bytes:
        """``attrs`` is accepted and dropped: ``.npy`` members have no attributes."""
        buf = io.BytesIO()
        method = zipfile.ZIP_STORED if self.compresslevel is None else zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(buf, "w", compression=method) as zf:
            for name in sorted(arrays):
                info = zipfile.ZipInfo(f"{name}.npy", date_time=self._EPOCH)
                info.compress_type = method
                info.external_attr = 0o644 << 16
                if self.compresslevel is not None:  # the attribute was private before 3.12
                    slot = "compress_level" if hasattr(zipfile.ZipInfo, "compress_level") else None
                    setattr(info, slot or "_compresslevel", self.compresslevel)
                # the member's size is known before it is written, so zipfile never needs
                # zip64 headers for it (how it wrote those changed within Python 3.11.x,
                # which made the same arrays different bytes on different patch releases)
                member = io.BytesIO()
                np.lib.format.write_array(member, _contiguous(arrays[name]), allow_pickle=False)
                zf.writestr(info, member.getbuffer())
        return buf.getvalue()

    def loads(self, data: bytes) -> dict[str, np.ndarray]:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


_NONFINITE = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}


class JsonContainer:
    """Compact, canonical JSON: ``{"format", "arrays": {name: {"dtype", "shape", "data"}}}``.

    ``data`` holds the values as nested lists; non-finite floats are written
    as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` so the
    document stays strict JSON.  A 0-d string has dtype ``"str"``.  An array
    with a unit has ``"unit"`` (a string, or one per component).
    """

    suffix = ".json"
    FORMAT = "kuration-shard-json/1"

    def dumps(self, arrays: Mapping[str, np.ndarray], attrs: Attrs | None = None) -> bytes:
        out: dict[str, Any] = {}
        for name in sorted(arrays):
            a = _contiguous(arrays[name])
            if a.dtype.kind == "U":
                out[name] = {"dtype": "str", "shape": [], "data": str(a.item())}
                continue
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                obj = a.astype(object)
                obj[np.isnan(a)] = "NaN"
                obj[np.isposinf(a)] = "Infinity"
                obj[np.isneginf(a)] = "-Infinity"
                data: Any = obj.tolist()
            else:
                data = a.tolist()
            out[name] = {"dtype": a.dtype.str.lstrip("<|"), "shape": list(a.shape), "data": data}
            unit = (attrs or {}).get(name, {}).get("unit")
            if unit is not None:
                out[name]["unit"] = unit
        doc = {"format": self.FORMAT, "arrays": out}
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()

    def loads(self, data: bytes) -> dict[str, np.ndarray]:
        from ..core.jsonio import loads_strict

        doc = loads_strict(data, what="json shard")
        if not isinstance(doc, dict) or doc.get("format") != self.FORMAT:
            raise DatasetIntegrityError(f"not a {self.FORMAT} document")
        out: dict[str, np.ndarray] = {}
        for name, spec in doc["arrays"].items():
            if spec["dtype"] == "str":
                out[name] = np.array(str(spec["data"]))
                continue
            dt = np.dtype(spec["dtype"])
            shape = tuple(int(s) for s in spec["shape"])
            raw = spec["data"]
            if dt.kind == "f":
                arr = np.array(raw, dtype=object).reshape(shape)
                bad = {v for v in arr.flat if isinstance(v, str)} - set(_NONFINITE)
                if bad:
                    raise DatasetIntegrityError(f"array {name!r}: bad values {sorted(bad)}")
                out[name] = arr.astype(np.float64).astype(dt)
            else:
                out[name] = np.array(raw, dtype=dt).reshape(shape)
        return out


class Hdf5Container:
    """HDF5 via h5py (``[array]`` extra): one contiguous dataset per array.

    Every dataset has a ``name`` attribute and, when known, a ``unit``
    attribute (a string, or an array of strings, one per component).  A 0-d
    string is a fixed-length UTF-8 string dataset.

    Determinism: object timestamps are off (``track_times=False``) and the
    file-format versions are pinned (``libver=("earliest", "v110")``), so the
    same arrays give the same bytes.
    """

    suffix = ".h5"
    LIBVER = ("earliest", "v110")

    def require(self) -> ModuleType:
        return _import("h5py", "array", "hdf5")

    def dumps(self, arrays: Mapping[str, np.ndarray], attrs: Attrs | None = None) -> bytes:
        h5py = self.require()
        buf = io.BytesIO()
        with h5py.File(buf, "w", libver=self.LIBVER, track_order=True) as f:
            for name in sorted(arrays):
                a = _contiguous(arrays[name])
                if a.dtype.kind == "U":
                    raw = str(a.item()).encode("utf-8")
                    dt = h5py.string_dtype("utf-8", max(len(raw), 1))
                    ds = f.create_dataset(name, data=np.array(raw, dtype=dt), track_times=False)
                else:
                    ds = f.create_dataset(name, data=a, track_times=False)
                ds.attrs["name"] = name
                unit = (attrs or {}).get(name, {}).get("unit")
                if unit is not None:
                    ds.attrs["unit"] = unit
        return buf.getvalue()

    def loads(self, data: bytes) -> dict[str, np.ndarray]:
        h5py = self.require()
        with h5py.File(io.BytesIO(data), "r") as f:
            out = {}
            for name in f:
                ds = f[name]
                if not isinstance(ds, h5py.Dataset):
                    raise DatasetIntegrityError(f"{name!r} is not a dataset")
                if h5py.check_string_dtype(ds.dtype) is not None:
                    out[name] = np.array(ds.asstr()[()])
                    continue
                out[name] = np.asarray(ds[()])
            return out


@functools.lru_cache(maxsize=4096)
def _parquet_field(
    name: str,
    type_: Any,
    shape: tuple[int, ...],
    unit: str | tuple[str, str] | None,
    scalar: bool,
) -> Any:
    """The ``pyarrow.field`` of one column with its kuration metadata (shape, unit, and
    for a 0-d array ``kuration.scalar``), built once per distinct column: every shard
    of a dataset repeats the same few.  ``unit`` is a unit string or ``("json", text)``
    for a unit given per component (a list), so that it can be a cache key."""
    import pyarrow as pa

    meta = {b"kuration.shape": json.dumps(list(shape)).encode()}
    if unit is not None:
        meta[b"kuration.unit"] = (json.dumps(unit) if isinstance(unit, str) else unit[1]).encode()
    if scalar:
        meta[b"kuration.scalar"] = b"true"
    return pa.field(name, type_, nullable=False, metadata=meta)


class ParquetContainer:
    """Parquet via pyarrow: one row per timestep.

    Scalar arrays ``(L,)`` are plain columns; tensors ``(L, *shape)`` are
    flattened to fixed-size list columns whose field metadata records the
    shape (``kuration.shape``, JSON), so they come back as shaped; a unit is
    field metadata ``kuration.unit`` (JSON).  Zero-dimensional arrays
    (``_n_steps``, ``_entity``) travel in the schema metadata under
    ``kuration.scalars`` and are repeated as constant columns (field metadata
    ``kuration.scalar``), so every row carries them for tools that read rows.
    """

    suffix = ".parquet"
    packs = True

    def require(self) -> ModuleType:
        return _import("pyarrow", "parquet", "parquet")

    def dumps(self, arrays: Mapping[str, np.ndarray], attrs: Attrs | None = None) -> bytes:
        self.require()
        import pyarrow as pa
        import pyarrow.parquet as pq

        scalars: dict[str, list[Any]] = {}
        rows = {int(np.asarray(a).shape[0]) for a in arrays.values() if np.ndim(a)}
        n_rows = rows.pop() if len(rows) == 1 else 0
        fields, cols = [], []
        for name in sorted(arrays):
            a = _contiguous(arrays[name])
            unit = (attrs or {}).get(name, {}).get("unit")
            if a.ndim == 0:
                dtype = "str" if a.dtype.kind == "U" else a.dtype.str.lstrip("<|")
                scalars[name] = [dtype, a.item()]
                col = pa.array(np.repeat(a, n_rows) if a.dtype.kind != "U" else [a.item()] * n_rows)
            elif a.ndim == 1:
                col = pa.array(a)
            else:
                width = math.prod(a.shape[1:])
                col = pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), width)
            unit_key = unit if unit is None or isinstance(unit, str) else ("json", json.dumps(unit))
            fields.append(_parquet_field(name, col.type, a.shape[1:], unit_key, a.ndim == 0))
            cols.append(col)
        meta = {b"kuration.scalars": json.dumps(scalars, sort_keys=True).encode()}
        table = pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=meta))
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="snappy")
        return bytes(sink.getvalue().to_pybytes())

    def loads(self, data: bytes) -> dict[str, np.ndarray]:
        self.require()
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(pa.BufferReader(data))
        out: dict[str, np.ndarray] = {}
        for field in table.schema:
            if (field.metadata or {}).get(b"kuration.scalar") == b"true":
                continue  # restored from the schema metadata below
            col = table.column(field.name).combine_chunks()
            shape = json.loads((field.metadata or {}).get(b"kuration.shape", b"[]"))
            if pa.types.is_fixed_size_list(field.type):
                flat = col.flatten().to_numpy(zero_copy_only=False)
                arr = flat.reshape((len(col), *shape))
            else:
                arr = col.to_numpy(zero_copy_only=False)
            out[field.name] = np.asarray(arr)
        scalars = json.loads((table.schema.metadata or {}).get(b"kuration.scalars", b"{}"))
        for name, (dtype, value) in scalars.items():
            out[name] = np.array(str(value)) if dtype == "str" else np.array(value, np.dtype(dtype))
        return out


_CONTAINERS: Registry[Container] = Registry("container", builtin="container")


def register_container(name: str, container: Container, *, clobber: bool = False) -> None:
    """Register a shard container under ``name``.

    Raises
    ------
    RegistrationError
        A ``ValueError``: ``name`` is taken (and ``clobber`` is false) or ``container`` lacks
        ``suffix``/``dumps``/``loads``.
    """
    if not isinstance(container, Container) or not str(container.suffix).startswith("."):
        raise RegistrationError(f"container {name!r} needs a '.suffix', dumps() and loads()")
    _CONTAINERS.register(name, container, clobber=clobber)


def get_container(name: str) -> Container:
    """The container registered as ``name`` (raises ``UnknownNameError``, a ``KeyError``)."""
    return _CONTAINERS.get(name)


def require_container(name: str) -> Container:
    """:func:`get_container` plus its optional-dependency check.

    Raises
    ------
    UnknownNameError
        Unknown name.
    ImportError
        The container's optional dependency is missing (the message names the extra).
    """
    c = _CONTAINERS.get(name)
    req = getattr(c, "require", None)
    if callable(req):
        req()
    return c


def registered_containers() -> tuple[str, ...]:
    return _CONTAINERS.names()


register_container("npz", NpzContainer())
register_container("json", JsonContainer())
register_container("hdf5", Hdf5Container())
register_container("parquet", ParquetContainer())
