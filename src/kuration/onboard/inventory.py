"""What ``kur init`` learns from its inputs before it proposes a job.

:func:`inventory_files` profiles CSV/Parquet files (read as the timeseries
adapter reads them: pyarrow's CSV inference, Parquet as stored);
:func:`inventory_timenet` profiles a TimeNet version from its catalog.  Both
return an :class:`Inventory`: the time and entity columns with the evidence
for each, the candidate field columns with their units (metadata, else a unit
bracket ending the header), the time steps between consecutive times of one
entity, and every track's length.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._csvline import csv_parse_error, row_place
from ..core.units import parse_unit
from ..errors import InitError
from .guess import Column, check_unit, counter_step, step_stats
from .header_units import header_unit
from .init_rate import SCALE, time_unit
from .init_times import column_values, origin_of, seconds_since, text_format

__all__ = ["Inventory", "inventory_files", "inventory_timenet"]

_TIME = re.compile(r"(time|timestamp|datetime|date|epoch|^t$|^ts$)", re.I)
_ENTITY_NAMES = ("entity", "entity_id", "icao24", "mmsi", "track_id", "id", "uid", "vessel_id")
_ENTITY = re.compile(r"(^id$|_id$|^id_|id$|icao|mmsi|vessel|aircraft|player|agent|device)", re.I)
_TRACK = re.compile(r"^(track|track_name|trk)$", re.I)
_GROUP_KEYS = ("group", "match", "game", "session", "flight", "episode", "trip", "run", "period")


@dataclass(frozen=True)
class Inventory:
    """The profile of a job's inputs.

    Attributes
    ----------
    kind : {"files", "timenet"}
    inputs : tuple of str
    columns : tuple of Column
        Candidate field columns (not the time or entity column).
    steps : dict
        :func:`~kuration.onboard.guess.step_stats` of the steps between
        consecutive times of one entity, seconds.
    track_seconds : tuple of float
        Length of every track (one entity in one source), seconds.
    n_sources : int
        Sources the job will have (files, or TimeNet records or groups).
    lines : tuple of str
        Evidence for the time, entity and grouping guesses.
    """

    kind: str
    inputs: tuple[str, ...]
    columns: tuple[Column, ...]
    steps: dict[str, float]
    track_seconds: tuple[float, ...]
    n_sources: int
    lines: tuple[str, ...]
    time_column: str | None = None
    time_unit: str | None = None
    time_format: str | None = None
    entity_column: str | None = None
    duplicates: bool = False
    irregular: bool = False
    source_uri: str | None = None
    registries: tuple[str, ...] = field(default_factory=tuple)
    #: every timed row's time (seconds since ``time_origin``, a UTC midnight in seconds since
    #: the epoch: see :mod:`.init_times`) and entity code, sorted by (entity, time); files only
    times: np.ndarray | None = field(default=None, repr=False, compare=False)
    entities: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the first entity code of each input file (entity codes of one file are consecutive)
    file_starts: tuple[int, ...] = ()
    rows: int = 0
    #: rows with a null or NaN time, rows that repeat a time of their entity
    timeless: int = 0
    repeats: int = 0
    #: where the first rows without a time are ("FILE, line 12" for a CSV, "FILE, row 10" else)
    timeless_at: tuple[str, ...] = ()
    time_origin: int = 0

    @property
    def median_track_s(self) -> float:
        """The median track length, seconds."""
        return float(np.median(self.track_seconds)) if self.track_seconds else 0.0

    def job_registries(self, out: Path) -> list[str]:
        """The TimeNet registries as the job names them: a local folder relative to the job
        folder (as every path in a job is), a URL as given."""
        return [
            r if "://" in r else os.path.relpath(Path(r).resolve(), out) for r in self.registries
        ]

    def job_sources(self, out: Path) -> list[str]:
        """The job's ``sources``: file paths relative to the job folder, or the TimeNet URI."""
        if self.kind == "timenet":
            return [str(self.source_uri)]
        return [os.path.relpath(Path(p).resolve(), out) for p in self.inputs]


