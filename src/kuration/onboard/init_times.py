"""``kur init``'s times: a time column in float64 seconds since a whole UTC day, exactly.

Epoch times in integer nanoseconds (``1700000000005000000``) do not fit float64 exactly
(above 2**53 its spacing is 256 ns), and Arrow refuses the cast outright.  ``kur init``
wants steps between rows and their place on a grid, not the date, so times are
shifted first, in integers where the column holds integers: by the UTC midnight
before the first file's earliest time.  A day holds a whole number of ticks of any rate
written with at most two decimals (0.01 Hz: 864), so on such a grid the shifted times
keep the phase the run's epoch-based grid gives them; for another rate (1/60 Hz as
0.016667) ``kur init`` adds the origin back before it places rows on the grid.  Seconds
since that midnight are float64 with a spacing of at most a few nanoseconds for
recordings of weeks, so steps between rows are exact to that.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InitError, SourceError

__all__ = ["DAY_S", "TIME_FORMATS", "column_values", "origin_of", "seconds_since", "text_format"]

DAY_S = 86_400
#: integer ticks of a time unit in one second
_PER_S = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_I64 = np.iinfo(np.int64)


def column_values(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric column as float64 (NaN for nulls), for its magnitude and span only:
    an integer above 2**53 is rounded, which a unit guess does not feel.

    Returns
    -------
    ndarray, shape (N,), float64
    """
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_integer(arr.type):
        ints = np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False))
        out = ints.astype(np.float64)
        out[np.asarray(arr.is_null().to_numpy(zero_copy_only=False))] = np.nan
        return out
    return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _parsed(col: pa.ChunkedArray, fmt: str | None, where: str) -> pa.Array:
    arr = col.combine_chunks()
    if fmt is None:
        return arr
    from ..sources._timeunit import parse_text_times

    try:
        return parse_text_times(arr, fmt, "time", where)
    except SourceError as exc:
        raise InitError(str(exc), source=where) from None


def _ints(arr: pa.Array, unit: str | None) -> tuple[np.ndarray, int] | None:
    """(integer ticks with nulls as 0, ticks per second) of a timestamp or integer column;
    None for floats."""
    if unit is None:
        arr = pc.cast(pc.cast(arr, pa.timestamp("ns")), pa.int64())
        per = _PER_S["ns"]
    elif pa.types.is_integer(arr.type):
        arr = pc.cast(arr, pa.int64()) if not pa.types.is_unsigned_integer(arr.type) else arr
        per = _PER_S[unit]
    else:
        return None
    return np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)), per


def origin_of(
    col: pa.ChunkedArray, unit: str | None, fmt: str | None = None, where: str = ""
) -> int:
    """The UTC midnight at or before the column's earliest time, in whole seconds since
    the epoch (0 for a column without a time).

    Parameters
    ----------
    col : ChunkedArray
        Timestamps or dates (``unit`` None), text in ``fmt``, or numbers in ``unit``.
    unit : {"s", "ms", "us", "ns"} or None
    """
    arr = _parsed(col, fmt, where)
    valid = arr.filter(pc.is_valid(arr))
    got = _ints(valid, unit)
    if got is not None:
        ints, per = got
        return 0 if ints.size == 0 else int(ints.min()) // (per * DAY_S) * DAY_S
    v = column_values(valid) * (1.0 / _PER_S[str(unit)])
    v = v[np.isfinite(v)]
    return 0 if v.size == 0 else math.floor(float(v.min()) / DAY_S) * DAY_S


def seconds_since(
    col: pa.ChunkedArray, unit: str | None, origin_s: int, fmt: str | None = None, where: str = ""
) -> np.ndarray:
    """The column's times in seconds since ``origin_s`` (NaN for a missing time).

    Integer and timestamp columns are shifted in int64 before the float64 conversion, so
    the steps between epoch nanoseconds are exact; a float column is scaled, then shifted.

    Parameters
    ----------
    col : ChunkedArray
        As :func:`origin_of` reads it.
    unit : {"s", "ms", "us", "ns"} or None
    origin_s : int
        Whole seconds since the epoch (:func:`origin_of` of the first file).

    Returns
    -------
    ndarray, shape (N,), float64
        Seconds; NaN where the time is null or NaN.

    Raises
    ------
    InitError
        Text that ``fmt`` does not read.
    """
    arr = _parsed(col, fmt, where)
    got = _ints(arr, unit)
    if got is None:
        scale = 1.0 / _PER_S[str(unit)]
        return column_values(arr) * scale - float(origin_s)
    ints, per = got
    shift = origin_s * per
    lo, hi = (int(ints.min()), int(ints.max())) if ints.size else (0, 0)
    if hi <= _I64.max and _I64.min <= lo - shift and hi - shift <= _I64.max:
        out = (ints.astype(np.int64) - np.int64(shift)).astype(np.float64) / per
    else:  # a shift past int64 (times ~290 years from the first file's): Python ints
        out = np.array([(int(x) - shift) / per for x in ints], dtype=np.float64)
    out[np.asarray(arr.is_null().to_numpy(zero_copy_only=False))] = np.nan
    return out


#: text time formats kur init tries, in order (day-first before month-first: ISO 8601's order)
TIME_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%d/%m/%Y",
    "%d/%m/%Y %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y",
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%b %d %Y",
    "%d %b %Y",
    "%Y%m%d",
)
#: what init tells a user whose text times no common format reads
FORMAT_ADVICE = (
    "give its format with --time-format (a strptime format: '%Y-%m-%d %H:%M:%S.%f%z' reads "
    "'2014-05-07 13:29:50.439000+0100'; text around the time is written as it stands, "
    "e.g. '%Y-%m-%d %H:%M:%S.%f%z [Europe/London]')"
)


def text_format(col: pa.Array, name: str, where: str, given: str | None = None) -> tuple[str, str]:
    """(strptime format, evidence) of the text time column ``name``: ``given`` when it
    reads every value, else the first of :data:`TIME_FORMATS` that does.

    Raises
    ------
    InitError
        ``given`` misses a value (naming its line); ISO-looking text with a value that
        names no instant; text no common format reads (naming ``--time-format``).
    """
    from .._csvline import row_place
    from ..sources._timeunit import parse_text_times, text_time_error

    if given is not None:
        try:
            parse_text_times(col, given, name, where)
        except SourceError as exc:
            at = "" if exc.row is None else f" ({row_place(where, exc.row)})"
            raise InitError(
                f"{where}: --time-format {given!r} does not read time column {name!r}{at}: "
                f"{col[exc.row or 0].as_py()!r}; {FORMAT_ADVICE}",
                source=where,
            ) from None
        return given, f"time column: {name} (text read with time_format {given!r}, given)"
    for fmt in TIME_FORMATS:
        try:
            parse_text_times(col, fmt, name, where)
        except SourceError:
            continue
        return fmt, (
            f"time column: {name} (text read with time_format {fmt!r}, the first of "
            f"{len(TIME_FORMATS)} common formats that reads every value; pass --time-format "
            "if the day and month are the other way round)"
        )
    why = text_time_error(col, name, where)
    if "not a number or an ISO 8601 time" in str(why) or why.row is None:
        raise InitError(
            f"{where}: time column {name!r} is text in no common format "
            f"({row_place(where, 0)}: {col[0].as_py()!r}); {FORMAT_ADVICE}, or name another "
            "column with --time",
            source=where,
        )
    raise InitError(str(why), source=where)
