"""Row tables from files that are not CSV or Parquet: GPX, JSON lines, WFDB, Arrow IPC.

Each reader returns an Arrow table of rows ``(time, [entity], columns...)`` that
the timeseries adapter reads exactly as it reads a CSV, and that ``kur init``
profiles the same way.  Libraries do the parsing: ``gpxpy`` (GPX), pyarrow's
JSON reader (JSON lines), ``wfdb`` (PhysioNet WFDB records), pyarrow's IPC
reader (Arrow IPC streams, what in-memory sources are spilled to).

* **GPX** (``.gpx``): one row per track point: ``time`` (UTC timestamp, null
  for a point without one), ``track`` (the track's name, or its index when it
  has none: an id, the entity), ``segment`` (index within the track),
  ``latitude``/``longitude`` (field metadata unit ``deg``, WGS 84 as GPX
  defines them) and ``elevation`` (``m``).
* **JSON lines** (``.jsonl``, ``.ndjson``): one object per row; nested objects
  are flattened by path (``{"ball": {"x": 1}}`` gives the column ``ball.x``).
  Lists stay lists (not numbers: never fields).
* **WFDB** (``.hea``, the header of a record): one row per sample: ``time`` in
  seconds from the record's start (``sample / fs``), then one column per signal
  in physical units (field metadata ``unit`` when pint knows the record's unit).
* **Arrow IPC stream** (``.arrows``): the table as written.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import SourceError

__all__ = ["FORMATS", "format_of", "read_rows", "record_files", "record_sha256"]

#: file name endings of each format
FORMATS: dict[str, tuple[str, ...]] = {
    "csv": (".csv", ".csv.gz", ".tsv", ".tsv.gz"),
    "parquet": (".parquet", ".pq"),
    "gpx": (".gpx",),
    "jsonl": (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz"),
    "wfdb": (".hea",),
    "arrows": (".arrows",),
}


def format_of(uri: str) -> str:
    """The format of a file by its name; ``parquet`` for anything else (directories too)."""
    low = str(uri).lower()
    for fmt, ends in FORMATS.items():
        if low.endswith(ends):
            return fmt
    return "parquet"


def read_rows(uri: str, fmt: str) -> pa.Table:
    """The rows of a GPX, JSON-lines, WFDB or Arrow IPC file as an Arrow table.

    Raises
    ------
    SourceError
        The file cannot be parsed (naming it), or the format's library is not installed.
    """
    readers = {"gpx": _gpx, "jsonl": _jsonl, "wfdb": _wfdb, "arrows": _arrows}
    try:
        return readers[fmt](str(uri))
    except FileNotFoundError:
        raise
    except SourceError:
        raise
    except ImportError as exc:
        raise SourceError(
            f"reading {fmt} needs the package {exc.name!r}: pip install 'kuration[formats]'",
            source=str(uri),
        ) from None
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise SourceError(f"cannot read {fmt}: {exc}", source=str(uri)) from exc


def _gpx(uri: str) -> pa.Table:
    import gpxpy
    import gpxpy.gpx

    try:
        with open(uri, encoding="utf-8") as fh:
            doc = gpxpy.parse(fh)
    except gpxpy.gpx.GPXException as exc:
        raise SourceError(f"cannot read gpx: {exc}", source=uri) from None
    cols: dict[str, list[Any]] = {k: [] for k in ("time", "track", "segment", "lat", "lon", "ele")}
    for ti, trk in enumerate(doc.tracks):
        name = trk.name or str(ti)
        for si, seg in enumerate(trk.segments):
            for p in seg.points:
                cols["time"].append(p.time)
                cols["track"].append(name)
                cols["segment"].append(si)
                cols["lat"].append(p.latitude)
                cols["lon"].append(p.longitude)
                cols["ele"].append(p.elevation)
    if not cols["time"]:
        raise SourceError("the GPX file has no track point", source=uri)
    deg = {"unit": "deg"}
    schema = pa.schema(
        [
            pa.field("time", pa.timestamp("us", tz="UTC")),
            pa.field("track", pa.string()),
            pa.field("segment", pa.int32()),
            pa.field("latitude", pa.float64(), metadata=deg),
            pa.field("longitude", pa.float64(), metadata=deg),
            pa.field("elevation", pa.float64(), metadata={"unit": "m"}),
        ]
    )
    arrays = [cols[k] for k in ("time", "track", "segment", "lat", "lon", "ele")]
    return pa.Table.from_arrays(
        [pa.array(a, f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema
    )


def flatten_structs(table: pa.Table) -> pa.Table:
    """Nested struct columns flattened by path (``a.b.c``) until none is left."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _jsonl(uri: str) -> pa.Table:
    import pyarrow.json as pajson

    try:
        table = pajson.read_json(uri)
    except pa.ArrowInvalid as exc:
        raise SourceError(
            f"cannot read JSON lines (one object per line): {exc}", source=uri
        ) from None
    return flatten_structs(table)


def record_files(header: str) -> list[str]:
    """The header and the signal files a WFDB record reads, as paths beside the header."""
    wfdb = import_wfdb()
    base = header[: -len(".hea")]
    with quiet_wfdb():
        head = wfdb.rdheader(base)
    folder = os.path.dirname(header)
    names = sorted(set(head.file_name or []))
    return [header, *(os.path.join(folder, n) for n in names)]


def record_sha256(header: str) -> str:
    """A WFDB record's identity: SHA-256 over each of its files' name and SHA-256.

    Raises
    ------
    SourceError
        A file of the record cannot be read.
    """
    import hashlib

    from ..core.jsonio import sha256_file

    h = hashlib.sha256()
    try:
        for f in record_files(header):
            h.update(f"{os.path.basename(f)}\0{sha256_file(f)}\n".encode())
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read the WFDB record: {exc}", source=header) from exc
    return h.hexdigest()


def _wfdb(uri: str) -> pa.Table:
    from ..core.units import parse_unit

    wfdb = import_wfdb()

    with quiet_wfdb():
        rec = wfdb.rdrecord(uri[: -len(".hea")], physical=True)
    if rec.p_signal is None or not rec.sig_name:
        raise SourceError("the WFDB record has no signal", source=uri)
    fs = float(rec.fs)
    n = rec.p_signal.shape[0]
    import numpy as np

    fields = [pa.field("time", pa.float64(), metadata={"unit": "s"})]
    arrays = [pa.array(np.arange(n, dtype=np.float64) / fs)]
    for j, name in enumerate(rec.sig_name):
        unit = (rec.units or [None] * len(rec.sig_name))[j]
        meta = None
        if unit:
            try:
                parse_unit(unit)
                meta = {"unit": unit}
            except Exception:  # a unit pint does not know stays undeclared
                meta = None
        fields.append(pa.field(name, pa.float64(), metadata=meta))
        arrays.append(pa.array(rec.p_signal[:, j]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _arrows(uri: str) -> pa.Table:
    with pa.OSFile(uri, "rb") as fh:
        return pa.ipc.open_stream(fh).read_all()


@contextlib.contextmanager
def quiet_wfdb() -> Iterator[None]:
    """Hide the deprecation warnings ``wfdb`` 4.3 triggers in pandas (not ours to fix)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", module=r"wfdb(\..*)?$")  # pandas' warnings, in wfdb
        yield


def import_wfdb() -> Any:
    """The ``wfdb`` module, imported without the pandas deprecation warnings it raises."""
    with quiet_wfdb():
        import wfdb
    return wfdb


def is_record(path: Path) -> bool:
    """Whether a path names a WFDB record header."""
    return str(path).lower().endswith(".hea")
