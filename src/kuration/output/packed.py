"""Packed output: shards packed into Parquet files of a target size, one folder per split.

One file per shard does not scale to millions of shards (per-file cost
dominates the write, object stores charge per request).  With
``OutputSpec(layout="packed")`` the shards of a split are written, in
manifest order, into ``<split>/part-00000.parquet``, ``part-00001.parquet``
...: one row per step, a row group holding one or more whole shards, a file
holding whole row groups.  The plan (which shard goes to which file, row
group and rows) is fixed before any source is read, from row counts and the
fixed-width row size (:func:`row_bytes`), so it is deterministic and a
resumed run knows each file's shards in advance.

Each shard entry of the manifest addresses its rows (``path`` of the file,
``row_group``, ``row_start`` within the file, ``n_rows``) and records the
``size`` and ``sha256`` of its *canonical row bytes* (:func:`shard_digest`),
which readers recompute from the decoded rows before returning them; the
manifest's ``files`` list records each file's size and SHA-256 (every byte,
footer included).  The layout is specified in ``docs/format.md``.

Each row group's columns are built at once, the shards of one source with one
gather from its grid (:mod:`kuration.output.packed_build`; per track where
an encoder hook or media frames need it), and written one row group at a
time with :class:`pyarrow.parquet.ParquetWriter` in a writer thread while a
digest thread hashes the row group's shards and the next row groups are
built (deterministic: one writer, row groups in order).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.track import Track
from ..errors import OutputSpecError
from .commit import fsync_file
from .packed_build import STRING_COLUMNS, ShardCut, batchable, cut_columns, row_group_digests
from .spec import OutputSpec
from .writer import ShardSlot, ShardWriter, shard_plan, track_arrays

__all__ = [
    "PACKED_FORMAT",
    "PackedFile",
    "encode_row_group",
    "file_digest",
    "pack_plan",
    "parquet_options",
    "row_bytes",
    "shard_digest",
    "write_packed_file",
]

PACKED_FORMAT = "kuration-packed/1"
#: dictionary pages are kept small, so a column of (nearly) unique values falls back to plain
#: encoding early instead of being dictionary-encoded row group by row group
DICT_PAGE_BYTES = 1 << 16
#: row groups built ahead of the Parquet writer and digest threads (each about row_group_bytes)
IN_FLIGHT = 3
#: the one column with min/max statistics (time-range queries prune row groups with it)
STATS_COLUMNS = ("_time_s",)


def parquet_options(schema: Any) -> dict[str, Any]:
    """The :class:`pyarrow.parquet.ParquetWriter` options of a packed file (``schema`` from
    :func:`arrow_schema`): snappy; dictionary encoding only for the scalar columns of few
    distinct values (strings, integers of at most 16 bits, ``_n_steps``; Parquet never
    dictionary-encodes booleans), since trying it on floats costs more than it saves
    (measured: 0.49 -> 0.31 CPU s for 2.5 M quickstart rows with statistics limited to
    :data:`STATS_COLUMNS`, files 8 % larger)."""
    import pyarrow as pa

    def few(f: Any) -> bool:
        t = f.type
        if pa.types.is_string(t) or f.name == "_n_steps":
            return True
        return pa.types.is_integer(t) and t.bit_width <= 16

    return {
        "compression": "snappy",
        "use_dictionary": [f.name for f in schema if few(f)],
        "write_statistics": list(STATS_COLUMNS),
        "dictionary_pagesize_limit": DICT_PAGE_BYTES,
    }


def row_bytes(spec: OutputSpec) -> int:
    """Fixed-width bytes of one step (row): every modality (itemsize x per-step size), plus
    ``_present`` (1), ``_time_s`` (8) and ``_n_steps`` (8); strings are not counted."""
    width = 8 + 8 + (1 if spec.presence_mask else 0)
    for m in spec.modalities.values():
        width += np.dtype(m.dtype).itemsize * int(np.prod(m.shape, dtype=np.int64))
        if m.route == "media":
            width += 1  # the frame mask _present_<name>
    return width


@dataclass
class PackedFile:
    """One planned packed file: its relative ``path``, ``split``, shard ``entries`` (in row
    order, each with ``row_group``, ``row_start`` and ``n_rows``) and rows per row group."""

    path: str
    split: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    row_groups: list[int] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.row_groups)


def _n_rows(entry: Mapping[str, Any], spec: OutputSpec) -> int:
    return spec.shard_length if entry["padded"] else int(entry["n_steps"])


def pack_plan(entries: Iterable[dict[str, Any]], spec: OutputSpec) -> list[PackedFile]:
    """Assign planned shard entries (in manifest order) to files and row groups.

    A row group is closed once its rows reach ``spec.row_group_bytes`` (at
    :func:`row_bytes` per row), a file once its rows reach
    ``spec.target_file_bytes``; a shard never spans two.  Each entry gets
    ``path`` (the file), ``row_group``, ``row_start``, ``n_rows`` and
    ``shard`` (the name it would have as a file of its own, without suffix).
    Files are numbered per split from ``part-00000.parquet``.
    """
    width = row_bytes(spec)
    files: list[PackedFile] = []
    cur: PackedFile | None = None
    rg_rows = 0
    for e in entries:
        split = e["split"]
        if cur is None or cur.split != split:
            n = sum(1 for f in files if f.split == split)
            cur = PackedFile(f"{split}/part-{n:05d}.parquet", split)
            files.append(cur)
            rg_rows = 0
        if not rg_rows:
            cur.row_groups.append(0)
        rows = _n_rows(e, spec)
        e["shard"] = e["path"].rsplit(".", 1)[0]
        e["path"] = cur.path
        e["row_group"] = len(cur.row_groups) - 1
        e["row_start"] = cur.rows
        e["n_rows"] = rows
        cur.entries.append(e)
        cur.row_groups[-1] += rows
        rg_rows += rows
        if rg_rows * width >= spec.row_group_bytes:
            rg_rows = 0
            if cur.rows * width >= spec.target_file_bytes:
                cur = None
    return files


def _digest_header(name: str, a: np.ndarray) -> bytes:
    kind = "str" if a.dtype.kind == "U" else a.dtype.newbyteorder("<").str
    shape = ",".join(str(s) for s in a.shape)
    return f"{name}\0{kind}\0{shape}\0".encode()


def _body(a: np.ndarray) -> memoryview | bytes:
    if a.dtype.kind == "U":
        return str(a.item()).encode()
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a).reshape(-1).data.cast("B")


def shard_digest(arrays: Mapping[str, np.ndarray]) -> tuple[int, str]:
    """Size and SHA-256 of a shard's canonical row bytes.

    The byte stream is, for every array in name order (code-point order):
    the name (UTF-8), NUL, the dtype (numpy ``str`` in little-endian form,
    e.g. ``<f8``, ``|b1``; ``str`` for the 0-d entity string), NUL, the
    shape as decimal numbers joined by ``,`` (empty for a scalar), NUL, the
    body length as an 8-byte little-endian unsigned integer, and the body:
    the C-order little-endian element bytes (bool as one byte 0/1), or the
    UTF-8 string.  ``arrays`` are the untrimmed arrays a reader returns for
    the shard (declared modalities, ``_present``, ``_time_s``, ``_n_steps``,
    ``_entity``, media frame masks).

    Returns
    -------
    size : int
        Length of the byte stream.
    sha256 : str
        Its hex SHA-256.
    """
    h = hashlib.sha256()
    size = 0
    for name in sorted(arrays):
        a = np.asarray(arrays[name])
        head = _digest_header(name, a)
        body = _body(a)
        n = len(body) if isinstance(body, bytes) else body.nbytes
        chunk = head + struct.pack("<Q", n)
        h.update(chunk)
        h.update(body)
        size += len(chunk) + n
    return size, h.hexdigest()


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    if a.shape[0] == rows:
        return a
    out = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def track_columns(writer: ShardWriter, track: Track) -> tuple[dict[str, np.ndarray], list[int]]:
    """A track's rows as packed columns (every shard's rows, pad rows included) and the row
    offset of each shard; built with whole-track numpy operations.

    Raises
    ------
    OutputSpecError, MediaError
        As :meth:`ShardWriter.iter_shard_arrays`.
    """
    spec = writer.spec
    slots = shard_plan(track.n_steps, spec)
    rows = [spec.shard_length if s.padded else s.n_steps for s in slots]
    offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    if any(m.route == "media" for m in spec.modalities.values()):
        return _media_columns(writer, track, slots, rows), [int(o) for o in offsets[:-1]]
    total = int(offsets[-1])
    stop = slots[-1].stop if slots else 0
    arrays = track_arrays(track, spec, writer.schema, writer.encoder)
    cols = {k: _pad_rows(v[:stop], total) for k, v in arrays.items()}
    if spec.presence_mask:
        cols["_present"] = _pad_rows(np.asarray(track.present[:stop], dtype=bool), total)
    first = track.k0 + track.start_idx
    time_s = np.arange(first, first + total, dtype=np.int64) / float(track.sample_hz)
    time_s[stop:] = np.nan
    cols["_time_s"] = time_s
    cols["_n_steps"] = np.repeat(np.array([s.n_steps for s in slots], np.int64), rows)
    return cols, [int(o) for o in offsets[:-1]]


def _media_columns(
    writer: ShardWriter, track: Track, slots: list[ShardSlot], rows: list[int]
) -> dict[str, np.ndarray]:
    """Media tracks: shard by shard (frames decoded per shard), then concatenated."""
    parts: dict[str, list[np.ndarray]] = {}
    for (_, chunk), n in zip(writer.iter_shard_arrays(track), rows, strict=True):
        for k, v in chunk.items():
            if k == "_entity":
                continue
            parts.setdefault(k, []).append(np.repeat(v, n) if v.ndim == 0 else v)
    return {k: np.concatenate(v) for k, v in parts.items()}


def shard_view(
    cols: Mapping[str, np.ndarray], start: int, n_rows: int, entity: str
) -> dict[str, np.ndarray]:
    """One shard's arrays (as a reader returns them) from packed columns, rows
    ``[start, start + n_rows)``."""
    out = {k: v[start : start + n_rows] for k, v in cols.items() if k not in STRING_COLUMNS}
    out["_n_steps"] = np.array(int(cols["_n_steps"][start]), dtype=np.int64)
    out["_entity"] = np.array(entity)
    return out


def arrow_schema(spec: OutputSpec, attrs: Mapping[str, Mapping[str, Any]]) -> Any:
    """The Arrow schema of a packed file: modalities in spec order (tensors as fixed-size
    lists), then ``_present``, media frame masks, ``_time_s``, ``_n_steps``, ``_entity``,
    ``_source``; field metadata ``kuration.shape`` and ``kuration.unit`` (JSON)."""
    import pyarrow as pa

    def meta(name: str, shape: Sequence[int]) -> dict[bytes, bytes]:
        out = {b"kuration.shape": json.dumps(list(shape)).encode()}
        unit = attrs.get(name, {}).get("unit")
        if unit is not None:
            out[b"kuration.unit"] = json.dumps(unit).encode()
        return out

    fields = []
    for name, m in spec.modalities.items():
        t = pa.from_numpy_dtype(np.dtype(m.dtype))
        width = int(np.prod(m.shape, dtype=np.int64))
        typ = pa.list_(t, width) if m.shape else t
        fields.append(pa.field(name, typ, nullable=False, metadata=meta(name, m.shape)))
    if spec.presence_mask:
        fields.append(pa.field("_present", pa.bool_(), nullable=False, metadata=meta("", [])))
    for name, m in spec.modalities.items():
        if m.route == "media":
            fields.append(pa.field(f"_present_{name}", pa.bool_(), nullable=False))
    fields.append(pa.field("_time_s", pa.float64(), nullable=False, metadata=meta("_time_s", [])))
    fields.append(pa.field("_n_steps", pa.int64(), nullable=False))
    for name in STRING_COLUMNS:
        fields.append(pa.field(name, pa.string(), nullable=False))
    doc = {"format": PACKED_FORMAT, "shard_length": spec.shard_length}
    return pa.schema(fields, metadata={b"kuration.packed": json.dumps(doc).encode()})


def _per_track(
    writer: ShardWriter, entries: Sequence[Mapping[str, Any]], track_of: Any, last: list[Any]
) -> dict[str, np.ndarray]:
    """The columns of ``entries`` built track by track (:func:`track_columns`): for encoder
    hooks and media frames, and for a batch that fails a check (so the error names its
    track and row).  ``last`` keeps the last built track across row groups."""
    parts: dict[str, list[np.ndarray]] = {}
    for e in entries:
        track = track_of(e)
        if not last or last[0] is not track:
            last[:] = [track, *track_columns(writer, track)]
        _, cols, offsets = last
        start = offsets[e["shard_index"]]
        if start + e["n_rows"] > len(cols["_time_s"]):
            raise OutputSpecError(f"internal: packed plan mismatch for {e['shard']!r}")
        for k, v in cols.items():
            parts.setdefault(k, []).append(v[start : start + e["n_rows"]])
    return {k: np.concatenate(v) for k, v in parts.items()}


def _group_columns(
    writer: ShardWriter, entries: list[dict[str, Any]], track_of: Any, cut_of: Any, last: list[Any]
) -> dict[str, np.ndarray]:
    """One row group's columns: the shards of each source built at once
    (:func:`~kuration.output.packed_build.cut_columns`), a failing batch track by track;
    all track by track without ``cut_of`` or for modalities that are not batchable."""
    if cut_of is None or not batchable(writer.spec):
        return _per_track(writer, entries, track_of, last)
    runs: list[list[ShardCut]] = []
    for e in entries:
        cut = cut_of(e)
        if runs and runs[-1][0].table is cut.table:
            runs[-1].append(cut)
        else:
            runs.append([cut])
    built = []
    for run in runs:
        try:
            built.append(cut_columns(writer.spec, run))
        except OutputSpecError:
            built.append(_per_track(writer, [c.entry for c in run], track_of, last))
    if len(built) == 1:
        return built[0]
    return {k: np.concatenate([b[k] for b in built]) for k in built[0]}


def _arrow_table(schema: Any, cols: Mapping[str, np.ndarray], entries: list[dict[str, Any]]) -> Any:
    """A row group's Arrow table from its columns and its shards' entity and source ids."""
    import pyarrow as pa

    reps = np.array([e["n_rows"] for e in entries], dtype=np.int64)
    idx = pa.array(np.repeat(np.arange(len(entries), dtype=np.int32), reps))
    arrays = []
    for f in schema:
        if f.name in STRING_COLUMNS:
            key = "entity_id" if f.name == "_entity" else "source_id"
            words = pa.array([e[key] for e in entries], pa.string())
            arrays.append(pa.DictionaryArray.from_arrays(idx, words).dictionary_decode())
        elif pa.types.is_fixed_size_list(f.type):
            flat = pa.array(np.ascontiguousarray(cols[f.name]).reshape(-1), f.type.value_type)
            arrays.append(pa.FixedSizeListArray.from_arrays(flat, f.type.list_size))
        else:
            arrays.append(pa.array(cols[f.name], f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def encode_row_group(
    pw: Any, schema: Any, cols: Mapping[str, np.ndarray], entries: list[dict[str, Any]]
) -> None:
    """Write one row group with ``pw`` (a :class:`pyarrow.parquet.ParquetWriter`): its Arrow
    table from the columns and the shards' entity and source ids, then its encoding."""
    table = _arrow_table(schema, cols, entries)
    pw.write_table(table, row_group_size=max(1, table.num_rows))