def _data_files(paths: Sequence[Path]) -> list[Path]:
    """``paths`` with each folder replaced by its data files (known suffixes, hidden
    files and folders left out), sorted so the job lists them in one order everywhere.

    Raises
    ------
    InitError
        A path that does not exist; a folder with no data file.
    """
    from ..sources._formats import FORMATS

    ends = tuple(e for group in FORMATS.values() for e in group)
    out: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InitError(f"{path}: does not exist", source=str(path))
        if not path.is_dir():
            out.append(path)
            continue
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and p.name.lower().endswith(ends)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not found:
            raise InitError(
                f"{path}: a folder with no CSV, Parquet, GPX, JSON-lines or WFDB (.hea) file",
                source=str(path),
            )
        out.extend(found)
    return out


def _read(path: Path, text: Sequence[str] = ()) -> pa.Table:
    """The file as a table; CSV columns ``text`` read as text (a time column that
    ``--time-format`` reads, as the run reads it)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from ..errors import SourceError
    from ..sources._formats import FORMATS, format_of, read_rows

    fmt = format_of(str(path))
    known = any(str(path).lower().endswith(e) for ends in FORMATS.values() for e in ends)
    if not known:
        raise InitError(
            f"{path}: not a CSV, Parquet, GPX, JSON-lines or WFDB (.hea) file", source=str(path)
        )
    try:
        if fmt == "parquet":
            table = pq.read_table(path)
        elif fmt == "csv":
            types = dict.fromkeys(text, pa.string())
            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types))
        else:
            table = read_rows(str(path), fmt)
    except (OSError, pa.ArrowInvalid, SourceError) as exc:
        bad_csv = fmt == "csv" and isinstance(exc, pa.ArrowInvalid)
        why = csv_parse_error(str(path)) if bad_csv else None
        raise InitError(f"{path}: cannot read it: {why or exc}", source=str(path)) from None
    if table.num_rows == 0:
        raise InitError(f"{path}: no rows (a header and nothing under it)", source=str(path))
    _check_unique_names(table.column_names, str(path))
    return table


def _check_unique_names(names: Sequence[str], where: str) -> None:
    """Raise :class:`InitError` when two columns share a name: a first data row read as a
    header repeats values (``0.0,0.0``), and a real header that repeats a name leaves a
    column no job can address."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if not twice:
        return
    if _headerless(names):
        raise _headerless_error(where, names)
    raise InitError(
        f"{where}: the header names {twice} more than once; give each column its own name "
        "and rerun kur init",
        source=where,
    )


def _check_numeric(table: pa.Table, names: Sequence[str], where: str, what: str) -> None:
    """Raise :class:`InitError` for a column of ``names`` that holds numbers except in a few
    cells (see :func:`~kuration.sources._columns.numeric_except`), naming the first cells by
    file line: read as text it would be dropped or misread for the sake of one typo."""
    from ..sources._columns import numeric_except

    for name in names:
        bad = numeric_except(table.column(name))
        if bad is None:
            continue
        col = table.column(name)
        cells = ", ".join(f"{row_place(where, int(r))}: {col[int(r)].as_py()!r}" for r in bad[:3])
        more = f" and {bad.size - 3} more" if bad.size > 3 else ""
        raise InitError(
            f"{where}: {what} {name!r} holds numbers except in {bad.size} of {len(col)} rows "
            f"({cells}{more}); fix or blank those cells (an empty cell is a missing value) "
            "and rerun kur init",
            source=where,
        )


def _headerless_error(where: str, names: Sequence[str]) -> InitError:
    return InitError(
        f"{where}: the file looks headerless (its first row, {list(names[:4])}, is mostly "
        "numbers, so it was read as column names); add a first line naming the columns (e.g. "
        "time,value) and rerun kur init",
        source=where,
    )


def _kind(t: pa.DataType) -> str:
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
        return "text"
    return "other"


