"""Lazy reading of one time-ordered source: blocks of complete ticks, never the whole file.

:class:`TickStream` reads a ``TimeseriesAdapter`` source in bounded pieces --
Parquet by record batch (:meth:`pyarrow.parquet.ParquetFile.iter_batches`),
CSV by block (:func:`pyarrow.csv.open_csv`) -- and yields
:class:`~kuration.contracts.tick.TickTable` *blocks*: consecutive runs of
complete ticks, laid out exactly as
:meth:`TimeseriesAdapter.read_table <kuration.sources.timeseries.TimeseriesAdapter.read_table>`
lays out the whole file (same snapping, collision policy, sentinels, integer
fields, events), over the whole source's entity roster.

Two passes over the file:

1. the roster scan reads only the entity column (ids checked as the
   whole-table path checks them) and sorts the distinct ids canonically;
2. :meth:`TickStream.blocks` reads the mapped columns batch by batch.  The
   rows of the last tick of a batch are carried into the next batch, so a
   tick whose rows straddle a batch boundary is snapped (collisions merged)
   exactly as in the whole-table read.

A bounded stream cannot sort or deduplicate a whole source, so the input must
be time-ordered in file order: a time that goes back is a
:class:`~kuration.errors.StreamOrderError` naming the file and row, whatever the
adapter's ``disorder`` policy.  Exact duplicates of (entity, time) are adjacent
in time-ordered input and follow the adapter's ``duplicates`` policy (``raise``,
the default, refuses them naming the row).  Every other bad input fails as the
whole-table read fails (same error class, naming the source and the row in
the file).

Memory: one decoded batch (``batch_rows`` rows of the mapped columns, plus the
carried rows of one tick) and its block; the roster holds one id per entity.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from .._csvline import csv_parse_error, csv_parse_line
from ..contracts.tick import Tick, TickTable
from ..core.ids import entity_sort_key
from ..errors import SourceError, StreamingError, StreamOrderError
from ._columns import csv_parse_options
from ._snap import group_starts, snap_ticks, warn_dropped
from .base import InputAdapter
from .timeseries import TimeseriesAdapter, _entity_array

__all__ = ["TickStream"]

#: Rows decoded at a time by default (one record batch / about one CSV block).
DEFAULT_BATCH_ROWS = 16_384
#: Arrow's error for a CSV value that does not fit its column's type (``Row #N`` only
#: when read on one thread)
_CONVERSION = re.compile(
    r"In CSV column #(?P<col>\d+): (?:Row #(?P<row>\d+): )?CSV conversion error to "
    r"(?P<type>[^:]+): invalid value '(?P<value>.*)'$",
    re.S,
)
#: what a value of a CSV column's type is, in words
_KINDS = {
    **{t: "a number" for t in ("double", "float", "int64", "int32", "uint64")},
    "bool": "true or false",
}


class TickStream:
    """Lazy tick blocks of one source read by a :class:`TimeseriesAdapter`.

    Parameters
    ----------
    adapter : InputAdapter
        A TimeseriesAdapter (any other raises StreamingError).
    uri : str
        A local CSV or Parquet file (a partitioned Parquet directory is refused).
    batch_rows : int
        Rows decoded per batch (Parquet record batches; CSV blocks are sized to
        hold about this many rows).

    Raises
    ------
    StreamingError
        For an adapter other than ``TimeseriesAdapter``, a directory or a bad ``batch_rows``.
    """

    def __init__(
        self, adapter: InputAdapter, uri: str, *, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> None:
        if not isinstance(adapter, TimeseriesAdapter):
            raise StreamingError(
                f"adapter {adapter.name!r} cannot read a source lazily (only 'timeseries' does)",
                step="adapter",
            )
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
            raise StreamingError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
        if os.path.isdir(uri):
            raise StreamingError(
                f"{uri} is a partitioned Parquet directory: it has no single row order to "
                "stream; pass its files in time order or run without streaming",
                step="source",
            )
        self.adapter = adapter
        self.uri = str(uri)
        self.source_id = adapter.source_id(uri)
        self.batch_rows = int(batch_rows)
        self.counts: dict[str, int] = {"snap_collisions": 0}
        self._roster: tuple[Any, ...] | None = None

    # -- raw batches -------------------------------------------------------------------
    def _format(self) -> str:
        fmt = self.adapter.format
        if fmt == "auto":
            low = self.uri.lower()
            fmt = "csv" if low.endswith((".csv", ".csv.gz", ".tsv")) else "parquet"
        return fmt

    def _batches(self, cols: list[str]) -> Iterator[pa.Table]:
        """The file's ``cols``, ``batch_rows`` rows at a time (CSV: one block at a time).

        Raises
        ------
        SourceError
            Unreadable file, missing or duplicated columns (as the whole-table read).
        """
        src = self.uri
        if os.path.islink(src):
            raise SourceError("refusing to read a symbolic link", source=src)
        fmt = self._format()
        try:
            if fmt == "csv":
                yield from self._csv_batches(cols)
            else:
                yield from self._parquet_batches(cols)
        except FileNotFoundError:
            raise
        except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
            why = csv_parse_error(src) if fmt == "csv" else None  # names the file line
            raise SourceError(f"cannot read {fmt}: {why or exc}", source=src) from exc

    def _check_names(self, names: list[str], cols: list[str]) -> None:
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SourceError(f"duplicated column names {dupes}", source=self.uri)
        missing = [c for c in cols if c not in names]
        if missing:
            raise SourceError(f"missing columns {missing} (file has {names})", source=self.uri)

    def _parquet_batches(self, cols: list[str]) -> Iterator[pa.Table]:
        import pyarrow.parquet as pq

        # pre_buffer off: pyarrow would otherwise keep the buffers of every row group read
        # so far (the whole file's column chunks by the end of the file)
        with pq.ParquetFile(self.uri, pre_buffer=False) as pf:
            self._check_names(pf.schema_arrow.names, cols)
            for batch in pf.iter_batches(batch_size=self.batch_rows, columns=cols):
                yield pa.Table.from_batches([batch])

    def _csv_batches(self, cols: list[str]) -> Iterator[pa.Table]:
        import pyarrow.csv as pacsv

        parse = csv_parse_options(self.uri)
        with pacsv.open_csv(
            self.uri, read_options=pacsv.ReadOptions(block_size=1 << 16), parse_options=parse
        ) as head:
            names = head.schema.names
            self._check_names(names, cols)
        # ids (and times with a time_format) are text, as in the whole-table read
        types = dict.fromkeys(self.adapter._text_columns(), pa.string())

        def open_reader(threads: bool = True) -> Any:
            return pacsv.open_csv(
                self.uri,
                read_options=pacsv.ReadOptions(
                    use_threads=threads, block_size=max(1 << 16, self.batch_rows * 64)
                ),
                parse_options=parse,
                convert_options=pacsv.ConvertOptions(column_types=types, include_columns=cols),
            )

        with open_reader() as reader:
            try:
                for batch in reader:
                    yield pa.Table.from_batches([batch])
            except pa.ArrowInvalid as exc:
                raise self._csv_error(exc, names, open_reader) from exc

    def _csv_error(self, exc: pa.ArrowInvalid, names: list[str], open_reader: Any) -> SourceError:
        """The error for a CSV block that does not read, naming the column and file line.

        A later block's value that does not fit the type Arrow gave the column from the
        first block (``9.9.9`` among floats) names no row in a threaded read; a
        single-threaded reread with the same options fails on the same value and names
        it.  Arrow numbers the file's columns; the error names the column.
        """
        bad = _CONVERSION.search(str(exc))
        if bad is not None:
            try:
                with open_reader(threads=False) as reader:
                    for _batch in reader:
                        pass
            except pa.ArrowInvalid as again:
                found = _CONVERSION.search(str(again))
                bad = found if found is not None and found.group("row") else bad
        if bad is not None and bad.group("row"):
            name, typ = names[int(bad.group("col"))], bad.group("type")
            kind = "a time" if typ.startswith(("timestamp", "date")) else _KINDS.get(typ)
            why = (
                f"not {kind or f'a {typ} value'} as the rows of the file's first block are; "
                "fix or blank that cell"
                if typ != "null"
                else "where the file's first block holds none (Arrow typed the column "
                "empty from it); read the file without --streaming"
            )
            return SourceError(
                f"column {name!r} holds {bad.group('value')!r} there, {why}",
                source=self.uri,
                row=int(bad.group("row")) - 2,  # Arrow counts records from 1, header first
            )
        msg = re.sub(
            r"In CSV column #(\d+)",
            lambda m: f"column {names[int(m.group(1))]!r}",
            csv_parse_error(self.uri) or csv_parse_line(str(exc), self.uri),
        )
        return SourceError(f"cannot read csv: {msg}", source=self.uri)

    # -- pass 1: the roster ------------------------------------------------------------
    @property
    def roster(self) -> tuple[Any, ...]:
        """Every entity id of the source in canonical order (read once, entity column only).

        Raises
        ------
        EntityIdError
            A missing or unconvertible id, naming the column and the file row.
        """
        if self._roster is None:
            self._roster = self._scan_roster()
        return self._roster

    def _scan_roster(self) -> tuple[Any, ...]:
        a = self.adapter
        if not a.entity_column:
            return (0,)
        seen: set[Any] = set()
        base = 0
        for tbl in self._batches([a.entity_column]):
            with _rows_from(base):
                ids = _entity_array(
                    tbl.column(a.entity_column), a.entity_dtype, a.entity_column, self.uri
                )
            seen.update(ids.unique().to_pylist())
            base += tbl.num_rows
        return tuple(sorted(seen, key=entity_sort_key))

    # -- pass 2: blocks ----------------------------------------------------------------
    def blocks(self) -> Iterator[TickTable]:
        """Consecutive blocks of complete ticks, in time order, over :attr:`roster`.

        Each block's ``k0`` is its own first tick; ``counts`` of the whole
        source are in :attr:`counts` once the iterator is exhausted.

        Raises
        ------
        StreamOrderError
            A time earlier than the row before it (names the file row).
        SourceError
            As :meth:`TimeseriesAdapter.read_table`: off-grid times, duplicated rows
            (``duplicates="raise"``), collisions (``collisions="raise"``), bad values,
            an empty file.
        """
        roster = self.roster
        index = {e: i for i, e in enumerate(roster)}
        a = self.adapter
        self.counts = {"snap_collisions": 0}
        taken: set[int] = set()
        carry: pa.Table | None = None
        carry_base, base, last_t = 0, 0, -np.inf
        for tbl in self._batches(a._needed_columns()):
            base += tbl.num_rows
            pending = tbl if carry is None else pa.concat_tables([carry, tbl])
            if pending.num_rows == 0:
                continue
            with _rows_from(carry_base):
                block, cut, last_t = self._complete(pending, index, last_t, carry_base, taken)
            carry = pending.slice(cut)
            carry_base += cut
            if block is not None:
                yield block
        if carry is None or carry.num_rows == 0:
            if base == 0:
                raise SourceError("the source has no rows", source=self.uri)
        else:
            with _rows_from(carry_base):
                block, _, _ = self._complete(carry, index, last_t, carry_base, taken, final=True)
            if block is not None:
                yield block
        n = self.counts["snap_collisions"]
        if n and a.collisions == "nearest":
            warn_dropped(self.uri, n, float(a.schema.sample_hz), len(taken))

    def ticks(self) -> Iterator[Tick]:
        """The source as :class:`Tick` objects, lazily (one block resident)."""
        for block in self.blocks():
            yield from block.iter_ticks()

    def _complete(
        self,
        tbl: pa.Table,
        index: dict[Any, int],
        last_t: float,
        base: int,
        taken: set[int],
        *,
        final: bool = False,
    ) -> tuple[TickTable | None, int, float]:
        """The block of ``tbl``'s complete ticks, how many rows it used, the last time seen.

        Rows of the last tick are left for the next batch unless ``final``.
        Row numbers in errors are relative to ``tbl`` (the caller adds ``base``).
        """
        a, src = self.adapter, self.uri
        t_sec = a._times(tbl, src)
        back = np.flatnonzero(np.diff(np.r_[last_t, t_sec]) < 0)
        if back.size:
            r = int(back[0])
            before = float(t_sec[r - 1]) if r else float(last_t)
            raise StreamOrderError(
                f"time goes backwards ({before!r} s, then {float(t_sec[r])!r} s): "
                "streaming=True needs time-ordered input (sort the file by time, or run "
                "without streaming)",
                source=src,
                row=r,
            )
        hz = float(a.schema.sample_hz)
        k, off = snap_ticks(t_sec, hz, a.grid_offset_s)
        bad = np.flatnonzero(off > a.snap_tolerance + 1e-9)
        if bad.size:
            r = int(bad[0])
            raise SourceError(
                f"time {float(t_sec[r])!r} s is {off[r]:.3g} steps off the {hz:g} Hz grid "
                f"(snap_tolerance {a.snap_tolerance})",
                source=src,
                row=r,
            )
        cut = tbl.num_rows if final else int(np.searchsorted(k, k[-1], side="left"))
        if cut == 0:
            return None, 0, last_t
        part = tbl.slice(0, cut)
        ent = self._codes(part, index)
        k, off, t_part = k[:cut], off[:cut], t_sec[:cut]
        order = self._deduplicated(t_part, ent, index)
        order, starts = self._snap(order, k, off, ent, taken)
        block = a._lay_out(part, order, starts, k, ent, self.roster, src, self.source_id)
        self.counts["snap_collisions"] += int(order.size - starts.size)
        return block, cut, float(t_part[-1])

    def _codes(self, part: pa.Table, index: dict[Any, int]) -> np.ndarray:
        """Each row's position in the source roster, shape (N,), int64."""
        a = self.adapter
        if not a.entity_column:
            return np.zeros(part.num_rows, dtype=np.int64)
        codes, local = a._entities(part, self.uri)
        remap = np.fromiter((index[e] for e in local), dtype=np.int64, count=len(local))
        return remap[codes]

    def _deduplicated(self, t: np.ndarray, ent: np.ndarray, index: dict[Any, int]) -> np.ndarray:
        """Row order by (entity, time, row) with exact duplicates resolved by the policy."""
        rows = np.arange(t.size)
        order = np.lexsort((rows, t, ent))
        e_s, t_s = ent[order], t[order]
        dup = (e_s[1:] == e_s[:-1]) & (t_s[1:] == t_s[:-1])
        if not dup.any():
            return order
        policy = self.adapter.duplicates
        if policy == "raise":
            r = int(order[1:][dup].min())
            roster = tuple(index)
            raise SourceError(
                f"duplicated (time, entity) row: entity {roster[ent[r]]!r} at {float(t[r])!r} s",
                source=self.uri,
                row=r,
            )
        keep = np.ones(order.size, dtype=bool)
        if policy == "first":
            keep[1:][dup] = False
        else:
            keep[:-1][dup] = False
        return order[keep]

    def _snap(
        self, order: np.ndarray, k: np.ndarray, off: np.ndarray, ent: np.ndarray, taken: set[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows grouped by (entity, tick), nearest first, and each group's start (the
        whole-table policy; the ``nearest`` warning is emitted once, after the last block)."""
        a = self.adapter
        order = order[np.lexsort((order, off[order], k[order], ent[order]))]
        starts = group_starts(ent[order], k[order])
        n_coll = order.size - starts.size
        if n_coll and a.collisions == "raise":
            extra = np.ones(order.size, dtype=bool)
            extra[starts] = False
            r = int(order[extra].min())
            raise SourceError(
                f"{n_coll} row(s) snap to a {a.schema.sample_hz:g} Hz tick already taken; "
                f"the first: entity {self.roster[ent[r]]!r}",
                source=self.uri,
                row=r,
            )
        if n_coll:
            multi = starts[np.diff(np.r_[starts, order.size]) > 1]
            taken.update(int(e) for e in np.unique(ent[order[multi]]))
        return order, starts


class _rows_from:
    """Context manager adding ``base`` to the row of a :class:`SourceError` raised inside,
    so a row counted within a batch names the row in the file."""

    def __init__(self, base: int) -> None:
        self.base = base

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> None:
        if not isinstance(exc, SourceError) or exc.row is None or not self.base:
            return
        row = exc.row + self.base
        moved = copy.copy(exc)
        msg = str(exc.args[0]) if exc.args else ""
        moved.args = (msg.replace(f", row {exc.row}:", f", row {row}:", 1), *exc.args[1:])
        moved.row = row
        raise moved.with_traceback(tb) from None