def _write_row_groups(
    pw: Any,
    schema: Any,
    plan: PackedFile,
    writer: ShardWriter,
    track_of: Any,
    cut_of: Any,
    hasher: Any,
) -> list[tuple[dict[str, Any], Future[list[tuple[int, str]]], int]]:
    """Write ``plan``'s row groups, each built at once (:func:`_group_columns`).  Its shard
    digests are computed by ``hasher`` and it is encoded (:func:`encode_row_group`) by a
    writer thread while the next ones are built: at most :data:`IN_FLIGHT` row groups
    ahead, encoded in order, so a slow thread on a busy machine does not stall the others.
    Returns each entry with its row group's digest future and its index there."""
    by_rg: dict[int, list[dict[str, Any]]] = {}
    for e in plan.entries:
        by_rg.setdefault(e["row_group"], []).append(e)
    pending: list[tuple[dict[str, Any], Future[list[tuple[int, str]]], int]] = []
    inflight: deque[tuple[Future[Any], Future[Any]]] = deque()
    last: list[Any] = []  # the last track built track by track
    with ThreadPoolExecutor(1, thread_name_prefix="kuration-parquet") as encoder:
        for rg in range(len(plan.row_groups)):
            entries = by_rg[rg]
            cols = _group_columns(writer, entries, track_of, cut_of, last)
            rows = [int(e["n_rows"]) for e in entries]
            starts = np.cumsum(rows) - rows
            ents = [str(e["entity_id"]) for e in entries]
            job = hasher.submit(row_group_digests, cols, starts, rows, ents)
            pending += [(e, job, i) for i, e in enumerate(entries)]
            while len(inflight) >= IN_FLIGHT:
                for f in inflight.popleft():
                    f.result()
            inflight.append((encoder.submit(encode_row_group, pw, schema, cols, entries), job))
        for futures in inflight:
            for f in futures:
                f.result()
    return pending