def _headerless(names: Sequence[str]) -> bool:
    """Whether half or more of the column names read as numbers: a first row of data taken
    for a header (a name like ``2`` or ``0.5`` is rare; a data row with a text id still has
    numbers in most of its other cells)."""
    numeric = 0
    for n in names:
        try:
            float(n)
        except ValueError:
            continue
        numeric += 1
    return bool(names) and 2 * numeric >= len(names)


def _is_stamp(t: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(t) or pa.types.is_date(t))


def _timelike(name: str) -> bool:
    """Whether a header names a time, its unit bracket left out (``t [s]`` is ``t``)."""
    head = header_unit(name)
    return bool(_TIME.search(head.stem if head is not None and head.unit else name))


def _text_times(
    table: pa.Table, path: Path, time_column: str | None, time_format: str | None
) -> tuple[pa.Table, str | None]:
    """(``table``, its time column): the column reread as text when ``--time-format`` is
    given and Arrow parsed a CSV's text times by itself (``2014-05-07
    13:29:50.439000+0100``), so the given format, not Arrow's guess, reads them, here and
    in the run; else ``table`` and ``time_column`` as they are."""
    from ..sources._formats import format_of

    if time_format is None or format_of(str(path)) != "csv":
        return table, time_column
    names = table.column_names
    stamps = [n for n in names if _is_stamp(table.schema.field(n).type)]
    if time_column is None:
        if any(_timelike(n) and _kind(table.schema.field(n).type) == "text" for n in names):
            return table, None  # a text time column is there already: init picks it
        stamps = sorted(stamps, key=lambda n: (not _timelike(n), names.index(n)))[:1]
    pick = [n for n in stamps if time_column in (None, n)]
    return (_read(path, pick), pick[0]) if pick else (table, time_column)


def _time_column(
    table: pa.Table,
    forced: str | None,
    where: str,
    forced_unit: str | None = None,
    forced_fmt: str | None = None,
) -> tuple[str, str | None, str, str | None]:
    """(column, time_unit for numbers or None for timestamps, evidence, strptime format
    of a text column or None); a format given (``--time-format``) picks a text column."""
    names = table.column_names
    texts: list[str] = []
    if forced is not None:
        if forced not in names:
            raise InitError(f"{where}: no column {forced!r} (columns: {names})", source=where)
        cands = [forced]
    else:
        stamps = [n for n in names if _is_stamp(table.schema.field(n).type)]
        cands = stamps or [
            n
            for n in names
            if _timelike(n) and _kind(table.schema.field(n).type) in ("int", "float")
        ]
        texts = [n for n in names if _timelike(n) and _kind(table.schema.field(n).type) == "text"]
    if texts and (forced_fmt or not cands):
        cands = texts[:1]
    if not cands and _headerless(names):
        raise _headerless_error(where, names)
    if not cands:
        raise InitError(
            f"{where}: no time column (no timestamp column and no numeric column named like a "
            f"time among {names}); name it with --time",
            source=where,
        )
    name = sorted(cands, key=lambda n: (not _timelike(n), names.index(n)))[0]
    typ = table.schema.field(name).type
    if forced_fmt is not None and _is_stamp(typ):  # a CSV's text times are reread as text
        raise InitError(
            f"{where}: --time-format {forced_fmt!r} reads text times, and time column "
            f"{name!r} holds {typ}, which the run reads without a format; leave "
            "--time-format out",
            source=where,
        )
    if pa.types.is_timestamp(typ):
        return name, None, f"time column: {name} ({typ}: a timestamp column)", None
    if pa.types.is_date(typ):
        return name, None, f"time column: {name} ({typ}: dates, read as midnight UTC)", None
    if _kind(typ) == "text":
        _check_numeric(table, [name], where, "time column")
        fmt, why = text_format(table.column(name).combine_chunks(), name, where, forced_fmt)
        return name, None, why, fmt
    if forced_fmt is not None:
        raise InitError(
            f"{where}: --time-format {forced_fmt!r} reads text times, and time column "
            f"{name!r} holds {typ}, not text; leave --time-format out",
            source=where,
        )
    if _kind(typ) not in ("int", "float"):
        raise InitError(f"{where}: time column {name!r} has type {typ}", source=where)
    unit, why = time_unit(name, column_values(table.column(name)), forced_unit, where=where)
    return name, unit, f"time column: {name} ({typ}, {why})", None


