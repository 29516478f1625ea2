"""Column fast paths of :class:`~kuration.sources.timeseries.TimeseriesAdapter`.

Reading a source onto the tick grid costs, besides Parquet's own decode, the
entity ids and the layout of every field.  Two shortcuts keep that overhead
small and in vectorised (GIL-releasing) Arrow and NumPy calls:

* text entity ids read dictionary-encoded (``read_dictionary``): the ids are
  checked and ranked on the dictionary, a few dozen values, and each row's
  code is one integer gather (:func:`dictionary_entity_codes`), instead of
  hashing every row's text;
* each field column is gathered once onto the ``(tick, entity)`` cells
  through a row index that points absent cells at a trailing NaN
  (:func:`cell_rows`, :func:`gather_cells`), instead of filling a NaN grid
  and scattering into it.

Both give exactly the arrays (and raise exactly the errors) of the general
path they shortcut.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import EntityIdError, SourceError

__all__ = [
    "cell_rows",
    "csv_parse_options",
    "dictionary_entity_codes",
    "event_flags",
    "first_padded",
    "float_column",
    "gather_cells",
    "narrow_codes",
    "numeric_except",
    "open_parquet",
    "padded_id_error",
    "parse_bytes",
    "pooled_empty",
    "read_partitioned",
]


def _first_true(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def dictionary_entity_codes(
    col: pa.ChunkedArray, dtype: str, name: str, src: str
) -> tuple[np.ndarray, tuple[Any, ...]] | None:
    """Entity codes and roster of a dictionary-encoded text id column, or None.

    Parameters
    ----------
    col : pyarrow.ChunkedArray
        The entity column as read.
    dtype : {"auto", "string", "int64"}
        The adapter's ``entity_dtype``; ``int64`` converts text and is left to
        the general path.
    name, src : str
        Column and source, for errors.

    Returns
    -------
    (codes, roster) or None
        ``codes``, shape (N,), int64: each row's index into ``roster``, the
        distinct ids in sorted text order (as the general path ranks text).
        None when the column is not dictionary-encoded text with distinct,
        non-null dictionary values (the general path then handles it).

    Raises
    ------
    EntityIdError
        A null or blank id, naming the column and the first such row.
    """
    typ = col.type
    if dtype == "int64" or not pa.types.is_dictionary(typ) or col.num_chunks == 0:
        return None
    if not (pa.types.is_string(typ.value_type) or pa.types.is_large_string(typ.value_type)):
        return None
    arr = col.chunk(0) if col.num_chunks == 1 else col.unify_dictionaries().combine_chunks()
    dictionary = arr.dictionary
    if dictionary.null_count or pc.count_distinct(dictionary).as_py() != len(dictionary):
        return None
    indices = arr.indices
    if indices.null_count:
        valid = np.asarray(indices.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        raise EntityIdError(
            "missing entity id (null)", source=src, column=name, row=_first_true(~valid)
        )
    idx = np.asarray(indices.to_numpy(zero_copy_only=False))
    blank = np.asarray(
        pc.equal(pc.utf8_trim_whitespace(dictionary), "").to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    if blank.any() and (r := _first_true(blank[idx])) is not None:
        raise EntityIdError("missing entity id (empty text)", source=src, column=name, row=r)
    padded = _padded(dictionary)
    if padded.any() and (r := _first_true(padded[idx])) is not None:
        raise padded_id_error(dictionary[int(idx[r])].as_py(), src, name, r)
    values = dictionary.to_pylist()
    used = np.flatnonzero(np.bincount(idx, minlength=len(values)))
    rank = sorted(used.tolist(), key=values.__getitem__)
    remap = np.zeros(len(values), dtype=np.int64)
    remap[rank] = np.arange(len(rank))
    return remap[idx], tuple(values[i] for i in rank)


def _padded(text: pa.Array) -> np.ndarray:
    """Which values of a text array start or end with white space, shape (N,), bool."""
    same = pc.equal(pc.utf8_trim_whitespace(text), text)
    return ~np.asarray(pc.fill_null(same, True).to_numpy(zero_copy_only=False), dtype=bool)


def padded_id_error(value: str, src: str, name: str, row: int) -> EntityIdError:
    """The error for a text id with surrounding blanks (``"0101de "``).

    Ids are compared as text, so a padded id is another entity than the same id
    unpadded: one aircraft would silently become two tracks.
    """
    return EntityIdError(
        f"entity id {value!r} starts or ends with white space: ids are compared as text, "
        f"so it would be another entity than {value.strip()!r} (strip the column, or "
        "declare entity_dtype 'int64' for integer ids)",
        source=src,
        column=name,
        row=row,
    )


def first_padded(text: pa.Array) -> int | None:
    """Index of the first value of a text array with surrounding white space, or None."""
    return _first_true(_padded(text))


def event_flags(col: pa.ChunkedArray, name: str, src: str) -> np.ndarray:
    """An event column as flags: true, false, or no value (null, NaN: no event).

    Accepted: booleans; integers and floats 0 and 1; text ``true``/``false``/``1``/``0``
    in any case.  Any other value is no flag: a column of event codes (``3``), a
    fraction (``0.5``) or text (``"yes"``) would otherwise raise the event silently, and
    a NaN (pandas' missing boolean) too.

    Returns
    -------
    ndarray, shape (N,), bool

    Raises
    ------
    SourceError
        Naming the column, the first row with another value and the value.
    """
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    typ = arr.type
    if pa.types.is_floating(typ):
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, typ), arr)
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        bad = pc.invert(pc.is_in(arr, value_set=pa.array([0, 1], typ)))
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
        bad = pc.invert(pc.is_in(low, value_set=pa.array(["true", "false", "1", "0"])))
        arr = low
    elif pa.types.is_boolean(typ) or pa.types.is_null(typ):
        bad = None
    else:
        raise SourceError(
            f"event column {name!r} has type {typ}, expected booleans (or 0/1)", source=src
        )
    if bad is not None and (r := _first_true(_filled(pc.and_(pc.is_valid(arr), bad)))) is not None:
        raise SourceError(
            f"event column {name!r} holds {col[r].as_py()!r}; an event is true or false "
            "(1 or 0; null or NaN: no event)",
            source=src,
            row=r,
        )
    flags = pc.fill_null(arr.cast(pa.bool_()), False)
    return np.asarray(flags.to_numpy(zero_copy_only=False), dtype=bool)


def _filled(mask: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def read_partitioned(path: str, entity_column: str | None) -> pa.Table:
    """A Hive-partitioned Parquet directory (``icao24=007/part-0.parquet``) as one table.

    Arrow infers a partition key's type from the directory names, so keys
    ``007`` and ``7`` both read as the integer 7: two entities merged into one,
    and text ids losing their leading zeros.  A partition key that is the
    entity column is therefore read as text, as a CSV id column is; the other
    keys keep Arrow's inference.
    """
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    _parquet_folder_only(path)
    found = pads.dataset(path, format="parquet", partitioning="hive").partitioning
    keys = found.schema if found is not None else pa.schema([])
    if entity_column is None or entity_column not in keys.names:
        return pq.read_table(path)
    text = pa.schema(
        [pa.field(f.name, pa.string()) if f.name == entity_column else f for f in keys]
    )
    return pq.read_table(path, partitioning=pads.partitioning(text, flavor="hive"))


def _parquet_folder_only(path: str) -> None:
    """A folder source is a partitioned Parquet dataset; one of other files (CSVs, say) is
    a :class:`SourceError` that says how to name its files, not a Parquet decode error."""
    files = [p for p in Path(path).rglob("*") if p.is_file() and not p.name.startswith(".")]
    if files and not any(p.suffix == ".parquet" for p in files):
        kinds = sorted({p.suffix or p.name for p in files})[:4]
        raise SourceError(
            f"a folder source is read as a partitioned Parquet dataset, and this one holds no "
            f".parquet file (it holds {', '.join(kinds)}); name its files instead, e.g. "
            f'"sources": {{"glob": "{Path(path).name}/*{kinds[0]}"}}',
            source=path,
        )


def csv_parse_options(uri: str) -> Any:
    """Arrow CSV parse options for a file: tab-separated for ``.tsv`` (and ``.tsv.gz``)
    names, which ``format="auto"`` reads as CSV, else comma-separated."""
    import pyarrow.csv as pacsv

    low = uri.lower()
    return pacsv.ParseOptions(delimiter="\t" if low.endswith((".tsv", ".tsv.gz")) else ",")


def float_column(col: pa.ChunkedArray) -> np.ndarray:
    """A numeric, boolean or null column as float64, nulls as NaN (zero-copy when it can).

    Returns
    -------
    ndarray, shape (N,), float64
        Read-only when it shares the column's buffer.
    """
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    if arr.type != pa.float64():
        # integers above 2**53 round here; integer fields also carry them exactly
        arr = pc.cast(arr, pa.float64(), safe=False)
    if arr.null_count:
        arr = pc.fill_null(arr, np.nan)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)


def cell_rows(n_rows: int, n_cells: int, cell: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Which row fills each ``(tick, entity)`` cell: ``kept[i]`` at ``cell[i]``, else ``n_rows``.

    Returns
    -------
    ndarray, shape (n_cells,), intp
        Row ``n_rows`` is the NaN row :func:`gather_cells` appends.
    """
    rows = pooled_empty((n_cells,), np.intp)
    rows.fill(n_rows)
    rows[cell] = kept
    return rows


def gather_cells(columns: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The field columns laid out on the cells, NaN where ``rows`` points past the end.

    Parameters
    ----------
    columns : list of ndarray, shape (N,), float64
        The field's components.
    rows : ndarray, shape (C,), intp
        From :func:`cell_rows`.

    Returns
    -------
    ndarray, shape (C, D), float64
    """
    n = columns[0].size
    if len(columns) == 1:  # one component: a 1-d gather (twice as fast as a row gather)
        ext = pooled_empty((n + 1,))
        ext[:n] = columns[0]
        ext[n] = np.nan
        return np.take(ext, rows, out=pooled_empty((rows.size,)), mode="clip")[:, None]
    ext = pooled_empty((n + 1, len(columns)))
    for j, c in enumerate(columns):
        ext[:n, j] = c
    ext[n] = np.nan
    out = pooled_empty((rows.size, len(columns)))
    return np.take(ext, rows, axis=0, out=out, mode="clip")


def pooled_empty(shape: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
    """An uninitialised, writable array in Arrow's memory pool.

    A table's arrays are large, short-lived and allocated source after source:
    NumPy gets each from a fresh ``mmap`` and pays a page fault per 4 KiB on
    first write, while Arrow's pool (mimalloc or jemalloc) hands freed pages
    back out already mapped.  The array owns its buffer (kept alive as its base).
    """
    count = int(np.prod(shape))
    item = np.dtype(dtype).itemsize
    buf = pa.allocate_buffer(max(count, 1) * item)
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)


#: text Arrow (and the CSV reader) would parse as a number: decimal, exponent, inf/nan
_NUMBER = r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|inf|infinity|nan)\s*$"


def first_non_number(col: pa.ChunkedArray) -> tuple[int, str] | None:
    """The first row of a text column holding something other than a number (nulls and
    empty cells are missing values, not errors), with its text; None when every row parses.
    Used to name the row and value when a numeric column arrived as text."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    text = pc.utf8_trim_whitespace(col)
    ok = pc.or_kleene(pc.match_substring_regex(col, _NUMBER, ignore_case=True), pc.equal(text, ""))
    bad = np.flatnonzero(~_filled(pc.fill_null(ok, True)))
    return None if not bad.size else (int(bad[0]), str(col[int(bad[0])].as_py()))


def numeric_except(col: pa.ChunkedArray | pa.Array, share: float = 0.9) -> np.ndarray | None:
    """Rows (0-based) of a text column that hold no number when at least ``share`` of its
    non-empty cells are numbers: a numeric column that a few bad cells turned into text.
    None for another column (not text, no bad cell, or mostly text)."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    filled = ~_filled(pc.fill_null(pc.equal(pc.utf8_trim_whitespace(col), ""), True))
    number = _filled(pc.fill_null(pc.match_substring_regex(col, _NUMBER, ignore_case=True), False))
    bad = np.flatnonzero(filled & ~number)
    n = int(filled.sum())
    if not bad.size or n - bad.size < share * n:
        return None
    return bad


def open_parquet(where: Any, dictionary: list[str]) -> Any:
    """A ``ParquetFile`` reading ``dictionary`` columns dictionary-encoded; a file without
    them (or with duplicated names) opens plainly and the caller's checks report it."""
    import pyarrow.parquet as pq

    if dictionary:
        try:
            return pq.ParquetFile(where, read_dictionary=dictionary)
        except (KeyError, pa.ArrowException):
            pass
    return pq.ParquetFile(where)


def narrow_codes(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Entity codes ``0 .. n_codes - 1`` in the narrowest integer type that holds them
    (numpy's stable sort of 8- and 16-bit integers is a radix sort)."""
    if n_codes <= np.iinfo(np.int16).max:
        return codes.astype(np.int16)
    return codes


def parse_bytes(
    buf: pa.Buffer,
    fmt: str,
    cols: list[str],
    src: str,
    text: list[str],
    dictionary: list[str],
) -> pa.Table:
    """One CSV or Parquet file's bytes (``buf``, read whole and already hashed), parsed.

    CSV columns ``text`` are read as text (an entity column: never ``0042`` -> 42; a time
    column with a ``time_format``: not Arrow's reading of it); Parquet decodes only
    ``cols`` when the file has them all once, with ``dictionary`` columns
    dictionary-encoded.  A compressed CSV (``.csv.gz``) is named by ``src``'s suffix.

    Raises
    ------
    pyarrow.ArrowInvalid, OSError
        Bytes that do not parse (the caller names the source).
    """
    if fmt == "csv":
        import pyarrow.csv as pacsv

        types = dict.fromkeys(text, pa.string())
        codec = _compression(src)  # a random-access reader parses faster than a stream
        where = pa.BufferReader(buf) if codec is None else pa.input_stream(buf, compression=codec)
        return pacsv.read_csv(
            where,
            parse_options=csv_parse_options(src),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
    # decode only the mapped columns (a file's other columns, e.g. text, cost more to
    # decode than the rest of the read); the caller's checks see them all
    with open_parquet(pa.BufferReader(buf), dictionary) as pf:
        names = pf.schema_arrow.names
        whole = not set(cols) <= set(names) or len(set(names)) < len(names)
        # one thread: a source is small, and the pipeline overlaps sources
        # (read-ahead thread, workers); Arrow's pool only adds hand-offs
        return pf.read(columns=None if whole else cols, use_threads=False)


def _compression(path: str) -> str | None:
    """The compression a file's name declares (``.gz``, ``.bz2``, ...), as Arrow names it."""
    try:
        return str(pa.Codec.detect(path).name)
    except (TypeError, ValueError, pa.ArrowInvalid):  # no compression suffix
        return None
