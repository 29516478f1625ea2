"""The control plane: one immutable DuckDB file (``control.duckdb``) per version.

Tables
------
``records(idx, id, metadata)``
    One row per record; ``idx`` is the read order, ``metadata`` JSON text.
``signals(record_idx, ordinal, name, spec, storage, file, row_offset, length,
null_count, times_file, times_offset)``
    One row per signal instance. ``spec`` is the JSON of a :class:`SignalSpec`;
    values are rows ``[row_offset, row_offset + length)`` of ``file``; explicit
    timestamps (if any) start at ``times_offset`` of ``times_file``.
``annotations(id, record_idx, signal, start_ns, stop_ns, kind, content)``
    ``stop_ns`` is NULL for point annotations, ``signal`` NULL for
    record-level ones; ``content`` is the JSON of a content descriptor.
``tasks(id, record_idx, name, kind, content)``
    Supervised targets per record.
``lineage(kind, parent, parent_id, child_id)``
    For a dataset built on parents: the parent release (``org/name@version``)
    and id of every imported record, annotation or task, and the id of its
    copy here. Empty otherwise (absent from catalogs written before it).
``info(key, value)``
    Format name and version, and the DuckDB storage version of the file.

The file is written once by :class:`timenet.TimeFWriter` and only ever opened
with ``read_only=True`` afterwards. It is written in DuckDB storage version
:data:`STORAGE_VERSION` (storage format number 64), so DuckDB 1.0 and newer,
the 1.x command line tool included, open it; DuckDB 2 keeps the storage version
of the file it opens, so copying the shipped empty catalog (created with
:func:`create_empty_catalog`) fixes it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from timenet._jsonio import loads_strict
from timenet.records import Annotation, Record, Task
from timenet.specs import SignalSpec, content_from_dict

_DDL = """
CREATE TABLE info (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE records (idx BIGINT PRIMARY KEY, id VARCHAR NOT NULL UNIQUE, metadata VARCHAR NOT NULL);
CREATE TABLE signals (
    record_idx BIGINT NOT NULL, ordinal INTEGER NOT NULL, name VARCHAR NOT NULL,
    spec VARCHAR NOT NULL, storage VARCHAR NOT NULL, file VARCHAR NOT NULL,
    row_offset BIGINT NOT NULL, length BIGINT NOT NULL, null_count BIGINT NOT NULL,
    times_file VARCHAR, times_offset BIGINT,
    PRIMARY KEY (record_idx, name)
);
CREATE TABLE annotations (
    id BIGINT PRIMARY KEY, record_idx BIGINT NOT NULL, signal VARCHAR,
    start_ns BIGINT NOT NULL, stop_ns BIGINT, kind VARCHAR NOT NULL, content VARCHAR NOT NULL
);
CREATE TABLE tasks (
    id BIGINT PRIMARY KEY, record_idx BIGINT NOT NULL, name VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, content VARCHAR NOT NULL
);
CREATE TABLE lineage (
    kind VARCHAR NOT NULL, parent VARCHAR NOT NULL, parent_id VARCHAR NOT NULL,
    child_id VARCHAR NOT NULL, PRIMARY KEY (kind, parent, parent_id)
);
"""

_COLUMNS: dict[str, list[tuple[str, pa.DataType]]] = {
    "records": [("idx", pa.int64()), ("id", pa.string()), ("metadata", pa.string())],
    "signals": [
        ("record_idx", pa.int64()),
        ("ordinal", pa.int32()),
        ("name", pa.string()),
        ("spec", pa.string()),
        ("storage", pa.string()),
        ("file", pa.string()),
        ("row_offset", pa.int64()),
        ("length", pa.int64()),
        ("null_count", pa.int64()),
        ("times_file", pa.string()),
        ("times_offset", pa.int64()),
    ],
    "annotations": [
        ("id", pa.int64()),
        ("record_idx", pa.int64()),
        ("signal", pa.string()),
        ("start_ns", pa.int64()),
        ("stop_ns", pa.int64()),
        ("kind", pa.string()),
        ("content", pa.string()),
    ],
    "tasks": [
        ("id", pa.int64()),
        ("record_idx", pa.int64()),
        ("name", pa.string()),
        ("kind", pa.string()),
        ("content", pa.string()),
    ],
    "lineage": [
        ("kind", pa.string()),
        ("parent", pa.string()),
        ("parent_id", pa.string()),
        ("child_id", pa.string()),
    ],
}


_TEMPLATE = Path(__file__).with_name("_catalog_template.duckdb")

#: DuckDB storage version of every catalog: the oldest DuckDB 2 can write, readable by
#: DuckDB 1.0 and every later release (file header storage number 64).
STORAGE_VERSION = "v1.0.0"


#: Settings of the catalog write.  One thread keeps the row order and the checkpoint layout
#: fixed.  FSST string compression is switched off: it reads uninitialised heap memory while
#: it analyses and encodes a column at the checkpoint (duckdb/duckdb#7433, #23382), so
#: whether a VARCHAR column is stored as FSST, and the FSST bytes themselves, depended on
#: what the process had allocated before -- the same rows gave different ``control.duckdb``
#: bytes from one write to the next.  The codecs left (dictionary, RLE, bit packing,
#: constant, uncompressed) are chosen from the data alone.  ``disabled_compression_methods``
#: is a ``SET``: DuckDB ignores it in ``connect(config=...)``.
_WRITE_SETTINGS = {"threads": "1", "disabled_compression_methods": "fsst"}


def create_empty_catalog(path: Path) -> None:
    """Create an empty DuckDB database in storage version :data:`STORAGE_VERSION`.

    The shipped ``_catalog_template.duckdb`` was made with this function.  DuckDB
    stamps random bytes into every new file, so it is made once and copied by
    :func:`write_catalog` rather than created per build.
    """
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute("ATTACH ? AS catalog (STORAGE_VERSION ?)", [str(path), STORAGE_VERSION])
        con.execute("DETACH catalog")
    finally:
        con.close()


def write_catalog(path: Path, rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """Create ``control.duckdb`` at ``path`` holding ``rows`` per table."""
    import duckdb

    # DuckDB stamps a random id into every new file; starting from one shipped empty database
    # (and writing on one thread) makes the same rows give the same bytes on every build
    shutil.copyfile(_TEMPLATE, path)
    con = duckdb.connect(str(path), config={"threads": 1})
    try:
        for name, value in _WRITE_SETTINGS.items():
            con.execute(f"SET {name} = '{value}'")
            got = con.execute("SELECT current_setting(?)", [name]).fetchone()
            if got is None or str(got[0]).lower() != value:
                raise RuntimeError(f"DuckDB did not take {name}={value!r} (got {got!r})")
        con.execute(_DDL)
        con.execute(
            "INSERT INTO info VALUES ('format', 'timef'), ('format_version', '1'), "
            "('duckdb_storage_version', ?)",
            [STORAGE_VERSION],
        )
        for table, cols in _COLUMNS.items():
            data = rows.get(table, [])
            if not data:
                continue
            columns = list(zip(*data, strict=True))
            arrow = pa.table(
                {name: pa.array(col, type=t) for (name, t), col in zip(cols, columns, strict=True)}
            )
            con.register("_incoming", arrow)
            con.execute(f"INSERT INTO {table} SELECT * FROM _incoming")
            con.unregister("_incoming")
        con.execute("CHECKPOINT")
    finally:
        con.close()


class SignalRow(NamedTuple):
    """Catalog row of one signal instance (internal)."""

    name: str
    spec: SignalSpec
    storage: str
    file: str
    row_offset: int
    length: int
    null_count: int
    times_file: str | None
    times_offset: int | None


class Catalog:
    """Read-only view of ``control.duckdb`` with the record/signal index cached in memory."""

    def _json(self, text: str, what: str) -> Any:
        """A JSON value stored in the catalog, parsed strictly (see :mod:`timenet._jsonio`)."""
        return loads_strict(text, what=f"{self.path}: {what}")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._con: Any = None
        self._records: list[Record] | None = None
        self._by_id: dict[str, int] = {}
        self._signals: list[dict[str, SignalRow]] = []

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_con"] = None
        return state

    def _connect(self) -> Any:
        if self._con is None:
            import duckdb

            self._con = duckdb.connect(str(self.path), read_only=True)
        return self._con

    def close(self) -> None:
        """Close the DuckDB connection (the cached index stays usable)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a read-only query and return all rows."""
        return list(self._connect().execute(sql, params or []).fetchall())

    def _load_index(self) -> None:
        con = self._connect()
        recs = con.execute("SELECT idx, id, metadata FROM records ORDER BY idx").fetchnumpy()
        sigs = con.execute(
            "SELECT record_idx, name, spec, storage, file, row_offset, length, null_count, "
            "times_file, times_offset FROM signals ORDER BY record_idx, ordinal"
        ).fetchnumpy()
        specs: dict[str, SignalSpec] = {}
        per_record: list[dict[str, SignalRow]] = [{} for _ in range(len(recs["idx"]))]
        cols = [
            sigs[c].tolist()
            for c in (
                "record_idx",
                "name",
                "spec",
                "storage",
                "file",
                "row_offset",
                "length",
                "null_count",
                "times_file",
                "times_offset",
            )
        ]
        for ridx, name, spec_json, storage, file, off, length, nulls, tfile, toff in zip(
            *cols, strict=True
        ):
            spec = specs.get(spec_json)
            if spec is None:
                spec = specs[spec_json] = SignalSpec.from_dict(
                    self._json(spec_json, f"signal {name!r} spec")
                )
            per_record[ridx][name] = SignalRow(
                name, spec, storage, file, off, length, nulls, tfile, toff
            )
        self._records = [
            Record(rid, idx, self._json(meta, f"record {rid!r} metadata"), tuple(per_record[idx]))
            for idx, rid, meta in zip(
                recs["idx"].tolist(), recs["id"].tolist(), recs["metadata"].tolist(), strict=True
            )
        ]
        self._by_id = {r.id: r.index for r in self._records}
        self._signals = per_record

    @property
    def records(self) -> list[Record]:
        """All records in read order."""
        if self._records is None:
            self._load_index()
        assert self._records is not None
        return self._records

    def index_of(self, record_id: str) -> int | None:
        """Read-order index of ``record_id`` or ``None``."""
        _ = self.records
        return self._by_id.get(record_id)

    def signal_rows(self, index: int) -> dict[str, SignalRow]:
        """Signal rows of the record at ``index``, keyed by name in write order."""
        _ = self.records
        return self._signals[index]

    def annotations(
        self, record_index: int | None = None, signal: str | None = None
    ) -> list[Annotation]:
        """Annotations, optionally filtered by record and signal."""
        where: list[str] = []
        params: list[Any] = []
        if record_index is not None:
            where.append("a.record_idx = ?")
            params.append(record_index)
        if signal is not None:
            where.append("a.signal = ?")
            params.append(signal)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        rows = self.query(
            "SELECT a.id, r.id, a.start_ns, a.stop_ns, a.content, a.signal FROM annotations a "
            f"JOIN records r ON r.idx = a.record_idx{clause} ORDER BY a.id",
            params,
        )
        return [
            Annotation(
                aid,
                rid,
                start,
                stop,
                content_from_dict(self._json(content, f"annotation {aid!r}")),
                sig,
            )
            for aid, rid, start, stop, content, sig in rows
        ]

    def child_id(self, kind: str, parent: str, parent_id: str) -> str | None:
        """Id of the copy of a parent object (``None`` if it was not imported)."""
        has = self.query(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'lineage'"
        )
        if not has[0][0]:
            return None
        rows = self.query(
            "SELECT child_id FROM lineage WHERE kind = ? AND parent = ? AND parent_id = ?",
            [kind, parent, str(parent_id)],
        )
        return str(rows[0][0]) if rows else None

    def tasks(self, record_index: int | None = None, name: str | None = None) -> list[Task]:
        """Tasks, optionally filtered by record and task name."""
        where: list[str] = []
        params: list[Any] = []
        if record_index is not None:
            where.append("t.record_idx = ?")
            params.append(record_index)
        if name is not None:
            where.append("t.name = ?")
            params.append(name)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        rows = self.query(
            "SELECT t.id, r.id, t.name, t.content FROM tasks t "
            f"JOIN records r ON r.idx = t.record_idx{clause} ORDER BY t.id",
            params,
        )
        return [
            Task(tid, rid, tname, content_from_dict(self._json(content, f"task {tid!r}")))
            for tid, rid, tname, content in rows
        ]
