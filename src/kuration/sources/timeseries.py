"""TimeseriesAdapter: "columns of numbers" (CSV or Parquet) into ticks, with no per-dataset code.

Order and duplicate policy (applied per source, always before any windowing):

* Times are snapped to the schema's ``sample_hz`` grid: a row at ``t`` seconds
  lands on tick ``floor(t * sample_hz + 0.5)`` (a half step goes to the later
  tick); ``grid_offset_s`` moves that rounding boundary for rows stamped off the
  grid points (``floor((t - grid_offset_s) * sample_hz + 0.5)``), while tick ``k``
  keeps its time ``k / sample_hz``.  A row farther than ``snap_tolerance`` steps from its grid point is
  rejected (``SourceError`` naming the row).
* Rows whose time goes backwards within one entity (in file order) are sorted
  by time with a ``DataOrderWarning`` naming the first such row
  (``disorder="sort"``, the default), or rejected (``disorder="raise"``).
  Windows are never cut in file order.
* Two rows with the same raw time for the same entity are ambiguous and
  rejected by default (``duplicates="raise"``); ``"first"``/``"last"`` keep
  one by file order.
* Two distinct raw times of one entity that snap to the same tick collide.
  Collisions are counted per source (``TickTable.counts["snap_collisions"]``,
  recorded in ``config.json``).  ``collisions="nearest"`` (default) keeps the
  row nearest its grid point (ties: the earlier file row) and warns
  (:class:`SnapCollisionWarning`); ``"mean"`` averages float fields over the
  colliding rows (circular mean for angular fields; categorical, bitmask and
  integer fields keep the nearest row); ``"raise"`` rejects the source.
* Entity ids are text unless declared otherwise (``entity_dtype``): a CSV id
  column is read as text, so ``0042`` and ``42`` are two entities; a Parquet
  id column keeps its declared type (string, integer or float).  A missing id
  (null, NaN, empty or blank text) is an :class:`EntityIdError` naming the
  column and row.
* An entity with no row at a tick is *absent* there (``present`` false); its
  values are NaN, never zero.  A null value in a present row is NaN too
  (missing), while an infinite value is an error.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._csvline import csv_parse_error, row_place
from ..contracts.schema import FieldSpec, SchemaSpec
from ..contracts.tick import Tick, TickTable, is_int_field
from ..core.ids import ENTITY_DTYPES, entity_sort_key, tag_entity_id
from ..core.remote import is_url
from ..errors import AdapterError, DataOrderWarning, EntityIdError, SourceError
from ._columns import (
    cell_rows,
    dictionary_entity_codes,
    event_flags,
    first_non_number,
    first_padded,
    float_column,
    gather_cells,
    narrow_codes,
    padded_id_error,
    parse_bytes,
    read_partitioned,
)
from ._fieldcols import categorical_codes, int_values
from ._formats import FORMATS, format_of, read_rows, record_sha256
from ._header import check_columns
from ._retime import DUPLICATE_POLICIES, drop_timeless, resolve_duplicates
from ._rowmap import file_row, file_rows
from ._snap import (
    COLLISION_POLICIES,
    check_grid_offset,
    group_starts,
    merge_groups,
    snap_ticks,
    warn_dropped,
)
from ._timeunit import (
    check_epoch_unit,
    check_ns_range,
    parse_text_times,
    shown_time,
    text_time_error,
)
from ._units import declared_unit, to_field_unit
from .base import SOURCE_READER_TRAITS, InputAdapter, register_adapter
from .identity import SourceDigest, decode_between, read_source_bytes

__all__ = ["TimeseriesAdapter"]

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_INT64_MAX = 2**63 - 1


class TimeseriesAdapter(InputAdapter):
    """Read a CSV or Parquet file of rows ``(time, entity, columns...)``.

    Parameters
    ----------
    schema : SchemaSpec
    time_column : str
        Numeric time (in ``time_unit``) or an Arrow timestamp column.
    fields : mapping of field name to column name or list of column names
        A vector field is built from several columns, in component order.
        Every schema field must be mapped.
    entity_column : str, optional
        Column identifying the entity; without it the file is one entity ``0``.
    entity_dtype : {"auto", "string", "int64"}
        Type of the entity ids.  ``auto``: CSV ids are text (never inferred
        as numbers), Parquet ids keep the file's type; ``string``: ids are
        text (Parquet integers become their decimal text; float columns are
        refused); ``int64``: ids are integers (text must be an integer,
        floats must be integral).
    time_unit : {"s", "ms", "us", "ns"}
        Unit of a numeric time column.
    time_format : str, optional
        A strptime format for a time column held as text that is not ISO 8601
        (``"%Y/%m/%d %H:%M"``; ``%f`` and literal text, ``"%Y-%m-%d %H:%M:%S.%f%z [UTC]"``,
        are read by Python's strptime); naive times are UTC.  A date column is its
        midnight, UTC.  Given, a CSV's time column is read as text and this format reads
        it, even where Arrow would parse the text as times by itself.
    globals, events : mapping, optional
        Per-tick global fields (``name -> column``, last row of a tick wins)
        and event flags (``name -> boolean column``, any row raises it).
    format : {"auto", "csv", "parquet"}
        File format; ``auto`` goes by extension.
    snap_tolerance : float
        Largest distance from the grid, in steps (0.5 accepts every row).
    grid_offset_s : float
        Seconds in ``[0, 1 / sample_hz)`` the rounding boundaries move later: rows
        stamped mid-interval (100 Hz at 0.005, 0.015 s) take ``0.5 / sample_hz`` and
        land on tick ``k`` from ``k / sample_hz`` up to the next tick's time.
    disorder : {"sort", "raise"}
    duplicates : {"raise", "first", "last"}
    collisions : {"nearest", "mean", "raise"}
        What to do with rows of one entity that snap to one tick (see the
        module docstring); every policy counts them.

    Raises
    ------
    SchemaError, AdapterError
        On an invalid mapping (unmapped or unknown fields, bad policy).
    """

    name: ClassVar[str] = "timeseries"
    streams: ClassVar[bool] = True

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        time_column: str,
        fields: Mapping[str, str | Sequence[str]],
        entity_column: str | None = None,
        entity_dtype: str = "auto",
        time_unit: str = "s",
        time_format: str | None = None,
        globals: Mapping[str, str | Sequence[str]] | None = None,
        events: Mapping[str, str] | None = None,
        format: str = "auto",
        snap_tolerance: float = 0.5,
        disorder: str = "sort",
        duplicates: str = "raise",
        collisions: str = "nearest",
        missing_time: str = "raise",
        grid_offset_s: float = 0.0,
    ) -> None:
        super().__init__(schema)
        if time_unit not in _TIME_UNITS:
            raise AdapterError(
                f"time_unit must be one of {sorted(_TIME_UNITS)}, got {time_unit!r}",
                adapter="timeseries",
            )
        for opt, val, allowed in (
            ("format", format, ("auto", *FORMATS)),
            ("entity_dtype", entity_dtype, ENTITY_DTYPES),
            ("disorder", disorder, ("sort", "raise")),
            ("duplicates", duplicates, DUPLICATE_POLICIES),
            ("collisions", collisions, COLLISION_POLICIES),
            ("missing_time", missing_time, ("raise", "drop")),
        ):
            if val not in allowed:
                raise AdapterError(
                    f"{opt} must be one of {allowed}, got {val!r}", adapter="timeseries"
                )
        if not 0 <= snap_tolerance <= 0.5:
            raise AdapterError(
                f"snap_tolerance must be within [0, 0.5] steps, got {snap_tolerance!r}",
                adapter="timeseries",
            )
        self.time_column = time_column
        self.entity_column = entity_column
        self.entity_dtype = entity_dtype
        self.time_unit = time_unit
        self.time_format = time_format
        self.fields = {k: _as_cols(v) for k, v in fields.items()}
        self.globals = {k: _as_cols(v) for k, v in (globals or {}).items()}
        self.events = dict(events or {})
        self.format = format
        self.snap_tolerance = float(snap_tolerance)
        self.grid_offset_s = check_grid_offset(grid_offset_s, schema.sample_hz, "timeseries")
        self.disorder = disorder
        self.duplicates = duplicates
        self.collisions = collisions
        self.missing_time = missing_time
        declared = set(schema.field_names)
        unknown = set(self.fields) - declared
        if unknown:
            raise AdapterError(
                f"fields {sorted(unknown)} are not in the schema", adapter="timeseries"
            )
        missing = declared - set(self.fields)
        if missing:
            raise AdapterError(
                f"schema fields {sorted(missing)} have no column mapping", adapter="timeseries"
            )
        for name, cols in self.fields.items():
            f = schema.field(name)
            if len(cols) != f.dims:
                raise AdapterError(
                    f"field {name!r} has {f.dims} components but {len(cols)} columns",
                    adapter="timeseries",
                )
        glob_names = {g.name for g in schema.globals}
        if set(self.globals) - glob_names:
            raise AdapterError(
                f"globals {sorted(set(self.globals) - glob_names)} are not in the schema",
                adapter="timeseries",
            )
        if set(self.events) - set(schema.events):
            raise AdapterError(
                f"events {sorted(set(self.events) - set(schema.events))} are not in the schema",
                adapter="timeseries",
            )

    def options(self) -> dict[str, Any]:
        return {
            "time_column": self.time_column,
            "fields": {k: list(v) for k, v in self.fields.items()},
            "entity_column": self.entity_column,
            "entity_dtype": self.entity_dtype,
            "time_unit": self.time_unit,
            **({"time_format": self.time_format} if self.time_format else {}),
            "globals": {k: list(v) for k, v in self.globals.items()},
            "events": dict(self.events),
            "format": self.format,
            "snap_tolerance": self.snap_tolerance,
            "disorder": self.disorder,
            "duplicates": self.duplicates,
            "collisions": self.collisions,
            **({"missing_time": self.missing_time} if self.missing_time != "raise" else {}),
            **({"grid_offset_s": self.grid_offset_s} if self.grid_offset_s else {}),
        }

    # -- reading -----------------------------------------------------------------------
    def _read_arrow(
        self, uri: str, expect: SourceDigest | None = None
    ) -> tuple[pa.Table, SourceDigest]:
        """The mapped columns and the digest of the bytes they were parsed from: a CSV or
        Parquet file is read once, hashed and parsed from that buffer; other formats and
        partitioned folders are fingerprinted before and after their decode."""
        fmt = format_of(str(uri)) if self.format == "auto" else self.format
        if os.path.islink(uri):
            raise SourceError("refusing to read a symbolic link", source=str(uri))
        if os.path.isdir(uri) and not any(files for _, _, files in os.walk(uri)):
            raise SourceError("is a directory with no data files", source=str(uri))
        cols, sid = self._needed_columns(), self.source_id(uri)
        try:
            if fmt in ("csv", "parquet") and (is_url(uri) or not os.path.isdir(uri)):
                buf, got = read_source_bytes(str(uri), sid, expect)
                dictionary = self._dictionary_columns()
                table = parse_bytes(buf, fmt, cols, str(uri), self._text_columns(), dictionary)
            else:  # a partitioned folder, or a format read from its path (WFDB: two files)
                rows = fmt not in ("csv", "parquet")
                read = (
                    partial(read_rows, str(uri), fmt)
                    if rows
                    else partial(read_partitioned, uri, self.entity_column)
                )
                table, got = decode_between(uri, sid, self.fingerprint, expect, read)
        except (FileNotFoundError, SourceError):
            raise
        except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
            # a threaded parse names no row: a single-threaded reread names its file line
            why = csv_parse_error(str(uri)) if fmt == "csv" and not is_url(str(uri)) else None
            raise SourceError(f"cannot read {fmt}: {why or exc}", source=str(uri)) from exc
        names = table.column_names
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SourceError(f"duplicated column names {dupes}", source=str(uri))
        missing = [c for c in cols if c not in names]
        if missing:
            raise SourceError(f"missing columns {missing} (file has {names})", source=str(uri))
        return table.select(cols), got

    def fingerprint(self, uri: str) -> str:
        """As the base class; a WFDB record (``.hea``) by its header and signal files."""
        if format_of(str(uri)) == "wfdb" and not is_url(str(uri)):
            return record_sha256(str(uri))
        return super().fingerprint(uri)

    def check_sources(self, uris: Sequence[str]) -> None:
        """Every column the adapter names is in every source, from headers only."""
        fmts = [format_of(str(u)) if self.format == "auto" else self.format for u in uris]
        check_columns(list(uris), fmts, self._needed_columns())

    def _text_columns(self) -> list[str]:
        """CSV columns read as text: entity ids (never ``0042`` -> 42) and, with a
        ``time_format``, the time column, so the format reads it and not Arrow's guess."""
        ent = [self.entity_column] if self.entity_column else []
        return ent + ([self.time_column] if self.time_format else [])

    def _dictionary_columns(self) -> list[str]:
        """Columns worth reading dictionary-encoded: text entity ids (ranked and checked
        on the few distinct values, see :func:`._columns.dictionary_entity_codes`)."""
        return [self.entity_column] if self.entity_column and self.entity_dtype != "int64" else []

    def _needed_columns(self) -> list[str]:
        cols = [self.time_column]
        if self.entity_column:
            cols.append(self.entity_column)
        for group in (*self.fields.values(), *self.globals.values()):
            cols.extend(group)
        cols.extend(self.events.values())
        return list(dict.fromkeys(cols))

    def read_table(self, uri: str) -> TickTable:
        """Vectorised read of one file onto the grid (see the module docstring for the policy).

        Raises
        ------
        TimeRangeError
            For a time outside the int64-nanosecond range (a ``SourceError``).
        EntityIdError
            For a missing or unconvertible entity id (a ``SourceError``).
        SourceError
            Naming the source and the offending row for: unreadable files,
            missing or duplicated columns, null/non-finite times or entities,
            off-grid times, duplicated rows, backward time (``disorder="raise"``),
            epoch times read in a unit 1000x too coarse (``time_unit``),
            unknown categorical labels, infinite values, an event column value other
            than true/false/1/0, an empty file.
        """
        return self._read(uri, None)[0]

    def read_entities(self, uri: str, entity_ids: Iterable[Any]) -> TickTable:
        """The source's table with only the ``entity_ids`` laid out (see the base class).

        Every row is still read and checked as by :meth:`read_table` (so the
        same errors and warnings), and ``k0``, the ticks, globals and events are
        the whole source's; only the per-entity arrays are cut to the roster
        entries asked for (ids not in the source are ignored).

        Raises
        ------
        SourceError
            As :meth:`read_table`.
        """
        return self._read(uri, {tag_entity_id(e) for e in entity_ids})[0]

    def read_checked(
        self, uri: str, *, entities: Iterable[Any] | None = None, expect: SourceDigest | None = None
    ) -> tuple[TickTable, SourceDigest]:
        """As the base class, in one read (:meth:`_read_arrow`); raises as :meth:`read_table`
        and ``SourceChangedError`` for bytes other than ``expect``'s."""
        wanted = None if entities is None else {tag_entity_id(e) for e in entities}
        return self._read(uri, wanted, expect)

    def _read(
        self, uri: str, wanted: set[str] | None, expect: SourceDigest | None = None
    ) -> tuple[TickTable, SourceDigest]:
        """read_checked: the table (only the ``wanted`` tagged ids when given) and its digest."""
        src = str(uri)
        sid = self.source_id(uri)
        table, digest = self._read_arrow(uri, expect)
        if table.num_rows == 0:
            raise SourceError("the source has no rows (a header and nothing under it)", source=src)
        timeless, kept = 0, None  # missing_time="drop": the file rows left, for errors
        if self.missing_time == "drop":
            table, timeless, kept = drop_timeless(table, self.time_column)
        if table.num_rows == 0:
            raise SourceError(f"every row of the source lacks a time ({timeless})", source=src)
        with file_rows(src, kept):  # errors name the file's rows, not the kept ones
            return self._read_kept(table, timeless, kept, wanted, src, sid), digest

    def _read_kept(
        self,
        table: pa.Table,
        timeless: int,
        kept: np.ndarray | None,
        wanted: set[str] | None,
        src: str,
        sid: str,
    ) -> TickTable:
        """_read past the timeless rows: ``table`` holds the file rows ``kept``."""
        n = table.num_rows
        t_sec = self._times(table, src)
        ent_codes, roster = self._entities(table, src)
        hz = float(self.schema.sample_hz)
        rows = np.arange(n)

        k, off = snap_ticks(t_sec, hz, self.grid_offset_s)
        bad = np.flatnonzero(off > self.snap_tolerance + 1e-9)
        if bad.size:
            r = int(bad[0])
            raise SourceError(
                f"time {float(t_sec[r])!r} s is {off[r]:.3g} steps off the {hz:g} Hz grid "
                f"(snap_tolerance {self.snap_tolerance})",
                source=src,
                row=r,
            )

        # backward time within an entity, in file order (a stable sort by entity: rows of
        # one entity stay in file order)
        by_ent = np.argsort(narrow_codes(ent_codes, len(roster)), kind="stable")
        e_by = ent_codes[by_ent]
        same = e_by[1:] == e_by[:-1]
        back = same & (np.diff(t_sec[by_ent]) < 0)
        if back.any():
            r = int(by_ent[1:][back].min())
            msg = f"time goes backwards for entity {roster[ent_codes[r]]!r}"
            if self.disorder == "raise":
                raise SourceError(msg, source=src, row=r)
            at = row_place(src, file_row(kept, r))
            warnings.warn(
                f"{src}, {at}: {msg}; rows sorted by time", DataOrderWarning, stacklevel=3
            )

        if not pa.types.is_timestamp(table.schema.field(self.time_column).type):
            check_epoch_unit(t_sec, by_ent, same, hz, self.time_unit, self.time_column, src)

        # exact duplicates of (entity, time); rows sorted by (entity, time, row).  Without
        # backward time the rows of each entity already are in time order
        order = by_ent if not back.any() else np.lexsort((rows, t_sec, ent_codes))
        order, t_new, counts = resolve_duplicates(
            self.duplicates,
            order,
            t_sec,
            ent_codes,
            lambda r, n: self._dup_error(table, r, n, t_sec, roster[ent_codes[r]], src),
        )
        if t_new is not None:  # re-timed: snap the new times
            t_sec = t_new
            k, off = snap_ticks(t_sec, hz, self.grid_offset_s)

        order, starts = self._snap(order, k, off, ent_codes, roster, src)
        keep = None
        if wanted is not None:
            keep = np.array(
                [i for i, e in enumerate(roster) if tag_entity_id(e) in wanted], dtype=np.intp
            )
        more = {**counts, **({"timeless_dropped": timeless} if timeless else {})}
        args = (table, order, starts, k, ent_codes, roster, src, sid)
        return self._lay_out(*args, keep=keep, more_counts=more)

    def _dup_error(
        self, table: pa.Table, r: int, n: int, t_sec: np.ndarray, entity: Any, src: str
    ) -> SourceError:
        when = shown_time(table.column(self.time_column), r, float(t_sec[r]))
        return SourceError(
            f"duplicated (time, entity) row: entity {entity!r} at {when}; {n} row(s) repeat a "
            "time of their entity.  Set the adapter's duplicates option: 'first' or 'last' "
            "keeps one row, 'retime' re-times rows by row order (a clock coarser than the "
            "sampling)",
            source=src,
            row=r,
        )

    def _snap(
        self,
        order: np.ndarray,
        k: np.ndarray,
        off: np.ndarray,
        ent_codes: np.ndarray,
        roster: tuple[Any, ...],
        src: str,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows grouped by (entity, tick), nearest first, and each group's start.

        Raises
        ------
        SourceError
            With ``collisions="raise"``, for the first row that shares a tick.
        """
        # ``order`` is sorted by (entity, time, row), hence by (entity, tick): only the rows
        # of a collision group still need ordering (nearest first, ties by file row)
        starts = group_starts(ent_codes[order], k[order])
        if starts.size < order.size:
            order = order[np.lexsort((order, off[order], k[order], ent_codes[order]))]
        n_coll = order.size - starts.size
        if n_coll and self.collisions == "raise":
            extra = np.ones(order.size, dtype=bool)
            extra[starts] = False
            r = int(order[extra].min())
            raise SourceError(
                f"{n_coll} row(s) snap to a {self.schema.sample_hz:g} Hz tick already taken; "
                f"the first: entity {roster[ent_codes[r]]!r}",
                source=src,
                row=r,
            )
        if n_coll and self.collisions == "nearest":
            taken = np.unique(ent_codes[order[starts[np.diff(np.r_[starts, order.size]) > 1]]])
            warn_dropped(src, n_coll, float(self.schema.sample_hz), int(taken.size))
        return order, starts

    def _lay_out(
        self,
        table: pa.Table,
        order: np.ndarray,
        starts: np.ndarray,
        k: np.ndarray,
        ent_codes: np.ndarray,
        roster: tuple[Any, ...],
        src: str,
        sid: str,
        *,
        keep: np.ndarray | None = None,
        more_counts: Mapping[str, int] | None = None,
    ) -> TickTable:
        """The grouped rows as a TickTable (collisions merged by the policy); with ``keep``
        (sorted roster indices), only those entities' arrays; ``more_counts`` join its counts."""
        kept = order[starts]
        k_kept = k[kept]
        e_kept = ent_codes[kept]
        k0 = int(k_kept.min())
        n_t = int(k_kept.max()) - k0 + 1
        ti = k_kept - k0
        all_kept, all_ti = kept, ti  # globals are per tick: every entity's rows count
        sel = None
        if keep is not None:  # renumber the kept entities, drop the other groups
            code = np.full(len(roster), -1, dtype=np.int64)
            code[keep] = np.arange(keep.size)
            e_kept = code[e_kept]
            sel = np.flatnonzero(e_kept >= 0)
            kept, ti, e_kept = kept[sel], ti[sel], e_kept[sel]
            roster = tuple(roster[i] for i in keep)
        n_e = len(roster)
        cell = ti * n_e + e_kept  # flat (tick, entity) index of every kept row
        flat = np.zeros(n_t * n_e, dtype=bool)
        flat[cell] = True
        present = flat.reshape(n_t, n_e)
        values: dict[str, np.ndarray] = {}
        ints: dict[str, np.ndarray] = {}
        merged = self.collisions == "mean" and starts.size < order.size
        rows = None if merged else cell_rows(table.num_rows, n_t * n_e, cell, kept)
        for f in self.schema.fields:
            columns = self._field_columns(table, f, self.fields[f.name], src)
            if rows is not None:  # the nearest row of each group, gathered onto the cells
                arr = gather_cells(columns, rows)
            else:
                arr = np.full((n_t * n_e, f.dims), np.nan)
                data = np.stack(columns, axis=1)
                groups = merge_groups(data[order], starts, f, self.collisions)
                arr[cell] = groups if sel is None else groups[sel]
            values[f.name] = arr.reshape(n_t, n_e, f.dims)
            if is_int_field(f):  # exact integers: never averaged, the nearest row is kept
                exact = int_values(table, f, self.fields[f.name], src)
                flat = np.zeros((n_t * n_e, f.dims), dtype=exact.dtype)
                flat[cell] = exact[kept]
                ints[f.name] = flat.reshape(n_t, n_e, f.dims)
        glob: dict[str, np.ndarray] = {}
        for g in self.schema.globals:
            arr = np.full((n_t, g.dims), np.nan)
            if g.name in self.globals:
                data = self._field_values(table, g, self.globals[g.name], src)
                arr[all_ti] = data[all_kept]  # numpy assigns in order: the last row wins
                if is_int_field(g):
                    exact = int_values(table, g, self.globals[g.name], src)
                    ints[g.name] = np.zeros((n_t, g.dims), dtype=exact.dtype)
                    ints[g.name][all_ti] = exact[all_kept]
            elif is_int_field(g):
                ints[g.name] = np.zeros((n_t, g.dims), dtype=g.dtype)
            glob[g.name] = arr
        events: dict[str, np.ndarray] = {}
        for ev in self.schema.events:
            flag = np.zeros(n_t, dtype=bool)
            if ev in self.events:
                vals = event_flags(table.column(self.events[ev]), self.events[ev], src)
                np.logical_or.at(flag, k[order] - k0, vals[order])  # any row, collided or not
            events[ev] = flag
        counts = {"snap_collisions": int(order.size - starts.size), **(more_counts or {})}
        return TickTable(
            sid, self.schema, k0, roster, values, present, glob, events, counts=counts, ints=ints
        )

    def ticks(self, uri: str) -> Iterable[Tick]:
        return self.read_table(uri).iter_ticks()

    # -- column conversion ---------------------------------------------------------------
    def _times(self, table: pa.Table, src: str) -> np.ndarray:
        """Times in float64 seconds; every one must fit int64 nanoseconds since the epoch.

        Raises
        ------
        SourceError
            For a null or non-finite time, or a column that is neither numbers
            nor timestamps.
        TimeRangeError
            For a time outside 1677-09-21..2262-04-11 UTC (int64 ns), naming
            the column and row.
        """
        name = self.time_column
        col = table.column(name)
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
        if col.null_count:
            r = int(np.flatnonzero(np.asarray(col.is_null().to_numpy(zero_copy_only=False)))[0])
            raise SourceError(f"null time in column {name!r}", source=src, row=r)
        col = parse_text_times(col, self.time_format, name, src)  # dates, time_format
        if pa.types.is_timestamp(col.type):
            # Arrow stores UTC instants (naive timestamps are read as UTC): no local zone
            ns_per = _NS_PER[col.type.unit]
            raw = np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False))
            check_ns_range(raw, _INT64_MAX // ns_per, col, name, src)
            return np.asarray(raw * ns_per, dtype=np.float64) * 1e-9
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            raise text_time_error(col, name, src)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise SourceError(
                f"time column {name!r} has type {col.type}, expected numbers or timestamps",
                source=src,
            )
        raw = np.asarray(col.to_numpy(zero_copy_only=False))
        t = raw.astype(np.float64) * _TIME_UNITS[self.time_unit]
        bad = np.flatnonzero(~np.isfinite(t))
        if bad.size:
            raise SourceError(f"non-finite time {float(t[bad[0]])!r}", source=src, row=int(bad[0]))
        ns_per = _NS_PER[self.time_unit]
        limit = _INT64_MAX // ns_per if raw.dtype.kind in "iu" else _INT64_MAX / ns_per
        check_ns_range(raw, limit, col, name, src, self.time_unit)
        return t

    def _entities(self, table: pa.Table, src: str) -> tuple[np.ndarray, tuple[Any, ...]]:
        n = table.num_rows
        if not self.entity_column:
            return np.zeros(n, dtype=np.int64), (0,)
        col = table.column(self.entity_column)
        fast = dictionary_entity_codes(col, self.entity_dtype, self.entity_column, src)
        if fast is not None:
            return fast
        ids = _entity_array(col, self.entity_dtype, self.entity_column, src)
        enc = pc.dictionary_encode(ids)
        uniq = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        if pa.types.is_string(enc.dictionary.type):  # text ids: their tagged order is theirs
            rank = sorted(range(len(uniq)), key=uniq.__getitem__)
        else:
            rank = sorted(range(len(uniq)), key=lambda i: entity_sort_key(uniq[i]))
        remap = np.empty(len(uniq), dtype=np.int64)
        remap[rank] = np.arange(len(uniq))
        return remap[codes], tuple(uniq[i] for i in rank)

    def _field_values(
        self, table: pa.Table, f: FieldSpec, cols: Sequence[str], src: str
    ) -> np.ndarray:
        """The field's columns as float64 rows, shape (N, D)."""
        out = np.empty((table.num_rows, len(cols)), dtype=np.float64)
        for j, vals in enumerate(self._field_columns(table, f, cols, src)):
            out[:, j] = vals
        return out

    def _field_columns(
        self, table: pa.Table, f: FieldSpec, cols: Sequence[str], src: str
    ) -> list[np.ndarray]:
        """Each column of a field as float64, shape (N,) (zero-copy where it can), checked in
        column order.

        Raises
        ------
        SourceError
            A non-numeric column, an unknown categorical label or an infinite value,
            naming the column (and row); a unit the column declares that cannot be
            converted to the field's (:func:`~kuration.sources._units.to_field_unit`).
        """
        out = []
        for j, c in enumerate(cols):
            col = table.column(c)
            if f.kind == "categorical":
                out.append(categorical_codes(col, f, c, src))
                continue
            typ = col.type
            if not (
                pa.types.is_boolean(typ)
                or pa.types.is_integer(typ)
                or pa.types.is_floating(typ)
                or pa.types.is_null(typ)
            ):
                bad = first_non_number(col)
                raise SourceError(
                    f"column {c!r} of field {f.name!r} has type {typ}, expected numbers"
                    + ("" if bad is None else f": {bad[1]!r} is not a number"),
                    source=src,
                    row=None if bad is None else bad[0],
                )
            vals = float_column(col)
            inf = np.flatnonzero(np.isinf(vals))
            if inf.size:
                raise SourceError(f"infinite value in column {c!r}", source=src, row=int(inf[0]))
            out.append(to_field_unit(vals, declared_unit(table.schema, c), f, j, c, src))
        return out


def _first(mask: pa.Array | pa.ChunkedArray) -> int | None:
    """Index of the first true value of a boolean array (nulls count as false), or None."""
    hits = np.flatnonzero(np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False)))
    return int(hits[0]) if hits.size else None