def _entity_column(
    table: pa.Table, time: str, forced: str | None, where: str
) -> tuple[str | None, str]:
    names = [n for n in table.column_names if n != time]
    if forced is not None:
        if forced not in names:
            raise InitError(f"{where}: no column {forced!r} (columns: {names})", source=where)
        return forced, f"entity column: {forced} (given)"
    ok = [n for n in names if _kind(table.schema.field(n).type) in ("text", "int")]
    exact = [n for n in ok if n.lower() in _ENTITY_NAMES]
    named = sorted(exact, key=lambda n: _ENTITY_NAMES.index(n.lower())) or [
        n for n in ok if _ENTITY.search(n)
    ]
    named += [n for n in ok if _TRACK.match(n) and n not in named]
    for n in named:
        k = len(pc.unique(table.column(n)))
        # a "track" column is an id only with few values per row (ADS-B's track is a heading)
        few = k <= max(1, table.num_rows // 10) if _TRACK.match(n) else True
        if 1 <= k < table.num_rows and few:
            return n, (
                f"entity column: {n} ({k} distinct values in {where}; the name reads as an "
                "identifier)"
            )
    found = _separating_column(table, time, ok)
    if found is not None:
        n, k, dup = found
        return n, (
            f"entity column: {n} ({k} distinct values in {where}: {dup} rows repeat a time "
            f"and each repeat is another {n}, so each {n} is a track; --entity names another)"
        )
    return None, "entity column: none found (each file is one entity)"


def _separating_column(
    table: pa.Table, time: str, ok: Sequence[str]
) -> tuple[str, int, int] | None:
    """A column not named like an id that tells apart the rows sharing a time stamp.

    Several stations, sites or units logged in one table repeat every stamp once per unit;
    read as one entity, their rows would interleave (and look like coarse stamps).  A text
    column (or an integer one of at most 16 values, so no signal qualifies) is the entity
    when the table repeats at least 5% of its stamps and (time, column) leaves at most a
    twentieth of those repeats: ``(column, distinct values, repeated rows)``, or None.
    """
    rows = table.num_rows
    dup = rows - len(pc.unique(table.column(time)))
    if rows == 0 or dup < max(1, rows // 20):
        return None
    best: tuple[str, int, int] | None = None
    left_best = dup
    for n in ok:
        k = len(pc.unique(table.column(n)))
        limit = 16 if _kind(table.schema.field(n).type) == "int" else max(2, rows // 10)
        if not 2 <= k <= limit:
            continue
        left = rows - table.group_by([time, n]).aggregate([]).num_rows
        if left * 20 <= dup and left < left_best:
            best, left_best = (n, k, dup), left
    return best


def _tracks(t: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, list[float], int]:
    """(steps between consecutive times of one entity, track lengths, duplicate times)."""
    keep = ~np.isnan(t)
    t, codes = t[keep], codes[keep]
    order = np.lexsort((t, codes))
    t, codes = t[order], codes[order]
    same = codes[1:] == codes[:-1]
    steps = np.diff(t)[same]
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.r_[starts[1:], len(t)] - 1
    return steps, (t[ends] - t[starts]).tolist(), int((steps == 0).sum())


def _columns(table: pa.Table, skip: set[str], hints: Mapping[str, str], where: str) -> list[Column]:
    out = []
    for f in table.schema:
        if f.name in skip:
            continue
        meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        unit, unit_from = meta.get("unit") or meta.get("units"), "Parquet field metadata"
        if f.name in hints:
            unit, unit_from = hints[f.name], "hint file"
        if unit:
            check_unit(unit, f"{where}: column {f.name!r}")
        head = header_unit(f.name)
        stem, not_unit = "", None
        if head is not None and head.unit is not None:
            stem = head.stem
            if not unit:
                unit, unit_from = head.unit, f"the column header; pint reads {head.reading}"
            elif parse_unit(unit) != parse_unit(head.unit):
                unit_from += f", over the header's {head.text!r}"
        elif head is not None:
            not_unit = f"{head.text!r} is not a unit ({head.reading})"
        col = table.column(f.name)
        kind = _kind(f.type)
        distinct = counter = None
        if kind == "int":
            u = pc.unique(col.drop_null())
            if len(u) <= 16:
                distinct = tuple(sorted(int(v) for v in u.to_pylist()))
            if not col.null_count:
                counter = counter_step(stem or f.name, np.asarray(col.to_numpy()))
        lo = hi = None
        if kind in ("int", "float") and len(col) - col.null_count:
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
        n = max(len(col), 1)
        dtype = f.type.to_pandas_dtype().__name__ if kind in ("int", "float", "bool") else "object"
        out.append(
            Column(
                f.name,
                kind,
                dtype,
                unit or None,
                unit_from if unit else None,
                distinct,
                1 - col.null_count / n,
                None if lo is None else float(lo),
                None if hi is None else float(hi),
                counter,
                stem,
                not_unit if not unit else None,
            )
        )
    return out


def _time_hint(hints: Mapping[str, str], time: str | None) -> str | None:
    """A time unit the ``--units`` hints give the time column (``ms``, ``millisecond``...)."""
    if time is None or time not in hints:
        return None
    from ..core.units import to_unit

    for unit in ("s", "ms", "us", "ns"):
        try:
            if abs(float(to_unit(np.array([1.0]), hints[time], "s")[0]) - SCALE[unit]) < 1e-12:
                return unit
        except Exception:
            break
    raise InitError(f"units hint for the time column {time!r}: {hints[time]!r} is not s/ms/us/ns")


def inventory_files(
    paths: Sequence[Path],
    *,
    hints: Mapping[str, str],
    time_column: str | None = None,
    entity_column: str | None = None,
    time_unit: str | None = None,
    time_format: str | None = None,
) -> Inventory:
    """Profile files (columns from the first; times from all).

    Raises
    ------
    InitError
        An unreadable file, no time column, a bad unit, a file without the first's columns.
    """
    paths = _data_files(paths)
    where = str(paths[0])
    first, time_column = _text_times(_read(paths[0]), paths[0], time_column, time_format)
    forced = time_unit or _time_hint(hints, time_column)
    time, unit, t_line, fmt = _time_column(first, time_column, where, forced, time_format)
    if unit is not None and forced is None and time in hints:
        forced = _time_hint(hints, time)
        time, unit, t_line, fmt = _time_column(first, time, where, forced, time_format)
    entity, e_line = _entity_column(first, time, entity_column, where)
    hints = {k: v for k, v in hints.items() if k != time}
    hints_left = set(hints) - set(first.column_names)
    if hints_left:
        raise InitError(f"units hint names columns not in {where}: {sorted(hints_left)}")
    columns = _columns(first, {time, *([entity] if entity else [])}, hints, where)
    steps, tracks, dups, rows, timeless = [], [], 0, 0, 0
    timeless_at: list[str] = []
    all_t, all_e, n_codes, starts, origin = [], [], 0, [], 0
    text = [time] if fmt is not None else []  # as the run reads them: the format decides
    for i, path in enumerate(paths):
        table = first if i == 0 else _read(path, text)
        need = [time, *([entity] if entity else [])]
        lacking = [c for c in need if c not in table.column_names]
        if lacking:
            raise InitError(f"{path}: no column {lacking[0]!r}", source=str(path))
        fields = [c.name for c in columns if c.kind == "text" and c.name in table.column_names]
        _check_numeric(table, fields, str(path), "column")
        if i == 0:  # one origin for every file: their times stay comparable
            origin = origin_of(table.column(time), unit, fmt, str(path))
        t = seconds_since(table.column(time), unit, origin, fmt, str(path))
        if entity:
            codes = np.asarray(
                pc.dictionary_encode(pc.cast(table.column(entity), pa.string()))
                .combine_chunks()
                .indices.to_numpy(zero_copy_only=False),
                dtype=np.int64,
            )
        else:
            codes = np.zeros(len(t), dtype=np.int64)
        timeless += int(np.isnan(t).sum())
        for r in np.flatnonzero(np.isnan(t))[: max(0, 3 - len(timeless_at))]:
            timeless_at.append(f"{path}, {row_place(str(path), int(r))}")
        s, tr, d = _tracks(t, codes)
        steps.append(s)
        tracks.extend(tr)
        dups += d
        rows += table.num_rows
        ok = ~np.isnan(t)
        all_t.append(t[ok])
        all_e.append(codes[ok] + n_codes)  # entities of different files are different tracks
        starts.append(n_codes)
        n_codes += int(codes.max()) + 1 if codes.size else 0
    stats = step_stats(np.concatenate(steps), where)
    t_all, e_all = np.concatenate(all_t), np.concatenate(all_e)
    order = np.lexsort((t_all, e_all))
    lines = [f"inputs: {len(paths)} file(s), {rows} rows, {len(tracks)} tracks", t_line, e_line]
    return Inventory(
        kind="files",
        inputs=tuple(str(p) for p in paths),
        columns=tuple(columns),
        steps=stats,
        track_seconds=tuple(tracks),
        n_sources=len(paths),
        lines=tuple(lines),
        time_column=time,
        time_unit=unit,
        time_format=fmt,
        entity_column=entity,
        duplicates=bool(dups),
        irregular=stats["regular"] < 0.9,
        times=t_all[order],
        entities=e_all[order],
        file_starts=tuple(starts),
        rows=rows,
        timeless=timeless,
        repeats=dups,
        timeless_at=tuple(timeless_at),
        time_origin=origin,
    )


def _group_key(records: Sequence[Any]) -> str | None:
    for key in _GROUP_KEYS:
        vals = [r.metadata.get(key) for r in records]
        typed = all(isinstance(v, str | int) and not isinstance(v, bool) for v in vals)
        if typed and 2 <= len(set(vals)) < len(records):
            return key
    return None


def _one_kind(
    recs: list[Any], params: dict[str, str], lines: list[str], uri: str
) -> tuple[list[Any], dict[str, str]]:
    """Records that share their signals: when some have none in common with the others,
    the most common signal set is kept through a metadata filter that singles it out."""
    sets = [frozenset(r.signal_names) for r in recs]
    if frozenset.intersection(*sets):
        return recs, params
    best = Counter(sets).most_common(1)[0][0]
    keep = [r for r, x in zip(recs, sets, strict=True) if x == best]
    rest = [r for r, x in zip(recs, sets, strict=True) if x != best]
    for key in sorted({k for r in keep for k in r.metadata}):
        vals = {str(r.metadata.get(key)) for r in keep}
        if len(vals) == 1 and key in keep[0].metadata:
            (val,) = vals
            if all(str(r.metadata.get(key)) != val for r in rest):
                lines.append(
                    f"  records have no signal in common: kept the {len(keep)} with signals "
                    f"{sorted(best)} ({key}={val}), left out {len(rest)}"
                )
                return keep, {**params, key: val}
    raise InitError(
        f"the records share no signal and no metadata key singles out one kind; choose records "
        f"with ?key=value filters (signal sets: {sorted(sorted(x) for x in set(sets))})",
        source=uri,
    )


def _signal_columns(
    reader: Any, recs: Sequence[Any], hints: Mapping[str, str], lines: list[str], uri: str
) -> list[Column]:
    """Scalar signals every record has, with their catalog (or hinted) units."""
    columns = []
    sig_sets = [set(r.signal_names) for r in recs]
    common = set.intersection(*sig_sets)
    for s in reader.schema.signals:
        if tuple(s.shape) != ():
            lines.append(f"  signal {s.name}: shape {tuple(s.shape)}, not a scalar: not a field")
            continue
        if s.name not in common:
            have = sum(s.name in x for x in sig_sets)
            if have:
                lines.append(
                    f"  signal {s.name}: in {have} of {len(recs)} records only: not a field"
                )
            continue
        unit, unit_from = (s.unit or None), "TimeNet catalog"
        if s.name in hints:
            unit, unit_from = hints[s.name], "hint file"
        if unit:
            check_unit(unit, f"{reader.ref}: signal {s.name!r}")
        kind = _kind(pa.from_numpy_dtype(np.dtype(s.dtype)))
        columns.append(Column(s.name, kind, s.dtype, unit, unit_from if unit else None))
    if not columns:
        raise InitError(f"{reader.ref} has no scalar signal", source=uri)
    return columns


def _record_steps(
    reader: Any, recs: Sequence[Any], columns: Sequence[Column]
) -> tuple[list[np.ndarray], list[float], bool]:
    """(time steps per record, record lengths in seconds, whether any signal is irregular)."""
    steps, tracks, irregular = [], [], False
    for rec in recs:
        sigs = reader.signals(rec.id)
        sig = next((sigs[c.name] for c in columns if c.name in sigs), None)
        if sig is None or sig.length < 2:
            continue
        if sig.spec.rate_hz:
            steps.append(np.full(sig.length - 1, 1.0 / sig.spec.rate_hz))
        else:
            steps.append(np.diff(sig.times().astype(np.float64) / 1e9))
            irregular = True
        tracks.append(float(steps[-1].sum()))
    return steps, tracks, irregular


def inventory_timenet(
    uri: str, *, hints: Mapping[str, str], registries: Sequence[str] | None = None
) -> Inventory:
    """Profile a TimeNet version from its catalog (signals, units, rates, record lengths).

    Raises
    ------
    InitError
        The version cannot be opened, no record matches, a bad unit.
    """
    import timenet as tn

    from ..sources.timenet import _format, parse_source

    ref, params, frag = parse_source(uri)
    try:
        reader = tn.TimeNet(list(registries) if registries else None).open(ref)
    except tn.TimeNetError as exc:
        raise InitError(f"cannot open {ref}: {exc}", source=uri) from None
    filters = {k: v for k, v in params.items() if k != "group_by"}
    recs = [
        r for r in reader.records() if all(str(r.metadata.get(k)) == v for k, v in filters.items())
    ]
    if not recs:
        raise InitError(f"no record of {reader.ref} matches {filters}", source=uri)
    lines = [f"inputs: {reader.ref}, {len(recs)} records (one entity each)"]
    recs, params = _one_kind(recs, params, lines, uri)
    group = params.get("group_by") or _group_key(recs)
    if group and "group_by" not in params:
        params = {**params, "group_by": group}
        lines.append(
            f"sources: one per value of the record metadata key {group!r} (its records "
            "are the entities)"
        )
    n_sources = len({str(r.metadata.get(group)) for r in recs}) if group else len(recs)
    columns = _signal_columns(reader, recs, hints, lines, uri)
    steps, tracks, irregular = _record_steps(reader, recs, columns)
    stats = step_stats(np.concatenate(steps) if steps else np.zeros(0), uri)
    names = {c.name for c in columns}
    rates = {r for s in reader.schema.signals if s.name in names for r in s.rates_hz}
    return Inventory(
        kind="timenet",
        inputs=(uri,),
        columns=tuple(columns),
        steps=stats,
        track_seconds=tuple(tracks),
        n_sources=n_sources,
        lines=tuple(lines),
        irregular=irregular or len(rates) > 1 or stats["regular"] < 0.9,
        source_uri=_format(str(reader.ref), params, frag),
        registries=tuple(registries or ()),
    )