def _seal(tmp: Path, plan: PackedFile, fsync: bool) -> tuple[int, str]:
    """fsync (when asked), check the row groups Parquet wrote, and digest the file."""
    import pyarrow.parquet as pq

    if fsync:
        fsync_file(tmp)
    written = pq.ParquetFile(str(tmp)).metadata.num_row_groups
    if written != len(plan.row_groups):
        raise OutputSpecError(
            f"{plan.path}: Parquet split {len(plan.row_groups)} row groups into {written}; "
            "lower row_group_bytes"
        )
    return file_digest(tmp)


def write_packed_file(
    stage: Path,
    plan: PackedFile,
    writer: ShardWriter,
    track_of: Any,
    *,
    fsync: bool = False,
    cut_of: Any = None,
) -> dict[str, Any]:
    """Write one planned file under ``stage`` (temp file, then ``os.replace``), filling each
    entry's ``size`` and ``sha256`` (:func:`shard_digest`); returns the file record
    (``path``, ``split``, ``size``, ``sha256``, ``rows``, ``row_groups``, ``shards``).

    ``track_of(entry)`` returns the :class:`~kuration.contracts.track.Track` an entry's
    shard belongs to (the same object for the shards of one track); each track's columns
    are built once.  With ``cut_of(entry)`` (a
    :class:`~kuration.output.packed_build.ShardCut`: the shard's source grid and entity
    column) and field/segment modalities only, each row group is built at once
    (:func:`~kuration.output.packed_build.cut_columns`, the same columns); ``track_of``
    then serves only a batch that fails a check, to name its track and row.  Either way
    each row group's shard digests (:func:`~kuration.output.packed_build.row_group_digests`)
    and Parquet encoding run in two threads while the next row groups are built.

    Raises
    ------
    OutputSpecError
        A shard's rows do not match the plan (internal), or what building the columns raises.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(writer.spec, writer.attrs)
    final = stage / plan.path
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    try:
        # hashing releases the GIL: shard digests run in a thread beside the Parquet encoding
        with ThreadPoolExecutor(1, thread_name_prefix="kuration-digest") as hasher:
            with (
                pa.OSFile(str(tmp), "wb") as sink,
                pq.ParquetWriter(sink, schema, **parquet_options(schema)) as pw,
            ):
                pending = _write_row_groups(pw, schema, plan, writer, track_of, cut_of, hasher)
            for e, digests, i in pending:
                e["size"], e["sha256"] = digests.result()[i]
        size, sha = _seal(tmp, plan, fsync)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return {
        "path": plan.path,
        "split": plan.split,
        "size": size,
        "sha256": sha,
        "rows": plan.rows,
        "row_groups": list(plan.row_groups),
        "shards": len(plan.entries),
    }


def file_digest(path: Path) -> tuple[int, str]:
    """Size and SHA-256 of a file's bytes (read in 4 MiB blocks)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()