def _entity_array(col: pa.ChunkedArray, dtype: str, name: str, src: str) -> pa.Array:
    """The id column as text, integers or finite floats (see ``entity_dtype``).

    Raises
    ------
    EntityIdError
        For a null, NaN, empty or blank id, a text id with surrounding white
        space (another entity than the id without it), a column type that cannot hold ids,
        or a value that does not convert to the declared ``dtype``.
    """
    arr = col.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()

    def fail(msg: str, row: int | None = None) -> EntityIdError:
        return EntityIdError(msg, source=src, column=name, row=row)

    if (r := _first(arr.is_null())) is not None:
        raise fail("missing entity id (null)", r)
    typ = arr.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        arr = arr.cast(pa.string())
        if (r := _first(pc.equal(pc.utf8_trim_whitespace(arr), ""))) is not None:
            raise fail("missing entity id (empty text)", r)
        if dtype == "int64":
            return _ids_to_int64(arr, fail)
        if (r := first_padded(arr)) is not None:
            raise padded_id_error(arr[r].as_py(), src, name, r)
        return arr
    if pa.types.is_floating(typ):
        if (r := _first(pc.invert(pc.is_finite(arr)))) is not None:
            raise fail(f"missing entity id ({arr[r].as_py()!r} in a float column)", r)
        if dtype == "string":
            raise fail(f"a {typ} column has no canonical text; declare entity_dtype 'int64'")
        return _ids_to_int64(arr, fail) if dtype == "int64" else arr
    if pa.types.is_integer(typ):
        if dtype == "string":
            return arr.cast(pa.string())
        return _ids_to_int64(arr, fail) if dtype == "int64" else arr
    raise fail(f"ids are text or integers, the column has type {typ}")


def _ids_to_int64(arr: pa.Array, fail: Any) -> pa.Array:
    bad = None
    if pa.types.is_string(arr.type):
        arr = pc.utf8_trim_whitespace(arr)
        bad = pc.invert(pc.match_substring_regex(arr, r"^[+-]?[0-9]+$"))
    elif pa.types.is_floating(arr.type):
        bad = pc.not_equal(pc.floor(arr), arr)
    if bad is not None and (r := _first(bad)) is not None:
        raise fail(f"entity id {arr[r].as_py()!r} is not an integer (entity_dtype int64)", r)
    try:
        return arr.cast(pa.int64())
    except (pa.ArrowInvalid, OverflowError):
        for r, v in enumerate(arr.to_pylist()):
            if not -(2**63) <= int(v) < 2**63:
                raise fail(f"entity id {v!r} is outside int64", r) from None
        raise


def _as_cols(v: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    cols = tuple(v)
    if not cols or not all(isinstance(c, str) for c in cols):
        raise AdapterError(
            f"a column mapping is a column name or a list of names, got {v!r}", adapter="timeseries"
        )
    return cols


register_adapter("timeseries", TimeseriesAdapter, execution_traits=SOURCE_READER_TRAITS)
